// Encoding and decoding (with full validation) of the flagship example's plan.
#include "orch/frontend/Frontend.h"
#include "orch/frontend/IrGen.h"
#include "orch/passes/Pipeline.h"
#include "orch/plan/PlanCodec.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <benchmark/benchmark.h>

namespace {

orch::plan::Plan flagshipPlan() {
  llvm::SourceMgr sources;
  auto file = llvm::MemoryBuffer::getFile(ORCH_EXAMPLES_DIR "/pdf_to_markdown.orch");
  if (!file)
    return {};
  uint32_t id = sources.AddNewSourceBuffer(std::move(*file), llvm::SMLoc());
  orch::DiagnosticEngine diags(nullptr);
  orch::FrontendResult result = orch::runFrontend(sources, id, orch::FrontendOptions{}, diags);
  if (!result.ok)
    return {};
  orch::ir::Module module = orch::generateIr(*result.file, "pdf_to_markdown.orch");
  return orch::compileModule(module, diags).value_or(orch::plan::Plan{});
}

void BM_EncodePlan(benchmark::State &state) {
  orch::plan::Plan plan = flagshipPlan();
  for (auto _ : state)
    benchmark::DoNotOptimize(orch::plan::encodePlan(plan));
}
BENCHMARK(BM_EncodePlan)->Unit(benchmark::kMicrosecond);

void BM_DecodeAndValidatePlan(benchmark::State &state) {
  std::string bytes = orch::plan::encodePlan(flagshipPlan());
  for (auto _ : state)
    benchmark::DoNotOptimize(orch::plan::decodePlan(bytes));
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(bytes.size()));
}
BENCHMARK(BM_DecodeAndValidatePlan)->Unit(benchmark::kMicrosecond);

} // namespace
