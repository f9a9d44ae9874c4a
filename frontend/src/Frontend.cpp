// The frontend pipeline, spelled out in order.
#include "orch/frontend/Frontend.h"

#include "orch/frontend/Parser.h"

namespace orch::frontend {

FrontendResult runFrontend(llvm::SourceMgr &sources, uint32_t bufferId,
                           const FrontendOptions &options, DiagnosticEngine &diags) {
  ParseResult parsed = parseFile(sources, bufferId, diags);
  FrontendResult result{std::move(parsed.file), false};
  if (!result.file)
    return result;
  // Every stage runs on what the parser recovered, so that one run reports the errors of every
  // statement: a name or type that could not be determined is unknown to later stages, which
  // report nothing more about it.
  const bool namesOk = resolveNames(*result.file, diags);
  const bool typesOk = checkTypes(*result.file, *options.catalog, options.overrides, diags);
  result.ok = parsed.ok && namesOk && typesOk;
  return result;
}

} // namespace orch::frontend
