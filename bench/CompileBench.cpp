// Compiler speed: the flagship example and a generated pipeline of 10,000 bindings, through
// the frontend alone and through the whole compiler (IR, checking passes, lowering).
#include "orch/driver/CompileDriver.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <benchmark/benchmark.h>

#include <string>

namespace {

/// A valid pipeline of `bindings` bindings mixing calls, records, filters, reduces,
/// broadcasts and annotations, each depending on earlier ones.
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

std::string flagshipExample() {
  auto file = llvm::MemoryBuffer::getFile(ORCH_EXAMPLES_DIR "/pdf_to_markdown.orch");
  return file ? (*file)->getBuffer().str() : std::string();
}

/// Runs the frontend, and with `wholeCompiler` also IR generation, the passes and lowering.
void compile(benchmark::State &state, const std::string &text, bool wholeCompiler) {
  for (auto _ : state) {
    llvm::SourceMgr sources;
    orch::DiagnosticEngine diags(nullptr);
    orch::driver::CompileRequest request;
    request.frontendOnly = !wholeCompiler;
    orch::driver::Compilation compiled =
        orch::driver::compileText(sources, text, "bench.orch", diags, request);
    if (!compiled.frontend.ok) {
      state.SkipWithError("the benchmark input did not compile");
      return;
    }
    if (wholeCompiler && !compiled.plan) {
      state.SkipWithError("the benchmark input failed the checking passes");
      return;
    }
    benchmark::DoNotOptimize(compiled);
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(text.size()));
}

void BM_FrontendFlagshipExample(benchmark::State &state) {
  compile(state, flagshipExample(), false);
}
BENCHMARK(BM_FrontendFlagshipExample)->Unit(benchmark::kMicrosecond);

void BM_CompileFlagshipExample(benchmark::State &state) { compile(state, flagshipExample(), true); }
BENCHMARK(BM_CompileFlagshipExample)->Unit(benchmark::kMicrosecond);

void BM_Frontend10kBindings(benchmark::State &state) {
  compile(state, generatePipeline(int(state.range(0))), false);
}
BENCHMARK(BM_Frontend10kBindings)->Arg(10000)->Unit(benchmark::kMillisecond);

void BM_Compile10kBindings(benchmark::State &state) {
  compile(state, generatePipeline(int(state.range(0))), true);
}
BENCHMARK(BM_Compile10kBindings)->Arg(10000)->Unit(benchmark::kMillisecond);

} // namespace
