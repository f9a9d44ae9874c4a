// The coordinator's account of the values workers keep for it (docs/runtime.md, "Value
// locality"): which worker keeps each referenced value, how to compute it again if that worker
// is lost (the producing Call, grain and inputs: its lineage), what stands for it once it was
// computed again, and which references the engine let go of (so that their owners free them).
// Single-threaded like the coordinator, except the references' deleters, which may run anywhere.
#pragma once

#include "orch/runtime/engine/EngineTypes.h"

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace orch::runtime {

class KeptValueLedger {
public:
  /// A kept value: its owner's name and its id there.
  using Key = std::pair<std::string, uint64_t>;

  struct Record {
    /// The coordinator's index of the worker that keeps it.
    uint32_t worker = kNoIndex;
    /// Its recipe: the Call, the grain and the grain's inputs (empty when unknown).
    uint32_t call = kNoIndex;
    BatchGrain grain;
    std::vector<Value> inputs;
    enum class State { Held, Recomputing, Replaced, Failed } state = State::Held;
    /// Replaced: what stands for it now (inline, or kept by another worker).
    Value replacement;
    uint32_t attempts = 0;
    /// Failed: why it could not be computed again.
    std::string failure;
  };

  /// What a batch of `call` was sent with: the recipe of the values its grains answer with.
  struct Recipe {
    uint32_t call = kNoIndex;
    const std::vector<BatchGrain> &grains;
    const std::vector<Value> &inputs;
  };

  KeptValueLedger() = default;
  KeptValueLedger(const KeptValueLedger &) = delete;
  KeptValueLedger &operator=(const KeptValueLedger &) = delete;

  /// Takes over the references in worker `w`'s (named `owner`) report: each becomes a reference
  /// whose last copy tells the ledger it is gone, recorded with its recipe when there is one.
  /// A reference to another worker's value is refused (the report becomes a batch error).
  void track(uint32_t w, const std::string &owner, BatchReport &report,
             std::optional<Recipe> recipe);

  /// Follows `input`'s replacements to what stands for it now, rewriting it; the record of the
  /// reference it ends at (Held, Recomputing or Failed), or nullptr when it is no reference or
  /// an unknown one.
  const Record *resolve(Value &input) const;

  /// Worker `w` is lost: its values that are still referenced are to be computed again (they
  /// are Recomputing from now on); their keys.
  std::vector<Key> lose(uint32_t w);

  /// A batch that computes `key` again from its recipe (nullopt: nobody needs it any more).
  std::optional<Batch> recomputation(const Key &key, uint64_t batchId);

  /// The recomputation of `key` answered `report`. True when it must be tried again (it failed
  /// fewer than kRecomputeAttempts times); false when the value stands replaced or failed.
  bool recomputed(const Key &key, BatchReport &report);
  /// The recomputation of `key` could not run (`why`); as recomputed().
  bool recomputeFailed(const Key &key, const std::string &why);

  /// The keys of the references the engine let go of since the last call (their records are
  /// forgotten, which may let go of more: those come too).
  std::vector<Key> takeDropped();

  static constexpr uint32_t kRecomputeAttempts = 5;

  uint64_t valuesKept() const { return valuesKept_; }
  uint64_t bytesKept() const { return bytesKept_; }
  uint64_t valuesRecomputed() const { return valuesRecomputed_; }

private:
  /// Collected by the references' deleters, which may outlive the ledger.
  struct Dropped {
    std::mutex mutex;
    std::vector<Key> keys;
  };

  std::map<Key, Record> records_;
  std::shared_ptr<Dropped> dropped_ = std::make_shared<Dropped>();
  uint64_t valuesKept_ = 0, bytesKept_ = 0, valuesRecomputed_ = 0;
};

} // namespace orch::runtime
