// What `orchc` does once its flags are parsed: compile one .orch file and report diagnostics.
#pragma once

#include <string>

namespace orch {

struct CompileOptions {
  std::string inputPath;
  /// Only report diagnostics; write nothing.
  bool checkOnly = false;
};

/// Exit codes of orchc.
enum CompileExitCode : int { kCompileOk = 0, kCompileUserError = 1, kCompileInternalError = 3 };

int runCompile(const CompileOptions &options);

} // namespace orch
