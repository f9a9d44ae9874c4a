// The lineage engine's state and the steps that change it. Private to the runtime library:
// LineageEngine.h is the interface; this is the single writer behind it.
#pragma once

#include "DedupIndex.h"
#include "DispatchPolicy.h"
#include "DomainFreeNodes.h"
#include "EngineInvariant.h"
#include "PlanLayout.h"
#include "orch/runtime/values/ComputeEval.h"

#include "orch/runtime/engine/LineageEngine.h"

#include <algorithm>
#include <deque>
#include <map>
#include <optional>
#include <unordered_map>
#include <vector>

namespace orch::runtime {

/// An expansion record's slot (reused once its root finishes).
using ExpansionId = Id<struct ExpansionTag>;

struct Grain {
  /// Unique across the run each time the grain becomes ready: queue entries that no longer
  /// match are stale and skipped.
  uint64_t ticket = 0;
  uint32_t generation = 0;
  GrainPhase phase = GrainPhase::Sealed;
};

struct Entity {
  EntityId parent;
  uint32_t ordinal = 0;
  RootId root;
  DomainId domain;
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
  /// `failed: "skip"`: the members left out so far.
  std::vector<SkippedMember> skipped;
};

/// A GroupFailure barrier on (Call, this expansion's parent).
struct Barrier {
  CallId call;
  uint32_t cause = kNoIndex;
};

struct Expansion {
  EntityId parent;
  DomainId domain;
  /// The expand node that made it.
  NodeId node;
  ItemOutcome outcome = ItemOutcome::Unresolved;
  /// The children it has when every step is made (EngineOptions::childrenPerStep), and the
  /// list they are made from, held until the last one is made.
  uint32_t total = 0;
  Value elements;
  std::vector<EntityId> children;
  std::vector<ReduceProgress> reduces;
  std::vector<Barrier> barriers;
};

struct Root {
  EntityId entity;
  uint64_t admission = 0;
  uint32_t source = 0;
  uint64_t sourceRow = 0;
  /// Items not yet terminal plus queued events: zero means everything under the root is done.
  uint64_t unresolved = 0;
  /// Sink inputs not yet terminal plus expansions that may still add sink rows: zero means
  /// the root's rows are known and it finishes early (its remaining grains are cancelled).
  uint64_t pendingSinkInputs = 0;
  std::vector<Failure> failures;
  /// An expansion that sink rows come from failed: its rows are lost, so the root failed even
  /// if no row it has failed.
  bool lostSinkRows = false;
  /// Members reduces left out (`failed: "skip"`), with their causes' indexes in `failures`, by
  /// the reduce that left them out: reported when the root finishes if that reduce was needed.
  struct SkippedBy {
    EntityId parent;
    NodeId reduce;
    std::vector<SkippedMember> members;
  };
  std::vector<SkippedBy> skippedMembers;
  bool live = false;
  /// Queued in rootsToFinish.
  bool finishing = false;
  /// Rows Dedup nodes dropped under this root.
  std::vector<DuplicateRow> duplicates;
  /// Bytes of its items' values held now (MemoryAccount::items), and the most they have been.
  uint64_t heldBytes = 0;
  uint64_t peakHeldBytes = 0;
};

/// What rows have held at their most, for admission under the byte budget: a row is admitted
/// while the rows live and it fit at what rows have held (canAdmit).
struct RowBytes {
  uint64_t finishedPeaks = 0;
  uint64_t finishedRows = 0;
  /// What a row is expected to hold at its most: the mean over finished rows; before one
  /// finished, the most a row has held yet.
  /// (`largestRow`: the most any row has held so far, finished or not: MemoryAccount::largestRow.)
  uint64_t perRow(uint64_t largestRow) const {
    return finishedRows ? finishedPeaks / finishedRows : largestRow;
  }
};

/// One Dedup node's decisions (DedupSequencer.cpp): its index of survivors and, in source
/// order, a cursor over its domain's entities: the entity it decides next is the first one in
/// (source row, ordinal path) order not yet decided, and it waits there until that entity's
/// key is known (or the entity is known not to need one).
struct DedupSequencer {
  NodeId node;
  /// The source whose rows are the roots above the domain.
  uint32_t source = 0;
  /// Domains from the root down to `domain`.
  std::vector<DomainId> path;
  /// order: "arrival": decided as keys arrive, no cursor.
  bool byArrival = false;
  SurvivorPositions survivors;
  /// Survivors whose source row failed: retracted, they match nothing (a failed row's
  /// entities take no part, whatever the timing).
  std::vector<bool> retracted;
  /// Survivors of rows not finished yet, by source row: an entity of a later row that matches
  /// one waits until its row finishes (and retracts it if it failed).
  std::unordered_map<uint64_t, std::vector<uint32_t>> unfinished;
  /// Survivors an earlier run indexed, by source row: unfinished again if the row runs again.
  std::unordered_map<uint64_t, std::vector<uint32_t>> earlierRuns;
  /// The index of its kind: exact when neither near nor hamming is set.
  ExactIndex exact;
  std::optional<NearIndex> nearIndex;
  std::optional<HammingIndex> hammingIndex;
  /// An earlier run's decisions (resume), by entity key.
  std::unordered_map<uint64_t, DedupDecision> history;
  DedupProgress progress;
  // The cursor (source order).
  struct Frame {
    EntityId entity;
    uint32_t next = 0;
  };
  uint64_t nextRow = 0;
  std::vector<Frame> frames;
  /// The live roots of `source` from `nextRow` on, in row order: (row, root, admission).
  struct AdmittedRow {
    uint64_t row;
    RootId root;
    uint64_t admission;
  };
  std::deque<AdmittedRow> admitted;
  /// Bytes of the index counted in MemoryAccount::indexes.
  uint64_t countedBytes = 0;
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

/// Bytes of the inputs that Calls giving bytes back (an OCR reading pages) may still send out
/// in batches: copies of them travel, so they count in the byte budget a second time while out.
struct RoomForCopies {
  /// Of their ready inputs, as many as their free batch slots take.
  uint64_t ofReadyInputs = 0;
  /// Of the inputs each of them still waits for, as many as the rest of its slots take (by
  /// Call; 0 for the others).
  std::vector<uint64_t> ofInputsToCome;
  /// Worked out for the state as it is now.
  bool known = false;
};

/// What the byte budget says of a Call's next batch.
struct BudgetVerdict {
  BudgetRank rank = BudgetRank::HeldBack;
  /// The growth of the bytes held to reserve for it.
  uint64_t growth = 0;
  /// The most grains it may take (fewer than a batch when only that many fit).
  size_t grains = SIZE_MAX;
  /// It goes although the budget has no room for it, so that the run goes on
  /// (MemoryAccount::batchesPastBudget).
  bool pastBudget = false;
};

struct OutstandingBatch {
  CallId call;
  BatchRecovery recovery;
  std::vector<QueuedGrain> grains;
  std::vector<uint32_t> generations;
  /// Bytes of its inputs, those of them copied while it is out (MemoryAccount::inFlight), and
  /// the growth of the bytes held reserved for it.
  uint64_t inputBytes = 0;
  uint64_t copiedBytes = 0;
  uint64_t reservedBytes = 0;
  /// Its inputs that are or may hold references (lists, records, references), held until it
  /// ends: a grain suppressed or cancelled while out lets its inputs go from their items, and
  /// a value a worker keeps must not be dropped there while a batch may still fetch it (a
  /// reference's last holder drops it; protocol.md, "drop").
  std::vector<Value> inputs;
};

struct CallQueues {
  std::unique_ptr<ReadyQueue> fresh;
  /// Calls batched by per-row values: each distinct key's slot (QueuedGrain::keySlot).
  std::unordered_map<std::string, uint32_t> keySlots;
  std::deque<PendingBatch> retry;
  std::deque<PendingBatch> deferred;
};

inline bool isFailure(ItemOutcome outcome) {
  return outcome == ItemOutcome::Failed || outcome == ItemOutcome::Suppressed;
}

/// A present `true`: what makes an if take its then-branch and a filter keep its value.
inline bool isTrue(const Item &item) {
  return item.outcome == ItemOutcome::Present && item.value.kind() == Value::Kind::Bool &&
         item.value.asBool();
}

/// What a value counts for in the byte budget (nothing for an absent value).
inline uint64_t heldBytes(const Value &value) {
  switch (value.kind()) {
  case Value::Kind::Null:
    return 0;
  case Value::Kind::Bool:
  case Value::Kind::Int:
  case Value::Kind::Float:
    return kScalarHeldBytes; // without the call
  default:
    return approximateBytes(value);
  }
}

/// What a reduce's list counts for: its members' payloads count in their own items, which
/// live as long as it does (a reader in another domain never lets them go before their row).
inline uint64_t reducedListBytes(const Value &list) {
  uint64_t bytes = heldBytes(list);
  if (list.kind() == Value::Kind::List)
    for (const Value &member : list.asList())
      if (const uint64_t payload = heldBytes(member); payload > 16)
        bytes -= std::min(bytes, payload);
  return bytes;
}

/// A slot of `pool`: a freed one when there is one, else a new one at the end.
template <typename IdT, typename T>
IdT allocateSlot(IdVector<IdT, T> &pool, std::vector<IdT> &freed) {
  if (!freed.empty()) {
    const IdT slot = freed.back();
    freed.pop_back();
    return slot;
  }
  pool.emplace_back();
  return IdT(static_cast<uint32_t>(pool.size() - 1));
}

/// Makes room for `needed` elements in `pool`: exactly that when it is more than twice the
/// capacity (a big expansion at once), else by doubling as usual.
template <typename Vector> void growFor(Vector &pool, size_t needed) {
  if (needed > pool.capacity())
    pool.reserve(std::max(needed, 2 * pool.capacity()));
}

/// Fixed-size blocks of T, one size per domain, recycled when roots finish.
template <typename T> class BlockPool {
public:
  explicit BlockPool(size_t domains) : free_(domains) {}
  uint32_t allocate(DomainId domain, uint32_t size) {
    if (size == 0)
      return 0;
    if (!free_[domain].empty()) {
      uint32_t start = free_[domain].back();
      free_[domain].pop_back();
      return start;
    }
    uint32_t start = static_cast<uint32_t>(slots_.size());
    slots_.resize(slots_.size() + size);
    return start;
  }
  /// Room for `blocks` more blocks of `size` without a reallocation on the way: one expansion
  /// into a million children grows the pool once, to what it needs, not by doublings that
  /// leave it up to twice as large (and hold the old and new copies at once).
  void reserveFor(DomainId domain, size_t blocks, uint32_t size) {
    const size_t fresh = blocks > free_[domain].size() ? blocks - free_[domain].size() : 0;
    growFor(slots_, slots_.size() + fresh * size);
  }
  void release(DomainId domain, uint32_t start, uint32_t size) {
    if (size != 0)
      free_[domain].push_back(start);
  }
  T &operator[](size_t index) { return slots_[index]; }
  const T &operator[](size_t index) const { return slots_[index]; }
  size_t size() const { return slots_.size(); }
  size_t freeSlots(const IdVector<DomainId, uint32_t> &blockSizes) const {
    size_t total = 0;
    for (DomainId d : free_.ids())
      total += free_[d].size() * blockSizes[d];
    return total;
  }

private:
  std::vector<T> slots_;
  IdVector<DomainId, std::vector<uint32_t>> free_;
};

struct LineageEngine::State {
  State(const plan::Plan &plan, EngineOptions options);

  const plan::Plan &plan;
  EngineOptions options;
  PlanLayout layout;
  IdVector<DomainId, uint32_t> itemsPerDomain, grainsPerDomain, childrenPerDomain;

  /// Items of domain-free nodes, evaluated once.
  IdVector<NodeId, Item> domainFree;
  IdVector<EntityId, Entity> entities;
  std::vector<EntityId> freeEntities;
  BlockPool<Item> items;
  BlockPool<Grain> grains;
  /// Per entity and child domain: the expansion, or none before it exists.
  BlockPool<ExpansionId> expansionRefs;
  IdVector<ExpansionId, Expansion> expansions;
  std::vector<ExpansionId> freeExpansions;
  /// Expansions with children still to make, oldest first; an entry whose parent went (its
  /// root finished early) is stale.
  struct UnmadeChildren {
    ExpansionId expansion;
    EntityId parent;
    uint64_t parentKey = 0;
  };
  std::deque<UnmadeChildren> unmade;
  IdVector<RootId, Root> roots;
  std::vector<RootId> freeRoots;
  size_t liveRootCount = 0;

  /// The dispatch policy the options chose (DispatchPolicy.h), and each Call's queues.
  std::unique_ptr<DispatchPolicy> policy;
  IdVector<CallId, CallQueues> queues;
  IdVector<CallId, CallLoad> loads;
  std::unordered_map<uint64_t, OutstandingBatch> outstanding;
  uint64_t nextBatchId = 1;
  uint64_t nextTicket = 1;
  uint64_t nextAdmission = 0;
  std::vector<uint64_t> nextSourceRow;
  bool admissionClosed = false;
  std::optional<std::string> abortReason;

  /// Resolved: the item became terminal (its consumers are visited). Needed and NotNeeded:
  /// its demand was decided (EngineDemand.cpp).
  enum class EventKind : uint8_t { Resolved, Needed, NotNeeded };
  struct Event {
    EntityId entity;
    NodeId node;
    EventKind kind = EventKind::Resolved;
  };
  std::vector<Event> work;
  std::vector<RootId> rootsToFinish;
  std::vector<RootResult> finished;

  /// GlobalBarrier gather: unsealed grains per domain, and reduces held back per child domain.
  struct ParkedReduce {
    EntityId parent;
    /// The parent's lineage key: a root that finished early leaves its parked reduces stale.
    uint64_t key;
    NodeId node;
    ItemOutcome outcome;
    Value value;
    uint32_t cause;
  };
  IdVector<DomainId, uint64_t> unsealedGrains;
  /// Per domain: parent entities that have not expanded into it yet (more members may come).
  IdVector<DomainId, uint64_t> unexpanded;
  IdVector<DomainId, std::vector<ParkedReduce>> parked;

  EngineStats stats;
  MemoryAccount memory;
  RowBytes rowBytes;
  /// The live roots, oldest admission first.
  std::map<uint64_t, RootId> liveByAdmission;
  /// Bytes the grains' consumed inputs gave back, all told (CallLoad::releasedBytes).
  uint64_t bytesReleasedByGrains = 0;
  std::vector<DedupSequencer> sequencers;
  /// Per node: its sequencer's index, or kNoIndex.
  IdVector<NodeId, uint32_t> sequencerOf;
  /// Per Call: why its first split batch failed whole ("" if none was split).
  std::vector<std::string> firstSplitCause;
  /// Per filter node, in plan order, what it decided; per node, its index there or kNoIndex.
  std::vector<FilterProgress> filters;
  IdVector<NodeId, uint32_t> filterOf;

  // Plan and layout tables by typed id.
  const plan::PlanNode &planNode(NodeId node) const { return plan.nodes[node.index]; }
  const plan::PlanCall &planCall(CallId call) const { return plan.calls[call.index]; }
  const NodeLayout &nodeLayout(NodeId node) const { return layout.nodes[node]; }
  const DomainLayout &domainLayout(DomainId domain) const { return layout.domains[domain]; }
  /// The domain a plan node's items live in (none for a domain-free node).
  DomainId domainOf(NodeId node) const { return DomainId(planNode(node).domain); }

  // Entities and items (LineageEngine.cpp). Arguments come in one order: the entity, then the
  // plan node (or Call, or domain) it is looked at through.
  EntityId createEntity(DomainId domain, EntityId parent, uint32_t ordinal, RootId root,
                        uint64_t key);
  Item &itemOf(EntityId entity, NodeId node);
  /// The item `node` has for `entity`: its own, an ancestor's (a node of an ancestor domain) or
  /// the run's (a domain-free node).
  const Item &inputItem(EntityId entity, NodeId node) const;
  Grain &grainOf(EntityId entity, NodeId node);
  ExpansionId expansionOf(EntityId entity, DomainId childDomain) const;
  std::vector<uint32_t> pathOf(EntityId entity) const;
  /// Records a failure under `entity`'s root (no Call: `call` is none); returns its index there.
  uint32_t recordFailure(EntityId entity, FailureKind kind, CallId call, std::string message);
  void setItem(EntityId entity, NodeId node, ItemOutcome outcome, Value value, uint32_t cause);
  /// The position of the input whose value `node`'s item is, as it is (the first in input
  /// order); kNoIndex if none.
  uint32_t sharedInputPosition(EntityId entity, NodeId node) const;
  /// One reader of `input` (NodeLayout::readers) has finished with its value: the last one
  /// drops it, once its consumers have been visited.
  void readerDone(EntityId entity, NodeId input);
  /// Drops `node`'s value, and then the values it passed on when it was their last reader.
  void dropValue(EntityId entity, NodeId node);
  /// Whether `node`'s item passes `input`'s value on as it is (Item::countedByInput): `input`
  /// counts it and stays while it does.
  bool keepsInput(EntityId entity, NodeId node, NodeId input) const;
  /// A record's field `input` has a payload (more than a scalar): the record passes it on.
  bool recordKeeps(EntityId entity, NodeId input) const;
  /// `visit(input)` once for each distinct input of `node`, in input order.
  template <typename Visit> void forEachDistinctInput(NodeId node, Visit &&visit);
  /// Drops the list `expandNode` expanded for `entity` when nothing else reads it
  /// (NodeLayout::listReleasedWhenMade).
  void releaseExpandedList(EntityId entity, NodeId expandNode);
  void holdBytes(RootId root, uint64_t bytes);
  void releaseBytes(RootId root, uint64_t bytes);
  /// releaseBytes for an item of `node`, out of MemoryAccount::computed when it counted there.
  void releaseItemBytes(RootId root, NodeId node, uint64_t bytes);
  /// What `node`'s item counts for in the byte budget: nothing when its input's item counts
  /// its value (Item::countedByInput); a reduce's list without its members' payloads.
  uint64_t countedBytes(NodeId node, const Item &item) const;
  /// `node`'s value of `bytes` went: out of MemoryAccount::kept when it counted there.
  void forgetKept(NodeId node, uint64_t bytes);
  void setPhase(Grain &grain, NodeId node, GrainPhase to);

  // Demand (EngineDemand.cpp): which items some consumer needs (semantics.md).
  /// Seals the never-needed nodes of a new entity, starts its always-needed choices and
  /// recalls its always-needed kept grains.
  void startDemand(EntityId entity);
  /// A needed recallable grain (NodeLayout::recallable): sealed with the value an earlier run
  /// kept for it, its operands then not needed for it; or, with no value kept, its operands
  /// needed.
  void recallOrNeedOperands(EntityId entity, NodeId node);
  /// `consumer` says whether it reads `input` (of the same entity) for `entity`; each consumer
  /// says so once per distinct operand.
  void settleDemand(EntityId entity, NodeId input, bool needed);
  /// `node` settles its operand at `position` (once per distinct operand: a repeat of one it
  /// settled before is skipped).
  void settleOperand(EntityId entity, NodeId node, size_t position, bool needed);
  /// Settles all of `node`'s operands, with `needed`.
  void settleAllOperands(EntityId entity, NodeId node, bool needed);
  void becomeNeeded(EntityId entity, NodeId node);
  void becomeNotNeeded(EntityId entity, NodeId node);
  /// A needed choice node decides which operands it reads as far as its resolved operands let
  /// it; idempotent (Item::choiceStep).
  void advanceChoice(EntityId entity, NodeId node);

  // Propagation (LineageEngine.cpp).
  void propagate();
  void processEvent(const Event &event);
  void evaluate(EntityId entity, NodeId node);
  void evaluateFilter(EntityId entity, NodeId node);
  /// If and coalesce: they wait only for the operands they need.
  void evaluateChoice(EntityId entity, NodeId node);
  void evaluateInvoke(EntityId entity, NodeId node);
  /// Seals a waiting grain without running it: an input was dropped, failed or suppressed.
  void skipGrain(Grain &grain, EntityId entity, NodeId node, ItemOutcome outcome, uint32_t cause);
  /// Seals a ready (or re-queued) grain that a GroupFailure barrier stops.
  void sealByBarrier(Grain &grain, EntityId entity, NodeId node, uint32_t cause);
  /// A sealed grain's output suppressed by a barrier (also for an in-flight grain's report).
  void suppressByBarrier(EntityId entity, NodeId node, uint32_t cause);
  void makeReady(EntityId entity, NodeId node);
  void materialise(EntityId parent, NodeId expandNode);
  /// Makes up to `budget` more children of `expansion`; after the last, the expansion is done.
  void makeChildren(ExpansionId expansion, uint32_t budget);
  void expansionMade(ExpansionId expansion);
  /// Room for `count` more entities of `domain` (their items, grains and expansion slots).
  void reserveEntities(DomainId domain, uint32_t count);
  /// One step of the oldest expansion with children still to make, and what follows from it;
  /// false when there is none.
  bool makeUnmadeChildren();
  /// A grain waits in some Call's queue (stale entries passed are dropped).
  bool hasQueuedGrains();
  /// An expansion has children to make, and fewer than a step's worth of grains are ready
  /// over all Calls: the next step is made when nothing can go (EngineCommit.cpp).
  bool childrenWanted() const;
  uint32_t childrenPerStep() const { return std::max<uint32_t>(1, options.childrenPerStep); }
  void gather(EntityId child, NodeId reduceNode);
  void resolveReduce(ExpansionId expansion, NodeId reduceNode, ItemOutcome outcome, Value value,
                     uint32_t cause);
  void broadcastDown(EntityId ancestor, NodeId broadcastNode);
  const Barrier *barrierFor(EntityId entity, CallId call) const;
  bool releaseParkedReduces();
  void sinkInputResolved(RootId root);
  void queueRootFinish(RootId root);
  void finishRoot(RootId root);
  /// Releases a finished root's entities and hands `result` over.
  void retireRoot(RootId root, RootResult result);
  /// The entities of domain `path[path.size() - 1]` under `entity` (of domain `path[from - 1]`),
  /// in ordinal order, walking the expansions along `path` from level `from`.
  std::vector<EntityId> descendantsAlong(EntityId entity, const std::vector<DomainId> &path,
                                         size_t from) const;
  void collectRows(const Root &root, RootResult &result) const;
  void releaseEntityTree(EntityId entity);
  void abortRun(const std::string &reason);
  /// Fails every unfinished root with one cause and forgets their work.
  void failLiveRoots(FailureKind kind, const std::string &reason);

  /// A Call's fresh queue: the policy's, or one per key for a Call batched by per-row values.
  std::unique_ptr<ReadyQueue> makeFreshQueue(CallId call) const;
  /// The key slot of a grain of a Call batched by per-row values (batchKeyLabels not empty;
  /// other Calls' grains have slot 0).
  uint32_t keySlotOf(EntityId entity, NodeId node);

  // Deduplication (DedupSequencer.cpp).
  void setUpSequencers();
  /// A root of `source` was admitted.
  void sequencerAdmitted(uint32_t source, RootId root);
  /// Decides what the sequencers can decide now; true if that queued work.
  bool advanceSequencers();
  void advanceSequencer(DedupSequencer &sequencer);
  /// The cursor's entity: decides it if its key is known. False while it must wait.
  bool decideAtCursor(DedupSequencer &sequencer, EntityId entity);
  /// Decides `entity` (its inputs are present): survivor or duplicate. False when it must wait:
  /// the survivor it matches is in an earlier row that has not finished.
  bool decide(DedupSequencer &sequencer, EntityId entity);
  /// The survivor an entity at (`row`, `path`) duplicates among `candidates` (survivor numbers):
  /// the earliest in source order that comes before it and is not retracted. `waits` is set
  /// when that survivor's row has not finished (and is not `row`).
  std::optional<uint32_t> earliestSurvivor(const DedupSequencer &sequencer,
                                           const std::vector<uint32_t> &candidates, uint64_t row,
                                           const std::vector<uint32_t> &path, bool &waits) const;
  uint32_t indexSurvivor(DedupSequencer &sequencer, const DedupDecision &decision);
  /// A root of `source` finished: its survivors are final, or retracted if it failed.
  void sequencerRootFinished(uint32_t source, uint64_t sourceRow, bool failed);

  // Dispatch and commit (EngineCommit.cpp).
  /// The queued grain is still the same grain (same ready ticket) and in `phase`.
  bool queuedGrainIs(const QueuedGrain &queued, GrainPhase phase) const;
  bool isLive(const QueuedGrain &queued) const;
  /// The grain is still the one dispatched: its root did not finish early since.
  bool isStillInFlight(const QueuedGrain &queued) const;
  std::optional<Batch> reserve(const ExecutorRoom &room);
  /// How many grains `call`'s next batch from `lane` would hold, at most.
  size_t pendingGrains(const CallQueues &queue, Lane lane, CallId call) const;
  /// Whether the byte budget lets `call` dispatch a batch of up to `grains` grains now, how
  /// urgently, the growth to reserve for it, and how many grains may go. `copied`: its inputs
  /// are copied while out; `room`: keepRoomForCopies of `executor`, worked out when needed.
  BudgetVerdict budgetVerdict(CallId call, size_t grains, bool copied, const ExecutorRoom &executor,
                              RoomForCopies &room, uint64_t admission) const;
  /// Whether the first batch of `call`, not measured yet, is one grain: the budget has room
  /// for `withRoom` of its grains, fewer than it has, and the executor slots to spare.
  bool measuresFirst(CallId call, uint64_t withRoom, const ExecutorRoom &executor) const;
  /// Under pressure (a quarter of the budget committed), what the rows admitted before
  /// `admission` are expected to add before they finish (RowBytes::perRow): a younger row's
  /// Call that adds bytes leaves room for it, so that the oldest rows finish first.
  uint64_t roomForOlderRows(uint64_t admission, uint64_t committed) const;
  /// The room Calls that add bytes leave for the copies of the inputs that the Calls giving
  /// bytes back may send out next (as many as the executor's free batch slots of each take).
  /// Worked out once per reservation (`kept.known`).
  const RoomForCopies &keepRoomForCopies(const ExecutorRoom &room, RoomForCopies &kept) const;
  /// The bytes a grain of a measured `call` adds to those held once committed (its output
  /// less the inputs it lets go of); at most 0 for a Call that gives bytes back.
  double growthPerGrain(CallId call) const;
  /// A measured Call that adds little or nothing to what it reads (BudgetVerdict: it uses the
  /// room the others leave it).
  bool consumes(CallId call) const;
  /// A committed or lost batch no longer needs its reserved growth.
  void unreserve(const OutstandingBatch &batch);
  /// `copied`: its inputs are copied while it is out (ExecutorRoom::copiesInputs).
  Batch dispatch(CallId call, std::vector<QueuedGrain> grains, BatchRecovery recovery,
                 bool copied = true);
  CommitResult commit(const BatchReport &report);
  CommitResult handleBatchError(OutstandingBatch batch, const std::string &message);
  void requeue(CallId call, std::vector<QueuedGrain> grains, bool deferred, BatchRecovery recovery);
  void failGrains(const OutstandingBatch &batch, FailureKind kind, const std::string &message);
  void installBarrier(EntityId entity, CallId call, uint32_t cause);
  bool failBatch(uint64_t batchId, const std::string &reason, BatchLoss loss);
  /// The Call's recovery for a batch that failed as a whole (an exception, a crash, a timeout):
  /// its retries, then (isolate) one deferred retry, then bisection down to the single grains
  /// that still fail, which fail with `kind`. `what` names the batch for an abort.
  void narrowDown(OutstandingBatch batch, const std::string &message, FailureKind kind,
                  const std::string &what);
  /// Requeues the batch's halves as splitting batches, behind fresh work.
  /// Splits a batch that failed whole with `cause` (the first cause per Call is kept).
  void bisect(OutstandingBatch batch, BatchRecovery next, const std::string &cause);
};

// Once or twice for every item set: here, where the compiler inlines them.
inline void LineageEngine::State::holdBytes(RootId root, uint64_t bytes) {
  memory.items += bytes;
  memory.notePeak();
  Root &owner = roots[root];
  owner.heldBytes += bytes;
  if (owner.heldBytes > owner.peakHeldBytes) {
    owner.peakHeldBytes = owner.heldBytes;
    memory.largestRow = std::max(memory.largestRow, owner.peakHeldBytes);
  }
}

/// Values the engine makes itself (MemoryAccount::computed): the budget does not hold them back.
inline bool madeByExpression(plan::NodeKind kind) {
  return kind == plan::NodeKind::Compute || kind == plan::NodeKind::Record;
}

inline void LineageEngine::State::releaseItemBytes(RootId root, NodeId node, uint64_t bytes) {
  releaseBytes(root, bytes);
  if (madeByExpression(planNode(node).kind)) {
    if (bytes > memory.computed)
      engineInvariantFailed("more computed bytes released than held");
    memory.computed -= bytes;
  }
}

inline void LineageEngine::State::releaseBytes(RootId root, uint64_t bytes) {
  Root &owner = roots[root];
  if (bytes > memory.items || bytes > owner.heldBytes)
    engineInvariantFailed("more bytes released than held");
  memory.items -= bytes;
  owner.heldBytes -= bytes;
}

} // namespace orch::runtime
