// End-to-end grains per second through each executor, with no-op operators and batch 64:
// the in-process thread pool, and the ZeroMQ coordinator with two workers (worker loops on
// threads of this process, talking over ipc:// with full MessagePack encoding).
#include "BenchPlans.h"

#include "orch/runtime/cluster/Coordinator.h"
#include "orch/runtime/cluster/Worker.h"
#include "orch/runtime/execution/ThreadExecutor.h"
#include "orch/runtime/operators/TestOperators.h"
#include "orch/stdlib/StandardOperators.h"

#include <benchmark/benchmark.h>

#include <filesystem>
#include <thread>
#include <unistd.h>

namespace {

using namespace orch::runtime;

const char *kPipeline = R"(
pipeline runtime_bench;
source docs = jsonl("generated") as Doc;
call split = test.split(n: 64) { batch: 64, replicas: 2 };
call work = test.identity() { batch: 64, replicas: 4 };
pages = expand(split(docs)) as Page;
sink jsonl(path: "discarded", record: { pages: reduce(work(pages)) });
)";

/// `count` rows, generated; and a sink that keeps nothing: only the runtime is measured.
OperatorRegistry benchRegistry(int64_t count) {
  OperatorRegistry registry;
  orch::stdlib::registerStandardOperators(registry);
  registerTestOperators(registry, nullptr);
  class Generated : public RowSource {
  public:
    explicit Generated(int64_t count) : left_(count) {}
    std::optional<SourceRow> next() override {
      if (left_ == 0)
        return std::nullopt;
      return SourceRow{Value::integer(--left_), {}};
    }

  private:
    int64_t left_;
  };
  class Discard : public RowSink {
  public:
    void write(std::span<const Value>) override {}
  };
  registry.addSource(
      "jsonl", [count](const OperatorConfig &) { return std::make_unique<Generated>(count); });
  registry.addSink("jsonl", [](const OperatorConfig &) { return std::make_unique<Discard>(); });
  return registry;
}

void report(benchmark::State &state, uint64_t grains) {
  state.counters["grains/s"] =
      benchmark::Counter(static_cast<double>(grains), benchmark::Counter::kIsRate);
}

void BM_InProcessGrains(benchmark::State &state) {
  const orch::plan::Plan plan = orch::bench::compilePlanText(kPipeline, "runtime_bench.orch");
  const OperatorRegistry registry = benchRegistry(state.range(0));
  uint64_t grains = 0;
  for (auto _ : state) {
    RunSummary summary = runOnThreads(plan, registry, RunOptions{}, 2);
    grains += summary.calls[0].grains + summary.calls[1].grains;
  }
  report(state, grains);
}
BENCHMARK(BM_InProcessGrains)->Arg(1000)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_ZeroMqTwoWorkersGrains(benchmark::State &state) {
  const orch::plan::Plan plan = orch::bench::compilePlanText(kPipeline, "runtime_bench.orch");
  const OperatorRegistry registry = benchRegistry(state.range(0));
  uint64_t grains = 0;
  int round = 0;
  for (auto _ : state) {
    CoordinatorOptions options;
    options.depth = uint32_t(state.range(1));
    options.endpoint =
        "ipc://" +
        (std::filesystem::temp_directory_path() /
         ("orch-bench-" + std::to_string(::getpid()) + "-" + std::to_string(round++) + ".sock"))
            .string();
    std::unique_ptr<BatchExecutor> coordinator = makeCoordinator(options);
    std::atomic<bool> stop{false};
    std::vector<std::thread> workers;
    for (int w = 0; w < 2; ++w)
      workers.emplace_back([&, w] {
        WorkerOptions worker;
        worker.endpoint = options.endpoint;
        worker.name = "bench-" + std::to_string(w);
        worker.verbose = false;
        worker.stopRequested = &stop;
        runWorker(worker, registry);
      });
    RunSummary summary = runPlan(plan, registry, *coordinator, RunOptions{});
    coordinator.reset();
    stop = true;
    for (std::thread &worker : workers)
      worker.join();
    grains += summary.calls[0].grains + summary.calls[1].grains;
  }
  report(state, grains);
}
BENCHMARK(BM_ZeroMqTwoWorkersGrains)
    ->Args({1000, 2})
    ->Args({1000, 4})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

} // namespace
