// The frontend as one call: parse, resolve names, check types. Each stage runs only when the
// ones before it succeeded, so one mistake is not reported again as a cascade.
#pragma once

#include "orch/frontend/Ast.h"
#include "orch/frontend/Sema.h"
#include "orch/ir/Diagnostics.h"
#include "orch/plan/OperatorCatalog.h"

#include <memory>
#include <vector>

namespace llvm {
class SourceMgr;
}

namespace orch::frontend {

struct FrontendOptions {
  std::vector<ParamOverride> overrides;
  const plan::OperatorCatalog *catalog = &plan::standardCatalog();
};

struct FrontendResult {
  /// The AST as far as it got; fully resolved and typed when `ok`.
  std::unique_ptr<ast::File> file;
  bool ok = false;
};

FrontendResult runFrontend(llvm::SourceMgr &sources, uint32_t bufferId,
                           const FrontendOptions &options, DiagnosticEngine &diags);

} // namespace orch::frontend
