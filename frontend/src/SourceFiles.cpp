// Loading .orch files into the SourceMgr that every diagnostic refers to.
#include "orch/frontend/Parser.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

namespace orch::frontend {

std::optional<uint32_t> loadSourceFile(llvm::SourceMgr &sources, const std::string &path,
                                       DiagnosticEngine &diags) {
  auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(path, /*IsText=*/true);
  if (!buffer) {
    diags.error({}, "cannot read '" + path + "': " + buffer.getError().message());
    return std::nullopt;
  }
  return sources.AddNewSourceBuffer(std::move(*buffer), llvm::SMLoc());
}

} // namespace orch::frontend
