// The compiler's stages in order (see CompileDriver.h).
#include "orch/driver/CompileDriver.h"

#include "orch/frontend/IrGen.h"
#include "orch/frontend/Parser.h"
#include "orch/passes/Pipeline.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

namespace orch::driver {

Compilation compileBuffer(llvm::SourceMgr &sources, uint32_t bufferId, const std::string &path,
                          DiagnosticEngine &diags, const CompileRequest &request) {
  Compilation compilation;
  compilation.frontend = frontend::runFrontend(sources, bufferId, request.frontend, diags);
  if (!compilation.frontend.ok || request.frontendOnly)
    return compilation;
  compilation.module = frontend::generateIr(*compilation.frontend.file, path);
  compilation.plan = passes::compileModule(compilation.module, diags, request.passes);
  return compilation;
}

Compilation compileText(llvm::SourceMgr &sources, const std::string &text, const std::string &path,
                        DiagnosticEngine &diags, const CompileRequest &request) {
  const uint32_t bufferId =
      sources.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, path), llvm::SMLoc());
  return compileBuffer(sources, bufferId, path, diags, request);
}

std::optional<Compilation> compileFile(llvm::SourceMgr &sources, const std::string &path,
                                       DiagnosticEngine &diags, const CompileRequest &request) {
  std::optional<uint32_t> bufferId = frontend::loadSourceFile(sources, path, diags);
  if (!bufferId)
    return std::nullopt;
  return compileBuffer(sources, *bufferId, path, diags, request);
}

} // namespace orch::driver
