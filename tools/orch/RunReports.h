// Machine-readable accounts of a run: `--metrics` (documented in docs/observability.md) and
// `--trace` (Chrome trace-event format, for Perfetto or chrome://tracing).
#pragma once

#include "orch/plan/Plan.h"
#include "orch/runtime/execution/RunLoop.h"
#include "orch/runtime/outputs/RunRecorder.h"

#include <optional>
#include <string>

namespace orch {

/// False (with `error`) when the file cannot be written. `errorsJournal`: where the run's failed
/// rows are journaled.
/// `journaled`: the run kept a run journal (a stopped run can be resumed).
bool writeMetrics(const std::string &path, const plan::Plan &plan,
                  const runtime::RunSummary &summary, const runtime::RunRecorder &recorder,
                  const std::string &errorsJournal, bool journaled, std::string &error);
bool writeTrace(const std::string &path, const plan::Plan &plan,
                const runtime::RunRecorder &recorder, std::string &error);

/// First, median and last finish time of the source rows (seconds since the start), or -1s.
struct FinishTimes {
  double first = -1, median = -1, last = -1;
};
FinishTimes finishTimes(const runtime::RunRecorder &recorder);

/// The Call whose replicas were busiest (busy seconds over replicas × wall time), and that
/// share; nullopt when no Call ran. It bounded the run when it was busy at least half the run
/// (below that, the run waited on its input, its start or the runtime more than on any Call).
struct Bottleneck {
  size_t call = 0;
  double busyShare = 0;
  bool boundsTheRun() const { return busyShare >= 0.5; }
};
std::optional<Bottleneck> findBottleneck(const runtime::RunSummary &summary);
/// A Call's operator time over the time its replicas existed (automatic ones change).
double busyShare(const runtime::CallSummary &call, double runSeconds);

/// A service-backed Call's request latencies (seconds): the 50th, 90th and 99th percentiles
/// (nearest rank) and the slowest; zeros without any.
struct LatencyPercentiles {
  double p50 = 0, p90 = 0, p99 = 0, max = 0;
};
LatencyPercentiles latencyPercentiles(std::vector<float> latencies);

/// Whether `call` was rescued by splitting for the operator's sake, not an item's: its parts
/// ran, and it split more batches than finding the items that failed alone takes (each takes
/// at most log2(batch) splits). One bad item in a batch is the isolation working, not this.
bool rescuedBySplitting(const runtime::CallSummary &call);

/// The rows a stop left behind, for the summary and the report: "4 unfinished and 18 not
/// started (the run stopped before them; running the same command again resumes them)"; ""
/// when there are none. Without a journal (--no-journal) nothing resumes them, and it says so.
std::string stoppedRowsClause(uint64_t unfinished, uint64_t notStarted, bool journaled);

/// A failure message's one line for a summary or a folded traceback: a Python traceback's
/// exception ("ValueError: bad page", "ExceptionGroup: ..."; not a note added after it, not the
/// last line of a multi-line message), else the message's first line.
std::string messageHeadline(const std::string &message);

/// The worker (or thread) in a batch's place: "local-2" of "local-2/replica 5".
std::string workerOfPlace(const std::string &place);

} // namespace orch
