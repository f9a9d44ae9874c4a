// The frontend pipeline, spelled out in order.
#include "orch/frontend/Frontend.h"

#include "orch/frontend/Parser.h"

namespace orch::frontend {

FrontendResult runFrontend(llvm::SourceMgr &sources, uint32_t bufferId,
                           const FrontendOptions &options, DiagnosticEngine &diags) {
  ParseResult parsed = parseFile(sources, bufferId, diags);
  FrontendResult result{std::move(parsed.file), false};
  if (!parsed.ok || !result.file)
    return result;
  if (!resolveNames(*result.file, diags))
    return result;
  result.ok = checkTypes(*result.file, *options.catalog, options.overrides, diags);
  return result;
}

} // namespace orch::frontend
