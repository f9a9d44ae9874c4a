// `orch run FILE.orch|FILE.plan`: compile if needed, run in this process, write sinks and the
// errors journal, print a summary.
#pragma once

#include "orch/frontend/Sema.h"
#include "orch/runtime/EngineTypes.h"

#include <string>
#include <vector>

namespace orch {

struct RunCommandOptions {
  std::string inputPath;
  std::vector<ParamOverride> overrides;
  unsigned threads = 2;
  runtime::EngineOptions engine;
  /// Failed source rows go here, one JSON line each ("" = "<pipeline>.errors.jsonl").
  std::string errorsPath;
  bool quiet = false;
};

/// Exit codes of `orch run`.
enum RunExitCode : int { kRunOk = 0, kRunCannotRun = 1, kRunRowsFailed = 2 };

int runPipeline(const RunCommandOptions &options);

} // namespace orch
