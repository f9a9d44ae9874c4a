// Brings a batch's referenced inputs to the worker that runs it (docs/runtime.md, "Value
// locality"): its own kept values from its store, other workers' with a `fetch` on their peer
// sockets (one DEALER per peer, kept for the replica's next batches). Used on a replica's
// thread only.
#pragma once

#include "KeptValues.h"

#include "orch/runtime/cluster/CurveKeys.h"
#include "orch/runtime/cluster/Protocol.h"

#include <zmq.hpp>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace orch::runtime {

class PeerFetcher {
public:
  /// `self`: this worker's name (references it owns are read from `kept`); `key`: this
  /// worker's CURVE pair, when peers use CURVE; `timeout`: how long a peer may take to answer.
  PeerFetcher(zmq::context_t &context, std::string self, KeptValues &kept,
              std::optional<CurveKeyPair> key, std::chrono::milliseconds timeout);

  /// Why a batch's inputs could not be brought here: the batch cannot run here and is reported
  /// lost; `unreachable` names the owner whose peer socket did not answer ("" when a value is
  /// gone instead), so that the coordinator relays that owner's values to this worker.
  struct Missing {
    std::string message;
    std::string unreachable;
  };

  /// Replaces every reference among `batch`'s inputs by its value, or says why it could not.
  std::optional<Missing> resolve(Batch &batch, const std::vector<PeerAddress> &peers);

  /// The most bytes of values one fetch asks for (a value larger than that alone).
  static constexpr uint64_t kFetchBytes = 64 << 20;

  /// Values and bytes fetched from other workers so far.
  uint64_t valuesFetched() const { return valuesFetched_; }
  uint64_t bytesFetched() const { return bytesFetched_; }
  /// `fetch` messages sent so far.
  uint64_t requests() const { return requests_; }

private:
  /// The values of `ids` from `peer`, in that order, or why not.
  std::variant<std::vector<Value>, Missing> fetch(const PeerAddress &peer,
                                                  const std::vector<uint64_t> &ids);
  zmq::socket_t &socketFor(const PeerAddress &peer);

  zmq::context_t &context_;
  std::string self_;
  KeptValues &kept_;
  std::optional<CurveKeyPair> key_;
  std::chrono::milliseconds timeout_;
  std::map<std::string, zmq::socket_t> sockets_;
  uint64_t valuesFetched_ = 0, bytesFetched_ = 0, requests_ = 0;
};

} // namespace orch::runtime
