// Runs a plan in this process: the lineage engine on the calling thread (the single writer),
// operators on a pool of worker threads, sources read lazily and sinks written as each root
// finishes. The embedded runtime behind `orch run` and the reference for the distributed one.
#pragma once

#include "orch/plan/Plan.h"
#include "orch/runtime/LineageEngine.h"
#include "orch/runtime/Operator.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace orch::runtime {

struct RunOptions {
  /// Worker threads running operator batches.
  unsigned threads = 2;
  EngineOptions engine;
  /// Called on the engine's thread for every finished source row, after its sink rows are
  /// written (the errors journal and progress hang here).
  std::function<void(const RootResult &)> onRootFinished;
};

struct CallSummary {
  std::string name;
  uint64_t batches = 0;
  uint64_t grains = 0;
  int64_t batchLimit = 1;
  /// Seconds spent inside the operator, summed over replicas.
  double busySeconds = 0;
};

struct RunSummary {
  uint64_t rows = 0;
  uint64_t written = 0;
  uint64_t dropped = 0;
  uint64_t failed = 0;
  /// Sink rows written, over all sinks.
  uint64_t sinkRows = 0;
  double seconds = 0;
  EngineStats engine;
  std::vector<CallSummary> calls;
  /// False when the run could not start (then `error` says why and nothing ran).
  bool started = false;
  /// Set when the run could not start (an operator without implementation, an unwritable
  /// sink) or stopped early (an abort, a deadlock).
  std::optional<std::string> error;
};

/// Runs `plan` to completion. Never throws for operator or data problems: they become failed
/// rows, or `error` when the run cannot start.
RunSummary runLocally(const plan::Plan &plan, const OperatorRegistry &registry,
                      const RunOptions &options);

} // namespace orch::runtime
