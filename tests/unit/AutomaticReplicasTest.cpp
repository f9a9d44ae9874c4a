// Automatic replicas in real runs (threads, and local worker processes over ZeroMQ): the
// bottleneck Call grows while cores are idle and says why, a pinned Call keeps its count, the
// outputs are those of any other run, a Python model that loads slowly grows without its load
// counting against its Call's timeout, and in a distributed run a consumer whose inputs are
// kept on another worker gets a replica there, so that few values cross between workers.
#include "RuntimeFixture.h"
#include "orch/runtime/cluster/Coordinator.h"
#include "orch/runtime/execution/ThreadExecutor.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

namespace orch::runtime {
namespace {

class AutomaticReplicasTest : public orch::testing::RuntimeFixture {
protected:
  void SetUp() override {
    RuntimeFixture::SetUp();
    std::string rows;
    for (int i = 0; i < kRows; ++i)
      rows += "{\"id\": " + std::to_string(i) + "}\n";
    writeFile("rows.jsonl", rows);
  }

  /// `slow` (20 ms a row, replicas as the runtime decides) feeds `fast` (pinned to one).
  plan::Plan bottleneckPlan() {
    return compile(R"(
pipeline bottleneck;
source rows = jsonl("$DIR/rows.jsonl") as Doc;
call slow = test.sleep(ms: 20);
call fast = test.sleep(ms: 1) { replicas: 1 };
sink jsonl(path: "$DIR/out/rows.jsonl", record: { id: rows.id, v: fast(slow(rows.id)) });
)");
  }

  RunOptions recording(RunRecorder &recorder) {
    RunOptions options;
    options.recorder = &recorder;
    return options;
  }

  void expectEveryRowWritten() {
    std::vector<std::string> written = lines("out/rows.jsonl");
    std::set<std::string> expected;
    for (int i = 0; i < kRows; ++i)
      expected.insert("{\"id\":" + std::to_string(i) + ",\"v\":" + std::to_string(i) + "}");
    EXPECT_EQ(std::set<std::string>(written.begin(), written.end()), expected);
  }

  /// The bottleneck grew, with a reason that names its busy share and the idle cores; the pinned
  /// Call did not change; batches of the bottleneck ran on more than one replica.
  void expectTheBottleneckGrew(const RunSummary &summary, const RunRecorder &recorder) {
    ASSERT_TRUE(summary.started) << summary.error.value_or("");
    EXPECT_FALSE(summary.error) << *summary.error;
    const CallSummary &slow = summary.calls[0];
    const CallSummary &fast = summary.calls[1];
    EXPECT_TRUE(slow.automaticReplicas);
    EXPECT_FALSE(fast.automaticReplicas);
    ASSERT_FALSE(slow.replicaChanges.empty()) << "the bottleneck kept one replica";
    EXPECT_GE(slow.replicas, 2);
    EXPECT_GE(slow.replicaChanges.front().replicas, 2u);
    EXPECT_NE(slow.replicaChanges.front().why.find("cores idle"), std::string::npos)
        << slow.replicaChanges.front().why;
    EXPECT_TRUE(fast.replicaChanges.empty());
    EXPECT_EQ(fast.replicas, 1);
    EXPECT_GT(slow.replicaSeconds, 0);
    std::set<std::string> places;
    for (const BatchRecord &batch : recorder.batches())
      if (batch.call == 0)
        places.insert(batch.place);
    EXPECT_GE(places.size(), 2u);
    expectEveryRowWritten();
  }

  /// A Python model that takes 3 s to load and 50 ms a row (7.5 s of work: a second replica
  /// pays), with a 500 ms timeout: a batch that waited for a new replica's load would time out
  /// (the run loop's backstop for a declared operator's batch is its timeout and 2 s).
  plan::Plan slowModelPlan() {
    writeFile("model.py", R"(
import time
class SlowToLoad:
    def __init__(self):
        time.sleep(3)
    def __call__(self, values):
        time.sleep(0.05 * len(values))
        return values
)");
    return compile(R"(
pipeline model;
operator slow.model(value: Json) -> Json = python("model.py", class: "SlowToLoad");
source rows = jsonl("$DIR/rows.jsonl") as Doc;
call model = slow.model() { batch: 1, timeout: 500ms };
sink jsonl(path: "$DIR/out/rows.jsonl", record: { id: rows.id, v: model(rows.id) });
)",
                   path("model.orch"));
  }

  /// Two threads, or two local worker processes (that keep every value they make when
  /// `keepValues`).
  std::unique_ptr<BatchExecutor> twoThreadsOrWorkers(bool threads, bool keepValues = false) {
    if (threads)
      return makeThreadExecutor(registry_, 2);
    CoordinatorOptions options;
    options.localWorkers = 2;
    options.workerProgram = ORCH_WORKER_BINARY;
    options.keepValuesOver = keepValues ? 1 : kDefaultKeepValuesOver;
    return makeCoordinator(options);
  }

  /// `make` (20 ms a row, `makeOptions`) feeds `use` (`useMs` a row, automatic replicas), run
  /// on two local worker processes that keep every value they make.
  RunSummary runProducerAndConsumer(const std::string &makeOptions, int useMs,
                                    RunRecorder &recorder) {
    const plan::Plan plan = compile(R"(
pipeline locality;
source rows = jsonl("$DIR/rows.jsonl") as Doc;
call make = test.sleep(ms: 20) )" + makeOptions +
                                    R"(;
call use = test.sleep(ms: )" + std::to_string(useMs) +
                                    R"();
sink jsonl(path: "$DIR/out/rows.jsonl", record: { id: rows.id, v: use(make(rows.id)) });
)");
    std::unique_ptr<BatchExecutor> coordinator = twoThreadsOrWorkers(false, true);
    RunSummary summary = runPlan(plan, registry_, *coordinator, recording(recorder));
    EXPECT_TRUE(summary.started) << summary.error.value_or("");
    EXPECT_FALSE(summary.error) << summary.error.value_or("");
    return summary;
  }

  /// The producer's worker (call 0, one replica), and the workers of the consumer's (call 1)
  /// batches sent half a second or more after `after`.
  static std::pair<std::string, std::map<std::string, uint64_t>>
  producerAndConsumerWorkers(const RunRecorder &recorder, double after) {
    std::string producer;
    std::map<std::string, uint64_t> consumers;
    for (const BatchRecord &batch : recorder.batches()) {
      const std::string worker = batch.place.substr(0, batch.place.find('/'));
      if (batch.call == 0)
        producer = worker;
      else if (batch.dispatched > after + 0.5)
        ++consumers[worker];
    }
    return {producer, consumers};
  }

  static constexpr int kRows = 150;
};

TEST_F(AutomaticReplicasTest, OnThreadsTheBottleneckGrowsIntoIdleThreads) {
  RunRecorder recorder;
  const plan::Plan plan = bottleneckPlan();
  const RunSummary summary = runOnThreads(plan, registry_, recording(recorder), 4);
  expectTheBottleneckGrew(summary, recorder);
}

TEST_F(AutomaticReplicasTest, OnWorkerProcessesTheBottleneckGrowsOntoIdleWorkers) {
  std::unique_ptr<BatchExecutor> coordinator = twoThreadsOrWorkers(false);
  RunRecorder recorder;
  const plan::Plan plan = bottleneckPlan();
  const RunSummary summary = runPlan(plan, registry_, *coordinator, recording(recorder));
  expectTheBottleneckGrew(summary, recorder);
}

TEST_F(AutomaticReplicasTest, AModelThatLoadsSlowlyGrowsWithoutItsLoadCountingAgainstItsTimeout) {
  const plan::Plan plan = slowModelPlan();
  for (const bool threads : {true, false}) {
    SCOPED_TRACE(threads ? "threads" : "worker processes");
    std::filesystem::remove_all(path("out"));
    std::unique_ptr<BatchExecutor> executor = twoThreadsOrWorkers(threads);
    RunRecorder recorder;
    const RunSummary summary = runPlan(plan, registry_, *executor, recording(recorder));
    ASSERT_TRUE(summary.started) << summary.error.value_or("");
    EXPECT_FALSE(summary.error) << *summary.error;
    EXPECT_EQ(summary.failed, 0u);
    EXPECT_EQ(summary.engine.batchTimeouts, 0u) << "a batch waited for a model to load";
    ASSERT_FALSE(summary.calls[0].replicaChanges.empty());
    EXPECT_EQ(summary.calls[0].replicas, 2);
    expectEveryRowWritten();
  }
}

TEST_F(AutomaticReplicasTest, AConsumerGetsAReplicaWhereItsInputsAreKept) {
  // Every value stays on the worker that made it. The pinned producer lives on the first
  // worker, the consumer starts on the second: its batches fetch their inputs across until it
  // has a replica next to them.
  RunRecorder recorder;
  const RunSummary summary = runProducerAndConsumer("{ replicas: 1 }", 1, recorder);
  const CallSummary &use = summary.calls[1];
  ASSERT_EQ(use.replicaChanges.size(), 1u);
  EXPECT_EQ(use.replicaChanges[0].replicas, 2u);
  EXPECT_NE(use.replicaChanges[0].why.find("found their inputs kept on worker local-"),
            std::string::npos)
      << use.replicaChanges[0].why;
  // After the change, the consumer's batches run where the producer's values are.
  const auto [producer, consumers] = producerAndConsumerWorkers(recorder, use.replicaChanges[0].at);
  ASSERT_EQ(consumers.size(), 1u) << "every later batch runs next to its input";
  EXPECT_EQ(consumers.begin()->first, producer);
  expectEveryRowWritten();
}

TEST_F(AutomaticReplicasTest, WithoutIdleCoresAConsumerMovesToItsInputs) {
  // The pinned producer counts as more cores than both workers have (cpus: 8) while it runs, a
  // quarter of the time is enough even on a loaded machine: no core is idle for a second
  // consumer replica, so the consumer's one replica moves next to the values it reads.
  RunRecorder recorder;
  const RunSummary summary = runProducerAndConsumer("{ replicas: 1, cpus: 8 }", 10, recorder);
  const CallSummary &use = summary.calls[1];
  ASSERT_FALSE(use.replicaChanges.empty());
  EXPECT_TRUE(use.replicaChanges[0].moved) << use.replicaChanges[0].why;
  EXPECT_EQ(use.replicaChanges[0].replicas, 1u);
  EXPECT_EQ(use.replicas, 1) << "a move keeps the count";
  const auto [producer, consumers] = producerAndConsumerWorkers(recorder, use.replicaChanges[0].at);
  ASSERT_EQ(consumers.size(), 1u);
  EXPECT_EQ(consumers.begin()->first, producer);
  expectEveryRowWritten();
}

TEST_F(AutomaticReplicasTest, AReplicaThatCannotStartGoesAndTheCallKeepsTheOthers) {
  // The model's second instance refuses to load: every row still runs on the first, the count
  // goes back with the reason, and no further replica is tried.
  writeFile("once.py", R"(
import os, time
MARK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "loaded")
class Once:
    def __init__(self):
        if os.path.exists(MARK):
            raise RuntimeError("a second instance refuses to load")
        open(MARK, "w").write("")
    def __call__(self, values):
        time.sleep(0.03 * len(values))
        return values
)");
  const plan::Plan plan = compile(R"(
pipeline once;
operator my.once(value: Json) -> Json = python("once.py", class: "Once");
source rows = jsonl("$DIR/rows.jsonl") as Doc;
call model = my.once() { batch: 1 };
sink jsonl(path: "$DIR/out/rows.jsonl", record: { id: rows.id, v: model(rows.id) });
)",
                                  path("once.orch"));
  for (const bool threads : {true, false}) {
    SCOPED_TRACE(threads ? "threads" : "worker processes");
    std::filesystem::remove_all(path("out"));
    std::filesystem::remove(path("loaded"));
    std::unique_ptr<BatchExecutor> executor = twoThreadsOrWorkers(threads);
    RunRecorder recorder;
    const RunSummary summary = runPlan(plan, registry_, *executor, recording(recorder));
    ASSERT_TRUE(summary.started) << summary.error.value_or("");
    EXPECT_EQ(summary.failed, 0u);
    const std::vector<CallSummary::ReplicaChange> &changes = summary.calls[0].replicaChanges;
    ASSERT_EQ(changes.size(), 2u) << "grown once, back once, never again";
    EXPECT_EQ(changes[0].replicas, 2u);
    EXPECT_EQ(changes[1].replicas, 1u);
    EXPECT_NE(changes[1].why.find("could not start"), std::string::npos) << changes[1].why;
    for (const BatchRecord &batch : recorder.batches())
      EXPECT_EQ(batch.outcome, "committed") << batch.place;
    expectEveryRowWritten();
  }
}

} // namespace
} // namespace orch::runtime
