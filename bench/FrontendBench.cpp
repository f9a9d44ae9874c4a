// Parsing speed of the frontend on the flagship example.
#include "orch/frontend/Parser.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <benchmark/benchmark.h>

namespace {

void BM_ParseFlagshipExample(benchmark::State &state) {
  auto file = llvm::MemoryBuffer::getFile(ORCH_EXAMPLES_DIR "/pdf_to_markdown.orch");
  if (!file) {
    state.SkipWithError("cannot read the example");
    return;
  }
  for (auto _ : state) {
    llvm::SourceMgr sources;
    uint32_t id = sources.AddNewSourceBuffer(
        llvm::MemoryBuffer::getMemBufferCopy((*file)->getBuffer(), "example.orch"), llvm::SMLoc());
    orch::DiagnosticEngine diags(nullptr);
    benchmark::DoNotOptimize(orch::parseFile(sources, id, diags).file);
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t((*file)->getBufferSize()));
}
BENCHMARK(BM_ParseFlagshipExample);

} // namespace
