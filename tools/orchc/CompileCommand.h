// What `orchc` does once its flags are parsed: compile one .orch file and report diagnostics.
#pragma once

#include "orch/frontend/Sema.h"

#include <string>
#include <vector>

namespace orch {

enum class EmitKind { Nothing, Ast, Ir, PlanText, Dot };

struct CompileOptions {
  std::string inputPath;
  EmitKind emit = EmitKind::Nothing;
  std::vector<frontend::ParamOverride> overrides;
  /// Check diagnostics against expected-* annotations in the input instead of printing them.
  bool verifyDiagnostics = false;
  /// Where to write the plan ("" for nowhere).
  std::string outputPath;
  bool printAfterAll = false;
  bool timePasses = false;
};

/// Exit codes of orchc.
enum CompileExitCode : int { kCompileOk = 0, kCompileUserError = 1, kCompileInternalError = 3 };

int runCompile(const CompileOptions &options);

} // namespace orch
