// The lineage engine's state and the steps that change it. Private to the runtime library:
// LineageEngine.h is the interface; this is the single writer behind it.
#pragma once

#include "PlanLayout.h"
#include "ReadyQueue.h"

#include "orch/runtime/LineageEngine.h"

#include <deque>
#include <optional>
#include <unordered_map>
#include <vector>

namespace orch::runtime {

/// A bug in the engine (an illegal transition or a broken invariant). Thrown, never caught by
/// the engine: like an assertion, but also in release builds.
[[noreturn]] void engineInvariantFailed(const std::string &what);

struct Item {
  Value value;
  /// Failed and Suppressed items: index of the cause in their root's failures.
  uint32_t cause = kNoIndex;
  ItemOutcome outcome = ItemOutcome::Unresolved;
};

struct Grain {
  /// Unique across the run each time the grain becomes ready: queue entries that no longer
  /// match are stale and skipped.
  uint64_t ticket = 0;
  uint32_t generation = 0;
  GrainPhase phase = GrainPhase::Sealed;
};

struct Entity {
  uint32_t parent = kNoIndex;
  uint32_t ordinal = 0;
  uint32_t root = kNoIndex;
  uint32_t domain = kNoIndex;
  /// First of this entity's items, grains and child-expansion references in their pools.
  uint32_t items = 0;
  uint32_t grains = 0;
  uint32_t expansions = 0;
  bool live = false;
  uint64_t key = 0;
};

/// One reduce's incremental progress over one expansion: O(children) in total.
struct ReduceProgress {
  uint32_t pending = 0;
  /// Children [0, cursor) are terminal and their values gathered. A failed member suppresses
  /// the reduce when the cursor reaches it, so the cause is always the lowest failed ordinal.
  uint32_t cursor = 0;
  bool resolved = false;
  ValueList gathered;
};

/// A GroupFailure barrier on (Call, this expansion's parent).
struct Barrier {
  uint32_t call = kNoIndex;
  uint32_t cause = kNoIndex;
};

struct Expansion {
  uint32_t parent = kNoIndex;
  uint32_t domain = kNoIndex;
  ItemOutcome outcome = ItemOutcome::Unresolved;
  std::vector<uint32_t> children;
  std::vector<ReduceProgress> reduces;
  std::vector<Barrier> barriers;
};

struct Root {
  uint32_t entity = kNoIndex;
  uint64_t admission = 0;
  uint32_t source = 0;
  uint64_t sourceRow = 0;
  /// Items not yet terminal plus queued events: zero means everything under the root is done.
  uint64_t unresolved = 0;
  /// Sink inputs not yet terminal plus expansions that may still add sink rows: zero means
  /// the root's rows are known and it finishes early (its remaining grains are cancelled).
  uint64_t pendingSinkInputs = 0;
  std::vector<Failure> failures;
  bool live = false;
  /// Queued in rootsToFinish.
  bool finishing = false;
};

/// Where a batch stands in its Call's recovery (semantics.md, failures): operator-error
/// attempts so far, infrastructure re-runs so far, whether the isolate policy's deferred retry
/// was spent, and whether it is a half of a bisected batch (run once, split again on error).
struct BatchRecovery {
  uint32_t attempt = 0;
  uint32_t infrastructureAttempts = 0;
  bool deferredRetried = false;
  bool splitting = false;
};

/// A batch that is waiting to be re-run (retry lane) or bisected (deferred lane).
struct PendingBatch {
  std::vector<QueuedGrain> grains;
  uint64_t admission = 0;
  BatchRecovery recovery;
};

struct OutstandingBatch {
  uint32_t call = kNoIndex;
  BatchRecovery recovery;
  std::vector<QueuedGrain> grains;
  std::vector<uint32_t> generations;
};

/// A Call's dispatch lanes, in priority order (None: nothing to dispatch).
enum class Lane : uint8_t { Retry, Fresh, Deferred, None };

struct CallQueues {
  ReadyQueue fresh;
  std::deque<PendingBatch> retry;
  std::deque<PendingBatch> deferred;
};

/// A slot of `pool`: a freed one when there is one, else a new one at the end.
template <typename T> uint32_t allocateSlot(std::vector<T> &pool, std::vector<uint32_t> &freed) {
  if (!freed.empty()) {
    const uint32_t slot = freed.back();
    freed.pop_back();
    return slot;
  }
  pool.emplace_back();
  return static_cast<uint32_t>(pool.size() - 1);
}

/// Fixed-size blocks of T, one size per domain, recycled when roots finish.
template <typename T> class BlockPool {
public:
  explicit BlockPool(size_t sizeClasses) : free_(sizeClasses) {}
  uint32_t allocate(uint32_t sizeClass, uint32_t size) {
    if (size == 0)
      return 0;
    if (!free_[sizeClass].empty()) {
      uint32_t start = free_[sizeClass].back();
      free_[sizeClass].pop_back();
      return start;
    }
    uint32_t start = static_cast<uint32_t>(slots_.size());
    slots_.resize(slots_.size() + size);
    return start;
  }
  void release(uint32_t sizeClass, uint32_t start, uint32_t size) {
    if (size != 0)
      free_[sizeClass].push_back(start);
  }
  T &operator[](size_t index) { return slots_[index]; }
  const T &operator[](size_t index) const { return slots_[index]; }
  size_t size() const { return slots_.size(); }
  size_t freeSlots(const std::vector<uint32_t> &blockSizes) const {
    size_t total = 0;
    for (size_t c = 0; c < free_.size(); ++c)
      total += free_[c].size() * blockSizes[c];
    return total;
  }

private:
  std::vector<T> slots_;
  std::vector<std::vector<uint32_t>> free_;
};

struct LineageEngine::State {
  State(const plan::Plan &plan, EngineOptions options);

  const plan::Plan &plan;
  EngineOptions options;
  PlanLayout layout;
  std::vector<uint32_t> itemsPerDomain, grainsPerDomain, childrenPerDomain;

  /// Items of domain-free nodes, evaluated once.
  std::vector<Item> domainFree;
  std::vector<Entity> entities;
  std::vector<uint32_t> freeEntities;
  BlockPool<Item> items;
  BlockPool<Grain> grains;
  /// Per entity and child domain: the expansion index, or kNoIndex before it exists.
  BlockPool<uint32_t> expansionRefs;
  std::vector<Expansion> expansions;
  std::vector<uint32_t> freeExpansions;
  std::vector<Root> roots;
  std::vector<uint32_t> freeRoots;
  size_t liveRootCount = 0;

  std::vector<CallQueues> queues;
  std::vector<CallLoad> loads;
  std::unordered_map<uint64_t, OutstandingBatch> outstanding;
  uint64_t nextBatchId = 1;
  uint64_t nextTicket = 1;
  uint64_t nextAdmission = 0;
  std::vector<uint64_t> nextSourceRow;
  bool admissionClosed = false;
  std::optional<std::string> abortReason;

  struct Event {
    uint32_t entity;
    uint32_t node;
  };
  std::vector<Event> work;
  std::vector<uint32_t> rootsToFinish;
  std::vector<RootResult> finished;

  /// GlobalBarrier gather: unsealed grains per domain, and reduces held back per child domain.
  struct ParkedReduce {
    uint32_t parent;
    /// The parent's lineage key: a root that finished early leaves its parked reduces stale.
    uint64_t key;
    uint32_t node;
    ItemOutcome outcome;
    Value value;
    uint32_t cause;
  };
  std::vector<uint64_t> unsealedGrains;
  /// Per domain: parent entities that have not expanded into it yet (more members may come).
  std::vector<uint64_t> unexpanded;
  std::vector<std::vector<ParkedReduce>> parked;

  EngineStats stats;

  // Entities and items (LineageEngine.cpp).
  uint32_t createEntity(uint32_t domain, uint32_t parent, uint32_t ordinal, uint32_t root,
                        uint64_t key);
  Item &itemOf(uint32_t entity, uint32_t node);
  const Item &inputItem(uint32_t node, uint32_t entity) const;
  Grain &grainOf(uint32_t entity, uint32_t node);
  uint32_t expansionOf(uint32_t entity, uint32_t childDomain) const;
  std::vector<uint32_t> pathOf(uint32_t entity) const;
  uint32_t recordFailure(uint32_t entity, FailureKind kind, uint32_t call, std::string message);
  void setItem(uint32_t entity, uint32_t node, ItemOutcome outcome, Value value, uint32_t cause);
  void setPhase(Grain &grain, uint32_t node, GrainPhase to);

  // Propagation (LineageEngine.cpp).
  void propagate();
  void processEvent(const Event &event);
  void evaluate(uint32_t node, uint32_t entity);
  void evaluateFilter(uint32_t node, uint32_t entity);
  void evaluateInvoke(uint32_t node, uint32_t entity);
  /// Seals a waiting grain without running it: an input was dropped, failed or suppressed.
  void skipGrain(Grain &grain, uint32_t node, uint32_t entity, ItemOutcome outcome, uint32_t cause);
  /// Seals a ready (or re-queued) grain that a GroupFailure barrier stops.
  void sealByBarrier(Grain &grain, uint32_t node, uint32_t entity, uint32_t cause);
  /// A sealed grain's output suppressed by a barrier (also for an in-flight grain's report).
  void suppressByBarrier(uint32_t node, uint32_t entity, uint32_t cause);
  void makeReady(uint32_t node, uint32_t entity);
  void materialise(uint32_t expandNode, uint32_t parent);
  void gather(uint32_t reduceNode, uint32_t child);
  void resolveReduce(uint32_t expansion, uint32_t reduceNode, ItemOutcome outcome, Value value,
                     uint32_t cause);
  void broadcastDown(uint32_t broadcastNode, uint32_t ancestor);
  const Barrier *barrierFor(uint32_t call, uint32_t entity) const;
  bool releaseParkedReduces();
  void sinkInputResolved(uint32_t root);
  void queueRootFinish(uint32_t root);
  void finishRoot(uint32_t root);
  /// Releases a finished root's entities and hands `result` over.
  void retireRoot(uint32_t root, RootResult result);
  /// The entities of domain `path[path.size() - 1]` under `entity` (of domain `path[from - 1]`),
  /// in ordinal order, walking the expansions along `path` from level `from`.
  std::vector<uint32_t> descendantsAlong(uint32_t entity, const std::vector<uint32_t> &path,
                                         size_t from) const;
  void collectRows(const Root &root, RootResult &result) const;
  void releaseEntityTree(uint32_t entity);
  void abortRun(const std::string &reason);
  /// Fails every unfinished root with one cause and forgets their work.
  void failLiveRoots(FailureKind kind, const std::string &reason);

  // Dispatch and commit (EngineCommit.cpp).
  /// The queued grain is still the same grain (same ready ticket) and in `phase`.
  bool queuedGrainIs(const QueuedGrain &queued, GrainPhase phase) const;
  bool isLive(const QueuedGrain &queued) const;
  /// The grain is still the one dispatched: its root did not finish early since.
  bool isStillInFlight(const QueuedGrain &queued) const;
  std::optional<Batch> reserve(const std::function<bool(uint32_t)> &mayRun);
  Batch dispatch(uint32_t call, std::vector<QueuedGrain> grains, BatchRecovery recovery);
  CommitResult commit(const BatchReport &report);
  CommitResult handleBatchError(OutstandingBatch batch, const std::string &message);
  void requeue(uint32_t call, std::vector<QueuedGrain> grains, bool deferred,
               BatchRecovery recovery);
  void failGrains(const OutstandingBatch &batch, FailureKind kind, const std::string &message);
  void installBarrier(uint32_t call, uint32_t entity, uint32_t cause);
  bool failBatch(uint64_t batchId, const std::string &reason);
};

} // namespace orch::runtime
