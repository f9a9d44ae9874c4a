// Encoding and decoding (with full validation) of the flagship example's plan.
#include "BenchPlans.h"

#include "orch/plan/PlanCodec.h"

#include <benchmark/benchmark.h>

namespace {

orch::plan::Plan flagshipPlan() { return orch::bench::compileExamplePlan("pdf_to_markdown.orch"); }

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
