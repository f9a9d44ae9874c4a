// Encoding and decoding cost of plans.
#include "orch/plan/PlanCodec.h"

#include <benchmark/benchmark.h>

namespace {

orch::plan::Plan benchPlan() {
  orch::plan::Plan plan;
  plan.pipelineName = "pdf_to_markdown";
  plan.sourcePath = "examples/pdf_to_markdown.orch";
  return plan;
}

void BM_EncodePlan(benchmark::State &state) {
  orch::plan::Plan plan = benchPlan();
  for (auto _ : state)
    benchmark::DoNotOptimize(orch::plan::encodePlan(plan));
}
BENCHMARK(BM_EncodePlan);

void BM_DecodePlan(benchmark::State &state) {
  std::string bytes = orch::plan::encodePlan(benchPlan());
  for (auto _ : state)
    benchmark::DoNotOptimize(orch::plan::decodePlan(bytes));
}
BENCHMARK(BM_DecodePlan);

} // namespace
