// Machine-readable accounts of a run: `--metrics` (documented in docs/observability.md) and
// `--trace` (Chrome trace-event format, for Perfetto or chrome://tracing).
#pragma once

#include "orch/plan/Plan.h"
#include "orch/runtime/RunLoop.h"
#include "orch/runtime/RunRecorder.h"

#include <string>

namespace orch {

/// False (with `error`) when the file cannot be written.
bool writeMetrics(const std::string &path, const plan::Plan &plan,
                  const runtime::RunSummary &summary, const runtime::RunRecorder &recorder,
                  std::string &error);
bool writeTrace(const std::string &path, const plan::Plan &plan,
                const runtime::RunRecorder &recorder, std::string &error);

/// First, median and last finish time of the source rows (seconds since the start), or -1s.
struct FinishTimes {
  double first = -1, median = -1, last = -1;
};
FinishTimes finishTimes(const runtime::RunRecorder &recorder);

} // namespace orch
