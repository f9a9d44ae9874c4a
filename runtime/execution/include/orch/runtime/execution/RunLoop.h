// Runs a plan with any executor: reads sources lazily into the engine, hands ready batches to
// the executor (work-conserving), commits what comes back, enforces Call timeouts, and writes
// each source row's sink rows the moment it finishes.
#pragma once

#include "orch/plan/Plan.h"
#include "orch/runtime/engine/LineageEngine.h"
#include "orch/runtime/execution/BatchExecutor.h"
#include "orch/runtime/operators/Operator.h"
#include "orch/runtime/outputs/RunJournal.h"
#include "orch/runtime/outputs/RunRecorder.h"

#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace orch::runtime {

struct CallProgress {
  std::string name;
  /// Grains sealed, and grains that exist so far (more appear as parents expand).
  uint64_t done = 0;
  uint64_t known = 0;
  uint64_t batches = 0;
  uint64_t grains = 0;
  int64_t batchLimit = 1;
};

/// Where a run stands, for progress displays.
struct RunProgress {
  /// Source rows in all, when every source knows up front.
  std::optional<uint64_t> total;
  std::vector<CallProgress> calls;
  uint64_t admitted = 0;
  uint64_t finished = 0;
  uint64_t written = 0;
  uint64_t failed = 0;
  /// Left unfinished by the run's stop (interrupted): not failed.
  uint64_t unfinished = 0;
  /// A resumed run: source rows an earlier run finished, which this one does not run again
  /// (counted as done from the start).
  uint64_t doneEarlier = 0;
  /// Of those, rows that had failed.
  uint64_t failedEarlier = 0;
  uint64_t grainsRun = 0;
  double seconds = 0;
  /// What the run is doing before its first row ("starting operator processes"); empty once
  /// rows flow.
  std::string phase;
};

struct RunOptions {
  EngineOptions engine;
  /// Called on the engine's thread for every finished source row, after its sink rows are
  /// written (the errors journal and progress hang here). What writes much for one row (a
  /// million duplicates' lines) calls `keepAlive` now and then: the workers must still hear
  /// from their coordinator (BatchExecutor::keepAlive).
  std::function<void(const RootResult &, const std::function<void()> &keepAlive)> onRootFinished;
  /// Called on the engine's thread at most every `progressInterval`.
  std::function<void(const RunProgress &)> onProgress;
  std::chrono::milliseconds progressInterval{500};
  /// The hang guard of Calls without `timeout` (docs/runtime.md): a batch may run
  /// `hangGuardMultiple` times its Call's slowest time per item so far, times its items, and
  /// at least `hangGuardFloor`; a zero floor turns the guard off.
  std::chrono::nanoseconds hangGuardFloor = std::chrono::minutes(5);
  double hangGuardMultiple = 10;
  /// Records every batch and source row with times, when set.
  RunRecorder *recorder = nullptr;
  /// Set (by a signal handler) to stop the run early.
  const std::atomic<bool> *stopRequested = nullptr;
  /// The run journal (docs/outputs.md): where, and whether to restart or retry failed rows.
  JournalOptions journal;
  /// Called once the run knows whether it resumes, before the first row: how many bytes of the
  /// errors journal to keep (0: start it afresh), and whether the run retries failed rows (the
  /// lines of rows that did not fail, skipped members, stay). The errors journal is the
  /// caller's. A problem stops the run before its first row.
  std::function<std::optional<std::string>(uint64_t keep, bool retryingFailed)> openErrorsJournal;
  /// The errors journal's size now (recorded with each committed source row).
  std::function<uint64_t()> errorsJournalSize;
};

struct CallSummary {
  std::string name;
  uint64_t batches = 0;
  uint64_t grains = 0;
  /// Batches whose grains came from more than one source row.
  uint64_t mixedBatches = 0;
  /// From the engine (CallLoad): operator-error retries, grains sealed without running, grains
  /// suppressed by GroupFailure barriers.
  uint64_t retries = 0;
  uint64_t skipped = 0;
  uint64_t suppressedByBarrier = 0;
  /// Grains cancelled because their source row finished early (or the run was aborted).
  uint64_t cancelled = 0;
  /// Batches that failed whole and were split, the grains of their parts that then gave a
  /// value (rescued by splitting), and why the first one failed (CallLoad).
  uint64_t splitBatches = 0;
  uint64_t rescuedGrains = 0;
  std::string splitCause;
  /// Grains that failed alone after a split (the items at fault).
  uint64_t failedAlone = 0;
  /// Grains no consumer needed (semantics.md, demand): sealed without running.
  uint64_t notNeeded = 0;
  int64_t batchLimit = 1;
  /// Batches it may run at once: the most replicas it had (automatic ones change, below).
  int64_t replicas = 1;
  /// No `replicas` written: the runtime decided (docs/runtime.md, "Replicas").
  bool automaticReplicas = false;
  /// Replicas over time: seconds into the run, the count from then on, and why; `moved`: the
  /// count stayed and one replica moved to where the Call's inputs are kept.
  struct ReplicaChange {
    double at = 0;
    uint32_t replicas = 0;
    std::string why;
    bool moved = false;
  };
  std::vector<ReplicaChange> replicaChanges;
  /// Replicas × seconds they existed (the busy share's denominator).
  double replicaSeconds = 0;
  /// Seconds spent inside the operator, summed over replicas.
  double busySeconds = 0;
  /// Where its wall time went (docs/observability.md): batches in flight and no input waiting
  /// (active), input waiting for a free replica (saturated), nothing to do before its last
  /// batch (starved: waiting for upstream Calls or admission). After its last batch it is done.
  double activeSeconds = 0;
  double saturatedSeconds = 0;
  double starvedSeconds = 0;
  /// Input waiting and a replica free, but the byte budget held it back (docs/runtime.md).
  double heldBackSeconds = 0;
  /// Batches one replica keeps open at once (`in_flight`; docs/models.md).
  int64_t inFlight = 1;
  /// What a service-backed Call (llm.*) sent and spent: requests, retries, tokens, latencies.
  ServiceUsage service;
};

/// What one sink wrote in this run.
struct SinkAccount {
  /// "sink 0 (jsonl)"
  std::string name;
  uint64_t rows = 0;
  uint64_t bytes = 0;
};

struct RunSummary {
  uint64_t rows = 0;
  uint64_t written = 0;
  uint64_t dropped = 0;
  uint64_t failed = 0;
  /// Left unfinished when the run stopped (interrupted or aborted): not failed, run again by a
  /// resumed run (stoppedByTheRun).
  uint64_t unfinished = 0;
  /// Sink rows written, over all sinks.
  uint64_t sinkRows = 0;
  double seconds = 0;
  EngineStats engine;
  /// Each Dedup node's decisions (docs/runtime.md, "Deduplication").
  std::vector<DedupProgress> dedups;
  /// What each `filter` kept and dropped, in plan order.
  std::vector<FilterProgress> filters;
  std::vector<CallSummary> calls;
  std::vector<SinkAccount> sinks;
  /// When the run began (times in the summary and the recorder count from here).
  SteadyClock::time_point startedAt;
  /// The executor's own account (workers started, lost, replaced), and its counters
  /// (BatchExecutor::counters).
  std::string executor;
  std::vector<std::pair<std::string, uint64_t>> executorCounters;
  std::vector<WorkerIdentity> workers;
  /// Seconds until declared operators' processes were ready (0 without any).
  double startupSeconds = 0;
  /// With a sink in source order: the most finished source rows that waited for an earlier one
  /// at once, and about how much memory their rows took.
  uint64_t reorderPeakRows = 0;
  uint64_t reorderPeakBytes = 0;
  /// The byte budget (0: none), the most bytes of values held at once, and bytes held over
  /// time: (seconds, bytes) at most every 100 ms (thinned to at most 2,000 points).
  uint64_t valueBudget = 0;
  uint64_t peakBytesHeld = 0;
  std::vector<std::pair<double, uint64_t>> bytesHeld;
  /// Under a budget: the most one source row held, the most one batch's inputs took in copies,
  /// what expressions had made at the peak, and the batches sent past the budget so that the
  /// run went on (MemoryAccount).
  uint64_t largestRowBytes = 0;
  uint64_t largestBatchCopies = 0;
  uint64_t computedBytesAtPeak = 0;
  uint64_t batchesPastBudget = 0;
  /// Source rows an earlier run of this journal had finished, not run again.
  uint64_t resumedRows = 0;
  /// Of those, rows that had failed: still failed (--retry-failed runs them again).
  uint64_t resumedFailed = 0;
  /// Source rows never admitted because the run stopped first, when the sources know their
  /// total (0 otherwise, and for a run that completed).
  uint64_t notStarted = 0;
  bool resumed = false;
  /// False when the run could not start (then `error` says why and nothing ran).
  bool started = false;
  /// Set when the run could not start (an operator without implementation, an unwritable
  /// sink, no worker) or stopped early (an abort, a deadlock, an interruption).
  std::optional<std::string> error;
  /// Things the user should know that are not errors (a --retry-failed with nothing to retry).
  std::vector<std::string> notes;
};

/// Runs `plan` to completion with `executor`; sources and sinks come from `registry`. Never
/// throws for operator or data problems: they become failed rows, or `error`.
RunSummary runPlan(const plan::Plan &plan, const OperatorRegistry &registry,
                   BatchExecutor &executor, const RunOptions &options);

} // namespace orch::runtime
