// The values a worker keeps for the run (docs/runtime.md, "Value locality"): results its
// replicas made that other Calls will read, held here until the coordinator drops them. Shared
// by the replica threads (which add and read) and the peer server (which serves them).
#pragma once

#include "orch/runtime/cluster/Protocol.h"
#include "orch/runtime/values/Value.h"

#include <cstdint>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

namespace orch::runtime {

class KeptValues {
public:
  /// Ids start at a random number: a worker that joins again under the same name must not
  /// reuse the ids of the values its previous session kept (the coordinator may still hold
  /// references to them, to be computed again).
  KeptValues();
  /// Keeps `value`; its id in this store.
  uint64_t keep(Value value);
  /// The value kept under `id`, or nullopt (dropped, or never kept here).
  std::optional<Value> find(uint64_t id) const;
  /// The values of those of `ids` still kept, and their ids, in the order asked: the answer to
  /// a `fetch` (from another worker, or the coordinator relaying).
  BlobsMessage findAll(const std::vector<uint64_t> &ids) const;
  /// Frees these values; their bytes.
  uint64_t drop(const std::vector<uint64_t> &ids);
  /// Values and their bytes (approximateBytes) kept now.
  size_t count() const;
  uint64_t bytes() const;

private:
  mutable std::mutex mutex_;
  std::unordered_map<uint64_t, Value> values_;
  uint64_t nextId_;
  uint64_t bytes_ = 0;
};

} // namespace orch::runtime
