// The vocabulary the lineage engine shares with whoever runs its batches: grain and item states,
// batches out, reports in, finished roots with their rows and failures, policies and counters.
#pragma once

#include "orch/runtime/values/Value.h"

#include <compare>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace orch::runtime {

inline constexpr uint32_t kNoIndex = UINT32_MAX;

/// An index that knows what it indexes. Entity, node, Call, domain and root ids are all 32-bit
/// slots, but of different tables: typed, an (entity, node) swap does not compile. A
/// default-constructed id is "none" (kNoIndex).
template <typename Tag> struct Id {
  uint32_t index = kNoIndex;
  constexpr Id() = default;
  constexpr explicit Id(uint32_t value) : index(value) {}
  constexpr bool valid() const { return index != kNoIndex; }
  friend constexpr bool operator==(Id, Id) = default;
  friend constexpr auto operator<=>(Id, Id) = default;
};

/// A live entity's storage slot (reused once its root finishes).
using EntityId = Id<struct EntityTag>;
/// A plan node (plan::Plan::nodes).
using NodeId = Id<struct NodeTag>;
/// A plan Call (plan::Plan::calls).
using CallId = Id<struct CallTag>;
/// A plan domain (plan::Plan::domains).
using DomainId = Id<struct DomainTag>;
/// A live root's slot in the engine (reused once the root finishes).
using RootId = Id<struct RootTag>;

/// The single terminal outcome of an item (a value for one entity); Unresolved until then.
/// NotNeeded (semantics.md, demand): every consumer decided without the item, so nothing reads
/// it; it is terminal like the others, and never reaches a sink.
enum class ItemOutcome : uint8_t { Unresolved, Present, Dropped, Failed, Suppressed, NotNeeded };
const char *itemOutcomeName(ItemOutcome outcome);

/// A grain's life cycle (semantics.md): Waiting -> Ready -> InFlight -> Sealed, Waiting -> Sealed
/// without running, Ready -> Sealed by a barrier, InFlight -> Ready again with a new generation.
enum class GrainPhase : uint8_t { Waiting, Ready, InFlight, Sealed };
const char *grainPhaseName(GrainPhase phase);
bool isLegalGrainTransition(GrainPhase from, GrainPhase to);

/// A grain: one invoke node of the plan for one entity. Entity ids are storage slots, valid
/// while the entity's root is live; identity for users is the lineage (root, ordinals).
struct GrainRef {
  NodeId node;
  EntityId entity;
  friend bool operator==(const GrainRef &, const GrainRef &) = default;
};

/// Where a grain's entity sits: its root's admission index, its ordinal under its parent (a
/// root's ordinal is its row number in its source), its depth, and a key that identifies the
/// entity across retries and runs (a hash of the root and the ordinal path).
struct GrainLineage {
  uint64_t root = 0;
  uint32_t ordinal = 0;
  uint32_t depth = 0;
  uint64_t key = 0;
  /// The root's row in its source (`root` counts admissions), for messages about the grain.
  uint64_t sourceRow = 0;
  /// The root's source (not sent to workers: the crash quarantine's, RowInProgress.h).
  uint32_t source = 0;
};

struct BatchGrain {
  GrainRef grain;
  uint32_t generation = 0;
  GrainLineage lineage;
};

/// Up to `batch` grains of one Call, possibly from many parents, with their inputs in the order
/// of the operator's input parameters.
struct Batch {
  uint64_t id = 0;
  uint32_t call = kNoIndex;
  /// 0 for a first run; counts operator-error retries of this batch.
  uint32_t attempt = 0;
  std::vector<BatchGrain> grains;
  uint32_t inputsPerGrain = 0;
  std::vector<Value> inputs;
  /// How long it may run once started (0: no limit): its Call's `timeout`, or the hang guard's
  /// limit for it (set by the run loop at dispatch). A declared operator's replica stops its
  /// process at this limit itself.
  int64_t timeoutNanoseconds = 0;
  /// Lost with its worker before: it runs on a worker with no other batch in flight, so that a
  /// batch whose operator takes its process down is told apart from the batches that went
  /// down with it (a loss when alone is its own: a crash, narrowed down; docs/runtime.md).
  bool alone = false;

  std::span<const Value> inputsOf(size_t grainIndex) const {
    return {inputs.data() + grainIndex * inputsPerGrain, inputsPerGrain};
  }
};

/// What an operator said about one row.
enum class RowResultKind : uint8_t { Value, RecordFailure, GroupFailure };

struct GrainReport {
  GrainRef grain;
  uint32_t generation = 0;
  RowResultKind kind = RowResultKind::Value;
  Value value;
  /// The failure message for RecordFailure and GroupFailure.
  std::string message;
};

/// Why a batch ended without its operator's answer (semantics.md, failures).
enum class BatchLoss : uint8_t {
  /// It has an answer (a report or an operator's exception).
  None,
  /// The machinery failed, not the rows: its worker was lost, an input could not be fetched.
  /// It runs again whole, within the infrastructure retry budget, then is narrowed down.
  Infrastructure,
  /// The operator's process died on it (a signal, an exit, an OOM kill, a broken answer): it is
  /// narrowed down like an operator error, and the grains that still crash alone fail.
  Crash,
  /// It ran past its Call's timeout: narrowed down like a crash.
  Timeout,
  /// It was lost with a replica stopped for another batch (a worker killed for a timeout): it
  /// runs again as it was, and no budget is spent.
  Bystander,
};
const char *batchLossName(BatchLoss loss);

/// What an operator that calls a service (llm.*, docs/models.md) spent on one batch: requests
/// sent (first attempts and retries), retries, requests that failed their row, the tokens the
/// server counted, and each answered request's latency. The engine ignores it; the run loop
/// sums it per Call.
struct ServiceUsage {
  uint64_t requests = 0;
  uint64_t retries = 0;
  uint64_t failedRequests = 0;
  uint64_t promptTokens = 0;
  uint64_t completionTokens = 0;
  /// Seconds from sending to the answer, one per answered request (its last attempt).
  std::vector<float> latencies;

  bool empty() const { return requests == 0; }
  void add(const ServiceUsage &other);
};

/// A worker's answer for one batch: either a batch error (an exception from the operator) or
/// one report per grain, matched by grain identity, not by position.
struct BatchReport {
  uint64_t batchId = 0;
  std::optional<std::string> batchError;
  /// With batchError: the batch was lost where it ran rather than failed by its operator (an
  /// operator's process crashed or hung and was restarted, an input could not be fetched).
  BatchLoss loss = BatchLoss::None;
  std::vector<GrainReport> grains;
  /// Service-backed operators only (empty otherwise).
  ServiceUsage usage;
};

enum class CommitStatus {
  /// Outcomes published and propagated.
  Committed,
  /// The batch is no longer outstanding (lost and re-queued, or already committed): dropped.
  Stale,
  /// The report did not match the batch or its values broke the operator's contract: the
  /// batch's grains failed with the cause; the run goes on.
  ContractViolation,
  /// A batch error, handled by the Call's recovery policy.
  BatchError,
};
const char *commitStatusName(CommitStatus status);

struct CommitResult {
  CommitStatus status = CommitStatus::Committed;
  std::string message;
};

enum class FailureKind {
  RecordFailure,
  GroupFailure,
  OperatorError,
  ContractViolation,
  Infrastructure,
  /// The operator's process died on the grain alone (a signal, an exit, an OOM kill).
  Crash,
  /// The grain alone ran past its Call's timeout.
  Timeout,
  SourceError,
  Aborted,
  Interrupted,
  /// The root's rows could not be written (disk full, a file name taken): taken back from
  /// every sink.
  OutputFailure,
};
const char *failureKindName(FailureKind kind);

/// Why something failed: which Call, which entity (ordinals below the root), which message.
struct Failure {
  FailureKind kind = FailureKind::RecordFailure;
  std::string call;
  std::vector<uint32_t> path;
  std::string message;
};

enum class RowStatus { Written, Dropped, Failed };
const char *rowStatusName(RowStatus status);

/// One row of one sink: an entity of the sink's domain under a finished root.
struct SinkRow {
  uint32_t sink = 0;
  /// Ordinals from the root down to the row's entity (empty for a root-level sink).
  std::vector<uint32_t> path;
  RowStatus status = RowStatus::Written;
  /// The sink's inputs, by its labels (Written rows only).
  std::vector<Value> values;
  /// Failed rows: index into RootResult::failures.
  uint32_t failure = kNoIndex;
};

enum class RootStatus { Written, Dropped, Failed };
const char *rootStatusName(RootStatus status);

/// A finished source row: its sink rows in plan order, each sink's rows in ordinal order.
/// A failed or suppressed member that a reduce left out (`reduce(x, failed: "skip")`).
struct SkippedMember {
  /// The member's entity (ordinals below the root).
  std::vector<uint32_t> path;
  /// Index into the root's failures: why it failed.
  uint32_t cause = kNoIndex;
  friend bool operator==(const SkippedMember &, const SkippedMember &) = default;
};

/// A row a Dedup node dropped as a duplicate (docs/runtime.md, "Deduplication"): which node
/// (its value's name), the duplicate's entity, and the survivor it duplicates.
struct DuplicateRow {
  std::string dedup;
  /// The Dedup node (plan::Plan::nodes).
  uint32_t node = 0;
  /// The duplicate's entity (ordinals below the root).
  std::vector<uint32_t> path;
  /// The survivor: its source row and its ordinals below that row's root.
  uint64_t survivorRow = 0;
  std::vector<uint32_t> survivorPath;
  /// 1 for an exact duplicate; the estimated Jaccard similarity for a near one.
  double similarity = 1;
  friend bool operator==(const DuplicateRow &, const DuplicateRow &) = default;
};

/// One decision of a Dedup node, as the run journal keeps it so that a resumed run decides
/// the same (EngineOptions::onDedupDecision, dedupHistory).
struct DedupDecision {
  uint32_t node = 0;
  /// The entity's lineage key (GrainLineage::key).
  uint64_t key = 0;
  uint32_t source = 0;
  uint64_t sourceRow = 0;
  std::vector<uint32_t> path;
  bool survivor = true;
  /// A survivor's index entry: the 128-bit hash of its value (exact) or its MinHash signature
  /// (near, encoded as `dedup.minhash` returns it).
  std::string fingerprint;
  /// A duplicate's survivor and similarity.
  uint64_t survivorRow = 0;
  std::vector<uint32_t> survivorPath;
  double similarity = 1;
  /// Loaded from the journal: the earlier run finished the entity's row (it will not run
  /// again), so only a survivor's index entry matters.
  bool rowDone = false;
};

/// What one Dedup node decided so far, for the summary, metrics and report.
struct DedupProgress {
  /// The node's value name (or its operator's).
  std::string name;
  /// kDedupExact or kDedupNear.
  std::string kind;
  uint64_t decided = 0;
  uint64_t duplicates = 0;
  /// Survivors in its index, and the index's bytes (counted in the byte budget); of those
  /// survivors, the ones retracted because their row failed (they match nothing but stay).
  uint64_t indexed = 0;
  uint64_t retracted = 0;
  uint64_t indexBytes = 0;
};

/// What one `filter` decided, for the summary, metrics and report: the values it kept, those
/// its mask dropped, and those it could not decide because the value or the mask failed
/// (values dropped before it, and those no consumer needed, are not counted).
struct FilterProgress {
  /// The filtered value's name ("" if unnamed) and where the filter is written.
  std::string name;
  uint32_t line = 0;
  uint32_t column = 0;
  uint64_t kept = 0;
  uint64_t dropped = 0;
  uint64_t failed = 0;
};

struct RootResult {
  uint64_t admission = 0;
  uint32_t source = 0;
  /// The row's index in its source.
  uint64_t sourceRow = 0;
  RootStatus status = RootStatus::Written;
  std::vector<SinkRow> rows;
  /// Every failure that happened under this root (not the suppressions they caused), in the
  /// order they happened; the first one is the root's cause.
  std::vector<Failure> failures;
  /// Members a `reduce(x, failed: "skip")` left out: each one's path and its cause (an index
  /// into `failures`), in the order the reduces resolved.
  std::vector<SkippedMember> skippedMembers;
  /// Rows Dedup nodes dropped as duplicates, in the order they were decided.
  std::vector<DuplicateRow> duplicates;
};

/// The cause a failed root is reported with: its first failed row's (rows come in plan order,
/// each sink's in ordinal order), else its first failure; null when it has none. The errors
/// journal, the report and the summary all name this one.
const Failure *rootCause(const RootResult &root);
/// A root the run's stop left unfinished (interrupted, or aborted by another row's failure):
/// not failed, never committed, and run again by a resumed run. Everything the user reads
/// calls it "unfinished".
bool stoppedByTheRun(const RootResult &root);

enum class ReadyOrder { Fifo, Unordered };
enum class BatchingScope { CrossParent, ParentBound };
enum class GatherMode { Lineage, GlobalBarrier };

struct EngineOptions {
  /// Each Call's ready queue: in the order grains became ready, or random (the ablation).
  ReadyOrder readyOrder = ReadyOrder::Fifo;
  /// Whether one batch may mix grains of different parents.
  BatchingScope batching = BatchingScope::CrossParent;
  /// Reduce as soon as one parent's children are done, or only once every grain of the child
  /// domain has finished (the flat-record baseline; it ignores maxLiveRoots).
  GatherMode gather = GatherMode::Lineage;
  /// Dispatch each parent's child 0 ahead of its siblings (a probe: a parent that poisons
  /// itself on its first child then suppresses the rest before they run).
  bool probeFirst = false;
  /// Admitted but unfinished root entities; admission pauses at this bound.
  uint32_t maxLiveRoots = 4096;
  /// Children an expansion makes in one step: a larger one makes the rest a step at a time,
  /// whenever its caller asks for work and none is ready (docs/runtime.md, "Expansions in
  /// steps"), so that ten million children never stop the run loop for seconds.
  uint32_t childrenPerStep = 65536;
  /// Re-runs of a batch after infrastructure failures (lost worker, timeout).
  uint32_t infrastructureRetries = 3;
  /// The byte budget of values held for the run (0: none). Above it nothing is admitted and a
  /// Call whose batches would add bytes waits unless it has none in flight (docs/runtime.md).
  uint64_t valueBudgetBytes = 0;
  /// Seed of the Unordered ready order.
  uint64_t seed = 1;
  /// Resume down to the child (docs/outputs.md): the value an earlier run of this plan kept
  /// for a grain (its invoke node and its entity's key), or nullptr. A grain found there is
  /// sealed with that value instead of running.
  std::function<const Value *(uint32_t node, uint64_t key)> recall;
  /// Called with every value a batch gives back and the engine keeps (for the run journal),
  /// with the grain's root (its source and row).
  std::function<void(uint32_t node, uint64_t key, uint32_t source, uint64_t sourceRow,
                     const Value &value)>
      onGrainValue;
  /// Every decision a Dedup node makes, when it makes it (for the run journal); and the
  /// decisions an earlier run of this plan made, in the order it made them: their survivors
  /// are indexed first, and an entity decided there is decided the same way again.
  std::function<void(const DedupDecision &decision)> onDedupDecision;
  std::vector<DedupDecision> dedupHistory;
};

struct EngineStats {
  uint64_t grainTransitions = 0;
  uint64_t grainsRun = 0;
  /// Grains sealed without running because an input was dropped, failed or suppressed.
  uint64_t grainsSkipped = 0;
  /// Grains sealed with a value an earlier run kept (EngineOptions::recall), not run.
  uint64_t grainsRecalled = 0;
  /// Ready or in-flight grains sealed by a GroupFailure barrier.
  uint64_t grainsSuppressedByBarrier = 0;
  /// Grains sealed without a result because their root finished early (its rows were known)
  /// or the run was aborted; in-flight ones have their reports discarded.
  uint64_t grainsCancelled = 0;
  /// Grains sealed without running because no consumer needed them (semantics.md, demand): an
  /// if's other branch, a coalesce's operand after a present one, a filter's value where the
  /// mask is false, or what only those read.
  uint64_t grainsNotNeeded = 0;
  /// Failed members that `reduce(x, failed: "skip")` left out.
  uint64_t membersSkipped = 0;
  /// Entities Dedup nodes dropped as duplicates.
  uint64_t duplicates = 0;
  uint64_t batchesDispatched = 0;
  uint64_t batchesCommitted = 0;
  uint64_t staleReports = 0;
  uint64_t contractViolations = 0;
  uint64_t batchErrors = 0;
  uint64_t batchRetries = 0;
  uint64_t batchSplits = 0;
  uint64_t infrastructureFailures = 0;
  /// Batches whose operator process crashed, and batches past their timeout.
  uint64_t batchCrashes = 0;
  uint64_t batchTimeouts = 0;
  uint64_t rootsAdmitted = 0;
  uint64_t rootsFinished = 0;
  uint64_t entitiesCreated = 0;
};

/// Per-Call counts of grains by phase, for progress and deadlock reports.
struct CallLoad {
  uint64_t waiting = 0;
  uint64_t ready = 0;
  uint64_t inFlight = 0;
  uint64_t sealed = 0;
  /// Batches re-run after an operator error, grains sealed without running because an input
  /// was dropped or failed, and grains suppressed by a GroupFailure barrier.
  uint64_t retries = 0;
  uint64_t skipped = 0;
  uint64_t suppressedByBarrier = 0;
  /// Grains cancelled because their root finished early or the run was aborted.
  uint64_t cancelled = 0;
  /// Grains sealed without running because no consumer needed them.
  uint64_t notNeeded = 0;
  /// Batches that failed whole (an error, a crash, a timeout, a lost worker) and were split to
  /// find the grains at fault, and the grains of such split parts that then gave a value: many
  /// means the operator fails whole batches for what few items do (rescued by splitting).
  uint64_t splitBatches = 0;
  uint64_t rescuedGrains = 0;
  /// Grains that failed alone after their batch was split: the items at fault. Splits far
  /// beyond what finding them takes mean the operator fails batches for no item's sake.
  uint64_t failedAlone = 0;
  /// Bytes its grains took in and gave back, over the grains committed with a value: what a
  /// batch of it is expected to add to the bytes held.
  uint64_t measuredGrains = 0;
  uint64_t inputBytes = 0;
  uint64_t outputBytes = 0;
  /// Of their inputs, the bytes their grains let go of (nothing of a page another node still
  /// reads, or that a filter passed on and its page still counts).
  uint64_t releasedBytes = 0;
  /// At the last reservation it had work and the byte budget held it back (docs/runtime.md).
  bool heldBackNow = false;
};

/// What the executor can take now, as LineageEngine::reserveBatch asks it.
struct ExecutorRoom {
  /// Whether a batch of `call` could be handed over now (empty: any Call's).
  std::function<bool(uint32_t call)> canRun;
  /// How many batches of `call` the executor runs at once (replicas x depth; empty or 0: not
  /// said). The byte budget keeps room for the inputs of the batches a Call that gives bytes
  /// back may still send out (docs/runtime.md, "Memory: the byte budget").
  std::function<uint32_t(uint32_t call)> batchSlots;
  /// Whether the inputs of `call`'s batches are copied while they are out (sent to another
  /// process: a worker, a declared operator's) and so count in the byte budget a second time;
  /// empty: they are. Not where the executor shares them with the engine (threads).
  std::function<bool(uint32_t call)> copiesInputs;
};

/// Bytes of values the run holds (EngineOptions::valueBudgetBytes): engine items, the inputs of
/// batches in flight, and what the caller adds (rows waiting to be written in order).
struct MemoryAccount {
  uint64_t limit = 0;
  /// Values of engine items (each item's value counted whole: a payload two items share
  /// counts twice, so the account errs on the safe side).
  uint64_t items = 0;
  /// The part of `items` kept until their rows finish (what a sink writes, what a broadcast or
  /// a reduce reads): at most half the budget is given to such values of rows other than the
  /// oldest, so that the others have room to finish.
  uint64_t kept = 0;
  /// Inputs of the batches in flight: copies of them travel to the workers.
  uint64_t inFlight = 0;
  /// What the caller holds and reports (setExternalBytes).
  uint64_t external = 0;
  /// The Dedup nodes' indexes of survivors.
  uint64_t indexes = 0;
  /// Expected growth of the batches in flight, reserved when they were dispatched.
  uint64_t reserved = 0;
  /// The part of `items` that expressions made (computed and record nodes): the budget does
  /// not hold them back.
  uint64_t computed = 0;
  /// The most `held()` has been, and `computed` then.
  uint64_t peak = 0;
  uint64_t computedAtPeak = 0;
  /// The most one source row's items have held (its values, not the copies of its batches),
  /// and the most one batch's inputs took in copies.
  uint64_t largestRow = 0;
  uint64_t largestBatchCopies = 0;
  /// Batches sent although the budget had no room for them, so that the run went on: when
  /// nothing else was out, or a consumer with none of its own out (a row, or one grain with its
  /// inputs' copies, needs more than the budget).
  uint64_t batchesPastBudget = 0;
  uint64_t held() const { return items + inFlight + external + indexes; }
  void notePeak() {
    if (held() > peak) {
      peak = held();
      computedAtPeak = computed;
    }
  }
};

} // namespace orch::runtime
