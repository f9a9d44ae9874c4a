// The lineage engine: a single-writer, I/O-free state machine that executes a plan's semantics
// (docs/runtime.md). It owns entities, expansions, items and grains; hands out
// batches of ready grains; commits reports atomically; and hands back each root entity with its
// sink rows the moment everything under it is terminal. Who runs the batches (threads, ZeroMQ
// workers) and who reads sources and writes sinks is the caller's business.
#pragma once

#include "orch/plan/Plan.h"
#include "orch/runtime/engine/EngineTypes.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace orch::runtime {

/// Why the engine cannot run `plan` (a plan the compiler would never produce), or nullopt.
std::optional<std::string> checkPlanRunnable(const plan::Plan &plan);

/// The dispatch policy `options` choose: "fifo", "unordered", "parent-bound" or "probe-first".
const char *dispatchPolicyName(const EngineOptions &options);

class LineageEngine {
public:
  /// `plan` must pass checkPlanRunnable and outlive the engine.
  LineageEngine(const plan::Plan &plan, EngineOptions options = {});
  ~LineageEngine();
  LineageEngine(const LineageEngine &) = delete;
  LineageEngine &operator=(const LineageEngine &) = delete;

  // Admission. Roots are admitted lazily, in the caller's order, while canAdmit().

  /// Admission is open and the live-root bound is not reached.
  bool canAdmit() const;
  /// Creates a root entity of `source`'s domain for one source row; returns its admission index.
  uint64_t admitRoot(uint32_t source, Value row);
  /// Accounts for a row the source could not produce (a malformed line), or that is not run (it
  /// crashed an earlier run: FailureKind::Crash): a failed root.
  uint64_t admitFailedRow(uint32_t source, std::string message,
                          FailureKind kind = FailureKind::SourceError);
  /// The next row of `source` is not admitted (an earlier run finished it; see RunJournal): it
  /// keeps its index, and the rows after it theirs.
  void skipSourceRow(uint32_t source);
  /// No more roots will come; the run completes once the live ones finish.
  void closeAdmission();
  /// The run stops now (a user's interruption): admission closes and every unfinished root is
  /// failed with `reason` (FailureKind::Interrupted); batches still out become stale.
  void interrupt(const std::string &reason);

  // Dispatch and commit.

  /// Reserves up to `batch` ready grains of one Call, choosing among the Calls `mayRun`
  /// accepts: retry batches first, then fresh work, then deferred recovery; among Calls, the one
  /// whose next grain has the lowest admission index. Nullopt when nothing is ready.
  std::optional<Batch> reserveBatch(const std::function<bool(uint32_t call)> &mayRun = {});
  /// The same, with what the executor says of each Call's batches in flight.
  std::optional<Batch> reserveBatch(const ExecutorRoom &room);
  /// Commits a worker's report (semantics.md, commit rule).
  CommitResult commit(const BatchReport &report);
  /// The batch ended without its operator's answer. `Infrastructure` (a worker lost, an input
  /// unavailable): its grains go back to ready with a new generation, within the
  /// infrastructure retry budget, and are then bisected. `Crash` and `Timeout`: narrowed down
  /// like an operator error (the Call's recovery), so only the grains that crash or hang alone
  /// fail. False if the batch is not outstanding.
  bool failBatch(uint64_t batchId, const std::string &reason,
                 BatchLoss loss = BatchLoss::Infrastructure);

  // Results.

  /// Roots finished since the last call, in the order they finished.
  std::vector<RootResult> takeFinishedRoots();
  /// Admission is closed and every admitted root has finished (or the run was aborted).
  bool complete() const;
  /// Set when a Call with recovery "abort" failed: every unfinished root is failed with it.
  const std::optional<std::string> &abortReason() const;
  /// Nothing is in flight, nothing is ready and the run is not complete: a description with the
  /// counts; nullopt otherwise. (With admission open and below the bound it is not a deadlock:
  /// the caller can admit.) Not const: like hasReadyWork it drops stale queue entries.
  std::optional<std::string> deadlockReport();

  /// The dataflow inputs batches of `call` carry, in order (Batch::inputsOf).
  const std::vector<std::string> &callInputLabels(uint32_t call) const;

  /// Whether a batch could be reserved now, or an expansion has children still to make (one
  /// step of them is made, EngineOptions::childrenPerStep); drops the stale entries it passes
  /// in the queues (entries of grains a barrier or an early finish sealed), hence not const.
  bool hasReadyWork();
  /// An expansion has children still to make, and the queues are low enough that the next
  /// step would be made: the caller should not block waiting for events (with a backlog it
  /// waits as usual, and the next step is made once the backlog runs low).
  bool makingChildren() const;
  size_t liveRoots() const;
  /// Each Dedup node's decisions so far, in plan order.
  std::vector<DedupProgress> dedupProgress() const;
  /// Why `call`'s first split batch failed whole ("" if none was split; CallLoad::splitBatches).
  const std::string &firstSplitCause(uint32_t call) const;
  /// What each `filter` kept, dropped and could not decide so far, in plan order.
  const std::vector<FilterProgress> &filterProgress() const;
  const EngineStats &stats() const;
  const CallLoad &callLoad(uint32_t call) const;
  /// The bytes of values held, against the byte budget (EngineOptions::valueBudgetBytes).
  const MemoryAccount &memory() const;
  /// Bytes the caller holds for the run (rows waiting to be written in order): they count
  /// against the budget too.
  void setExternalBytes(uint64_t bytes);
  /// Approximate bytes of engine state held now (entities, items, grains, expansions, queues),
  /// not counting value payloads.
  size_t stateBytes() const;

private:
  struct State;
  std::unique_ptr<State> state_;
};

} // namespace orch::runtime
