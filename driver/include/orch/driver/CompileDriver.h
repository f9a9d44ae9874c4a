// Source to plan in one place, stage after stage as the compiler runs them: load the file,
// the frontend (parse, names, types), IR generation, the checking passes and the lowering
// (passes/Pipeline.h). orchc, orch run, the language server, the tests, the benchmarks and the
// fuzzer all compile through here.
#pragma once

#include "orch/frontend/Frontend.h"
#include "orch/ir/Module.h"
#include "orch/passes/Pass.h"
#include "orch/plan/Plan.h"

#include <optional>
#include <string>

namespace llvm {
class SourceMgr;
}

namespace orch::driver {

struct CompileRequest {
  orch::frontend::FrontendOptions frontend;
  orch::passes::PassManagerOptions passes;
  /// Stop after the frontend (`orchc --emit=ast`): no IR, no plan.
  bool frontendOnly = false;
};

/// What each stage produced; a later stage is empty when an earlier one failed.
struct Compilation {
  /// The AST as far as it got; `frontend.ok` when it is fully resolved and typed.
  orch::frontend::FrontendResult frontend;
  ir::Module module;
  std::optional<plan::Plan> plan;
};

/// Compiles buffer `bufferId` of `sources`; `path` names the source in the IR and the plan.
Compilation compileBuffer(llvm::SourceMgr &sources, uint32_t bufferId, const std::string &path,
                          DiagnosticEngine &diags, const CompileRequest &request = {});

/// Compiles `text` as the file `path` (tests, benchmarks, the editor, the fuzzer).
Compilation compileText(llvm::SourceMgr &sources, const std::string &text, const std::string &path,
                        DiagnosticEngine &diags, const CompileRequest &request = {});

/// Loads `path` into `sources` and compiles it; nullopt (after a diagnostic) when it cannot
/// be read.
std::optional<Compilation> compileFile(llvm::SourceMgr &sources, const std::string &path,
                                       DiagnosticEngine &diags, const CompileRequest &request = {});

} // namespace orch::driver
