// The lineage engine alone: grain transitions per second with no-op operators (reports are
// built directly from the batch's inputs) and batch 64, and bytes of engine state per live grain.
#include "BenchPlans.h"

#include "orch/runtime/engine/LineageEngine.h"

#include <benchmark/benchmark.h>

namespace {

using namespace orch::runtime;

const char *kPipeline = R"(
pipeline engine_bench;
source docs = jsonl("unused.jsonl") as Doc;
call split = test.split(n: 64) { batch: 64 };
call work = test.identity() { batch: 64 };
pages = expand(split(docs)) as Page;
sink jsonl(path: "out.jsonl", record: { pages: reduce(work(pages)) });
)";

Value childList(int64_t children) {
  ValueList list;
  for (int64_t i = 0; i < children; ++i)
    list.push_back(Value::integer(i));
  return Value::list(std::move(list));
}

/// A no-op operator: the split answers with a prepared list, the work echoes its input.
BatchReport answer(const Batch &batch, const Value &children) {
  BatchReport report;
  report.batchId = batch.id;
  report.grains.reserve(batch.grains.size());
  for (size_t i = 0; i < batch.grains.size(); ++i)
    report.grains.push_back(GrainReport{batch.grains[i].grain,
                                        batch.grains[i].generation,
                                        RowResultKind::Value,
                                        batch.call == 0 ? children : batch.inputsOf(i)[0],
                                        {}});
  return report;
}

/// Runs `documents` documents of 64 pages each through the engine; returns grain transitions.
uint64_t runDocuments(const orch::plan::Plan &plan, int64_t documents, const Value &children) {
  EngineOptions options;
  options.maxLiveRoots = 256;
  LineageEngine engine(plan, options);
  int64_t admitted = 0;
  while (!engine.complete()) {
    while (admitted < documents && engine.canAdmit())
      engine.admitRoot(0, Value::integer(admitted++));
    if (admitted == documents)
      engine.closeAdmission();
    while (std::optional<Batch> batch = engine.reserveBatch())
      engine.commit(answer(*batch, children));
    benchmark::DoNotOptimize(engine.takeFinishedRoots());
  }
  return engine.stats().grainTransitions;
}

void BM_EngineGrainTransitions(benchmark::State &state) {
  const orch::plan::Plan plan = orch::bench::compilePlanText(kPipeline, "engine_bench.orch");
  const Value children = childList(64);
  const int64_t documents = state.range(0);
  uint64_t transitions = 0;
  for (auto _ : state)
    transitions += runDocuments(plan, documents, children);
  state.counters["transitions/s"] =
      benchmark::Counter(static_cast<double>(transitions), benchmark::Counter::kIsRate);
  state.counters["grains/s"] = benchmark::Counter(
      static_cast<double>(state.iterations() * documents * 65), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_EngineGrainTransitions)->Arg(1000)->Unit(benchmark::kMillisecond);

/// Engine state per live grain: many documents expanded, none of their pages run yet.
void BM_EngineStatePerLiveGrain(benchmark::State &state) {
  const orch::plan::Plan plan = orch::bench::compilePlanText(kPipeline, "engine_bench.orch");
  const Value children = childList(64);
  const int64_t documents = state.range(0);
  double bytesPerGrain = 0;
  for (auto _ : state) {
    EngineOptions options;
    options.maxLiveRoots = static_cast<uint32_t>(documents);
    LineageEngine engine(plan, options);
    for (int64_t d = 0; d < documents; ++d)
      engine.admitRoot(0, Value::integer(d));
    while (std::optional<Batch> batch =
               engine.reserveBatch([](uint32_t call) { return call == 0; }))
      engine.commit(answer(*batch, children));
    const CallLoad &load = engine.callLoad(1);
    bytesPerGrain = static_cast<double>(engine.stateBytes()) /
                    static_cast<double>(load.waiting + load.ready + load.inFlight);
  }
  state.counters["bytes/live grain"] = bytesPerGrain;
}
BENCHMARK(BM_EngineStatePerLiveGrain)->Arg(1000)->Unit(benchmark::kMillisecond);

} // namespace
