// `orch run FILE.orch|FILE.plan`: compile if needed, run in this process, write sinks and the
// errors journal, print a summary.
#pragma once

#include "ListenSecurity.h"

#include "orch/frontend/Sema.h"
#include "orch/runtime/launch/RunDriver.h"

#include <string>
#include <vector>

namespace orch {

struct RunCommandOptions {
  std::string inputPath;
  std::vector<frontend::ParamOverride> overrides;
  /// The run itself: executor, engine, coordinator, journal (defaults in RunDriver.h).
  runtime::RunSettings settings;
  /// CURVE key files or --insecure, read into `settings.coordinator` for `--listen`.
  ListenSecurityFlags security;
  /// Failed source rows go here, one JSON line each ("" = "<pipeline>.errors.jsonl").
  std::string errorsPath;
  /// No live progress and only the summary's first line.
  bool quiet = false;
  /// Machine-readable account of the run, and a Chrome trace of it ("" = none).
  std::string metricsPath;
  std::string tracePath;
};

/// Exit codes of `orch run`.
enum RunExitCode : int { kRunOk = 0, kRunCannotRun = 1, kRunRowsFailed = 2, kRunInterrupted = 130 };

int runPipeline(RunCommandOptions options);

} // namespace orch
