// libFuzzer entry point: arbitrary bytes through the whole frontend (parse, resolve, check).
// Built by `make fuzz` with clang, -fsanitize=fuzzer,address.
#include "orch/frontend/Frontend.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::SourceMgr sources;
  uint32_t id = sources.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(
          llvm::StringRef(reinterpret_cast<const char *>(data), size), "fuzz.orch"),
      llvm::SMLoc());
  bool reportedError = false;
  bool errorWithoutLocation = false;
  orch::DiagnosticEngine diags([&](const orch::Diagnostic &diagnostic) {
    reportedError |= diagnostic.severity == orch::DiagnosticSeverity::Error;
    errorWithoutLocation |= !diagnostic.location.isKnown();
  });
  orch::FrontendResult result = orch::runFrontend(sources, id, orch::FrontendOptions{}, diags);
  // A rejection must say why, and where.
  if ((!result.ok && !reportedError) || errorWithoutLocation)
    std::abort();
  return 0;
}
