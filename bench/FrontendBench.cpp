// Frontend speed: the flagship example, and a generated pipeline of 10,000 bindings (the
// target is parse + check in well under a second).
#include "orch/frontend/Frontend.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <benchmark/benchmark.h>

#include <string>

namespace {

/// A valid pipeline of `bindings` bindings mixing calls, records, filters, reduces and
/// projections, each depending on earlier ones.
std::string generatePipeline(int bindings) {
  std::string text = "pipeline generated;\nparam input: String = \"in/*.pdf\";\n"
                     "source docs = files(input) as Doc;\n"
                     "call ocr = ocr.tesseract(lang: \"eng\") { batch: 16, replicas: 2 };\n"
                     "pages = expand(pdf.pages(docs)) as Page;\n"
                     "t0 = ocr(pdf.render(pages, dpi: 100));\n";
  int textIndex = 0;
  for (int i = 1; i < bindings - 1; ++i) {
    std::string previous = "t" + std::to_string(textIndex);
    std::string name = "b" + std::to_string(i);
    switch (i % 5) {
    case 0:
      text += "t" + std::to_string(i) + " = text.normalize(" + previous + ");\n";
      textIndex = i;
      break;
    case 1:
      text += name + " = { text: " + previous + ", length: text.len(" + previous +
              "), path: broadcast(docs.path, pages) };\n";
      break;
    case 2:
      text += name + " = filter(" + previous + ", text.nonempty(" + previous + "));\n";
      break;
    case 3:
      text += name + " = list.len(reduce(" + previous + "));\n";
      break;
    default:
      text += name + ": Page<Text> = test.identity(" + previous + ");\n";
    }
  }
  text += "sink jsonl(path: \"out.jsonl\", record: { path: docs.path });\n";
  return text;
}

void runFrontendOn(benchmark::State &state, const std::string &text) {
  for (auto _ : state) {
    llvm::SourceMgr sources;
    uint32_t id = sources.AddNewSourceBuffer(
        llvm::MemoryBuffer::getMemBufferCopy(text, "bench.orch"), llvm::SMLoc());
    orch::DiagnosticEngine diags(nullptr);
    orch::FrontendResult result = orch::runFrontend(sources, id, orch::FrontendOptions{}, diags);
    if (!result.ok) {
      state.SkipWithError("the benchmark input did not compile");
      return;
    }
    benchmark::DoNotOptimize(result.file);
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(text.size()));
}

void BM_FrontendFlagshipExample(benchmark::State &state) {
  auto file = llvm::MemoryBuffer::getFile(ORCH_EXAMPLES_DIR "/pdf_to_markdown.orch");
  if (!file) {
    state.SkipWithError("cannot read the example");
    return;
  }
  runFrontendOn(state, (*file)->getBuffer().str());
}
BENCHMARK(BM_FrontendFlagshipExample)->Unit(benchmark::kMicrosecond);

void BM_Frontend10kBindings(benchmark::State &state) {
  runFrontendOn(state, generatePipeline(int(state.range(0))));
  state.counters["bindings"] = double(state.range(0));
}
BENCHMARK(BM_Frontend10kBindings)->Arg(10000)->Unit(benchmark::kMillisecond);

} // namespace
