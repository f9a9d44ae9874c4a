// `orch run FILE.orch|FILE.plan`: compile if needed, run in this process, write sinks and the
// errors journal, print a summary.
#pragma once

#include "ListenSecurity.h"

#include "orch/frontend/Sema.h"
#include "orch/runtime/EngineTypes.h"
#include "orch/runtime/Protocol.h"

#include <chrono>
#include <string>
#include <vector>

namespace orch {

struct RunCommandOptions {
  std::string inputPath;
  std::vector<frontend::ParamOverride> overrides;
  /// Run operator batches on threads of this process instead of worker processes.
  bool inProcess = false;
  unsigned threads = 2;
  /// Local worker processes; -1 = sized from the machine and the Calls' replicas (none with
  /// `listen`).
  int workers = -1;
  /// Cluster mode: where workers connect ("" = a private ipc endpoint).
  std::string listen;
  /// CURVE keys or --insecure for `listen`.
  ListenSecurityFlags security;
  uint32_t heartbeatMs = runtime::kDefaultHeartbeatMs;
  uint32_t liveness = runtime::kDefaultLiveness;
  uint32_t depth = runtime::kDefaultDepth;
  /// Results of at least this many bytes that only Calls read stay on their worker (0: none).
  uint64_t keepValuesOver = runtime::kDefaultKeepValuesOver;
  runtime::EngineOptions engine;
  /// The hang guard's floor for Calls without `timeout` (0: off; docs/runtime.md).
  std::chrono::nanoseconds hangGuardFloor = std::chrono::minutes(5);
  /// Failed source rows go here, one JSON line each ("" = "<pipeline>.errors.jsonl").
  std::string errorsPath;
  /// The run journal (docs/outputs.md): its directory ("" = "<pipeline>.run"), or none.
  std::string journalDir;
  bool noJournal = false;
  bool restart = false;
  bool retryFailed = false;
  /// No live progress and only the summary's first line.
  bool quiet = false;
  /// Machine-readable account of the run, and a Chrome trace of it ("" = none).
  std::string metricsPath;
  std::string tracePath;
};

/// Exit codes of `orch run`.
enum RunExitCode : int { kRunOk = 0, kRunCannotRun = 1, kRunRowsFailed = 2, kRunInterrupted = 130 };

int runPipeline(const RunCommandOptions &options);

} // namespace orch
