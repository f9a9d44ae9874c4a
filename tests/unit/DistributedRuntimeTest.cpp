// The distributed runtime against the in-process one: identical outputs with worker
// processes, and a live coordinator that survives a flood of random and mutated messages.
#include "RandomPrograms.h"
#include "RuntimeFixture.h"

#include "orch/runtime/cluster/Coordinator.h"
#include "orch/runtime/cluster/CurveKeys.h"
#include "orch/runtime/cluster/Protocol.h"
#include "orch/runtime/cluster/Worker.h"
#include "orch/runtime/execution/ThreadExecutor.h"
#include "orch/runtime/operators/TestOperators.h"
#include "orch/stdlib/StandardOperators.h"

#include <gtest/gtest.h>
#include <zmq.hpp>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <sys/socket.h>
#include <sys/un.h>
#include <thread>

namespace orch::runtime {
namespace {

namespace fs = std::filesystem;

/// A run's outputs in a form that does not depend on timing: source rows in order, each with
/// its status and rows.
std::vector<std::string> normalized(std::vector<RootResult> roots) {
  std::sort(roots.begin(), roots.end(),
            [](const RootResult &a, const RootResult &b) { return a.sourceRow < b.sourceRow; });
  std::vector<std::string> lines;
  for (const RootResult &root : roots) {
    std::string line = std::to_string(root.sourceRow) + " " + rootStatusName(root.status);
    for (const SinkRow &row : root.rows) {
      line += " | " + std::to_string(row.sink) + ":";
      for (uint32_t ordinal : row.path)
        line += std::to_string(ordinal) + ".";
      line += rowStatusName(row.status);
      for (const Value &value : row.values)
        line += " " + value.str();
    }
    lines.push_back(line);
  }
  return lines;
}

/// The `orch worker` processes this test process started (not yet reaped).
std::vector<pid_t> localWorkerProcesses() {
  std::vector<pid_t> pids;
  for (const fs::directory_entry &entry : fs::directory_iterator("/proc")) {
    const pid_t pid = static_cast<pid_t>(std::atoi(entry.path().filename().c_str()));
    if (pid <= 0)
      continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    std::getline(stat, line);
    const size_t name = line.rfind(')');
    if (name == std::string::npos)
      continue;
    std::istringstream fields(line.substr(name + 1));
    char state = 0;
    pid_t parent = 0;
    fields >> state >> parent;
    std::ifstream cmdline(entry.path() / "cmdline");
    std::string command((std::istreambuf_iterator<char>(cmdline)), {});
    if (parent == ::getpid() && state != 'Z' && command.find("worker") != std::string::npos)
      pids.push_back(pid);
  }
  return pids;
}

/// test.identity that holds its batches until `open` is set (at most a minute), and sets
/// `reached` (if given) when the first batch arrives: the run is then in full swing.
class Gate : public Operator {
public:
  explicit Gate(const std::atomic<bool> &open, std::atomic<bool> *reached = nullptr)
      : open_(open), reached_(reached) {}
  void process(std::span<const OperatorRow> rows, std::vector<RowResult> &results) override {
    if (reached_)
      reached_->store(true);
    for (int waited = 0; !open_.load() && waited < 60'000; ++waited)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    for (const OperatorRow &row : rows)
      results.push_back(RowResult::ok(row.inputs[0]));
  }

private:
  const std::atomic<bool> &open_;
  std::atomic<bool> *reached_;
};

constexpr const char *kGatedProgram = R"(pipeline gated;
source rows = jsonl("$DIR/in.jsonl") as Doc;
pages = expand(test.split(rows, field: "n")) as Page;
slow = test.sleep(pages, ms: 4) { batch: 4, replicas: 2 };
gated = test.identity(slow) { batch: 64 };
sink jsonl(path: "$DIR/docs.jsonl", record: { id: rows.id, pages: reduce(gated) });
)";

/// Worker sessions on threads of this process ("thread-0", ...), serving `endpoint` until
/// stop() (or the destructor) tells them to leave; `configure` may change each one's options.
class ThreadWorkers {
public:
  ThreadWorkers(const std::string &endpoint, const OperatorRegistry &registry, int count,
                std::function<void(int, WorkerOptions &)> configure = nullptr) {
    for (int w = 0; w < count; ++w)
      threads_.emplace_back([this, endpoint, &registry, w, configure] {
        WorkerOptions worker;
        worker.endpoint = endpoint;
        worker.name = "thread-" + std::to_string(w);
        worker.stopRequested = &stop_;
        if (configure)
          configure(w, worker);
        runWorker(worker, registry);
      });
  }
  ~ThreadWorkers() { stop(); }
  void stop() {
    stop_ = true;
    for (std::thread &thread : threads_)
      if (thread.joinable())
        thread.join();
  }

private:
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

class DistributedRuntimeTest : public orch::testing::RuntimeFixture {
protected:
  void writeRows(const std::vector<std::pair<int, int>> &rows) {
    std::ofstream out(dir_ / "in.jsonl");
    for (const auto &[id, children] : rows)
      out << "{\"id\": " << id << ", \"n\": " << children << "}\n";
  }

  RunOptions collecting(std::vector<RootResult> &roots) {
    RunOptions options;
    options.onRootFinished = [&roots](const RootResult &root, auto &) { roots.push_back(root); };
    return options;
  }

  std::vector<std::string> runInProcess(const plan::Plan &plan) {
    std::vector<RootResult> roots;
    RunSummary summary = runOnThreads(plan, registry_, collecting(roots), 3);
    EXPECT_TRUE(summary.started) << summary.error.value_or("");
    return normalized(std::move(roots));
  }

  std::vector<std::string> runWithWorkerProcesses(const plan::Plan &plan, unsigned workers,
                                                  RunSummary *summaryOut = nullptr,
                                                  std::optional<CurveKeyPair> curveKey = {}) {
    CoordinatorOptions options;
    options.curveKey = std::move(curveKey);
    options.localWorkers = workers;
    options.workerProgram = ORCH_WORKER_BINARY;
    options.heartbeatMs = 200;
    std::unique_ptr<BatchExecutor> coordinator = makeCoordinator(options);
    std::vector<RootResult> roots;
    RunSummary summary = runPlan(plan, registry_, *coordinator, collecting(roots));
    EXPECT_TRUE(summary.started) << summary.error.value_or("");
    EXPECT_FALSE(summary.error) << *summary.error;
    if (summaryOut)
      *summaryOut = summary;
    return normalized(std::move(roots));
  }

  /// Runs `plan` on three local worker processes (heartbeat 100 ms, up to 20 re-runs of a batch
  /// lost to them) while, at `moments` random moments `pauseMs` apart (seeded by `seed`), a
  /// random worker process is handed to `disturb` (with the random source, for more draws).
  RunSummary runDisturbed(const plan::Plan &plan, std::vector<RootResult> &roots, int moments,
                          uint32_t seed, std::pair<int, int> pauseMs,
                          const std::function<void(pid_t, std::mt19937 &)> &disturb) {
    CoordinatorOptions options;
    options.localWorkers = 3;
    options.workerProgram = ORCH_WORKER_BINARY;
    options.heartbeatMs = 100;
    std::unique_ptr<BatchExecutor> coordinator = makeCoordinator(options);
    RunOptions runOptions = collecting(roots);
    // Many disturbances may hit one batch more than the default three times.
    runOptions.engine.infrastructureRetries = 20;
    std::atomic<bool> over{false};
    std::thread chaos([&] {
      std::mt19937 random(seed);
      for (int moment = 0; moment < moments && !over; ++moment) {
        std::this_thread::sleep_for(std::chrono::milliseconds(
            std::uniform_int_distribution<int>(pauseMs.first, pauseMs.second)(random)));
        std::vector<pid_t> workers = localWorkerProcesses();
        if (workers.empty() || over)
          continue;
        disturb(workers[random() % workers.size()], random);
      }
    });
    RunSummary summary = runPlan(plan, registry_, *coordinator, runOptions);
    over = true;
    chaos.join();
    coordinator.reset();
    return summary;
  }
};

TEST_F(DistributedRuntimeTest, FourWorkerProcessesGiveTheInProcessOutputs) {
  writeRows({{0, 3}, {1, 0}, {2, 5}, {3, 1}, {4, 4}, {5, 2}});
  std::vector<std::string> programs{
      R"(pipeline pages;
source rows = jsonl("$DIR/in.jsonl") as Doc;
call split = test.split(field: "n") { replicas: 2 };
call work = test.identity() { batch: 4, replicas: 3 };
pages = expand(split(rows)) as Page;
kept = filter(work(pages), math.gt(pages, 0));
sink jsonl(path: "$DIR/pages.jsonl", record: { doc: broadcast(rows.id, pages), page: kept });
sink jsonl(path: "$DIR/docs.jsonl", record: { id: rows.id, pages: reduce(kept) });
)",
      R"(pipeline failing;
source rows = jsonl("$DIR/in.jsonl") as Doc;
pages = expand(test.split(rows, field: "n")) as Page;
checked = test.fail(pages, kind: "batch", ordinals: "1") { batch: 3, recovery: "isolate" };
sink jsonl(path: "$DIR/docs.jsonl", record: { id: rows.id, pages: reduce(checked) });
)"};
  orch::testing::Random random(2026);
  for (int i = 0; i < 12; ++i) {
    orch::testing::ProgramShape shape;
    shape.groupFailures = false;
    shape.retriedFailures = false;
    shape.sinkDirectory = dir_.string() + "/";
    std::string program = orch::testing::ProgramGenerator(random, shape).generate();
    program.replace(program.find("\"in.jsonl\""), 10, "\"$DIR/in.jsonl\"");
    programs.push_back(program);
  }
  for (const std::string &program : programs) {
    plan::Plan plan = compile(program);
    std::vector<std::string> inProcess = runInProcess(plan);
    ASSERT_EQ(inProcess.size(), 6u) << program;
    EXPECT_EQ(runWithWorkerProcesses(plan, 4), inProcess) << program;
  }
}

TEST_F(DistributedRuntimeTest, ABatchWaitingBehindAnotherOnItsReplicaIsNotTimedOut) {
  // One replica, two batches sent ahead of it: each runs 200 ms, the timeout is 300 ms. Counted
  // from dispatch, the second batch of every pair timed out while it waited.
  writeRows({{0, 0}, {1, 0}, {2, 0}, {3, 0}, {4, 0}, {5, 0}});
  plan::Plan plan = compile(R"(pipeline queued;
source rows = jsonl("$DIR/in.jsonl") as Doc;
slow = test.sleep(rows.id, ms: 200) { batch: 1, timeout: 300ms };
sink jsonl(path: "$DIR/out.jsonl", record: { id: slow });
)");
  RunSummary summary;
  std::vector<std::string> rows = runWithWorkerProcesses(plan, 1, &summary);
  ASSERT_EQ(rows.size(), 6u);
  for (const std::string &row : rows)
    EXPECT_NE(row.find(" written"), std::string::npos) << row;
  EXPECT_EQ(summary.engine.infrastructureFailures, 0u);
  EXPECT_EQ(summary.written, 6u);
}

TEST_F(DistributedRuntimeTest, AHungBatchIsStoppedWithItsWorkerAndTheRunEnds) {
  // The batches of rows 1 and 2 never return by themselves (ten minutes); their worker is
  // killed at each timeout and replaced, and each batch is retried once (isolate) before its
  // row fails; row 0 is dropped without waiting for them.
  writeRows({{0, 0}, {1, 0}, {2, 0}});
  plan::Plan plan = compile(R"(pipeline hung;
source rows = jsonl("$DIR/in.jsonl") as Doc;
hangs = math.gt(list.len(test.split(rows, field: "id")), 0);
hung = test.sleep(filter(rows, hangs), ms: 600000) { timeout: 300ms };
sink jsonl(path: "$DIR/out.jsonl", record: { id: rows.id, hung: hung });
)");
  RunSummary summary;
  std::vector<std::string> rows = runWithWorkerProcesses(plan, 2, &summary);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_NE(rows[0].find("0 dropped"), std::string::npos) << rows[0];
  EXPECT_NE(rows[1].find("1 failed"), std::string::npos) << rows[1];
  EXPECT_NE(rows[2].find("2 failed"), std::string::npos) << rows[2];
  EXPECT_EQ(summary.engine.batchTimeouts, 4u) << "two hung rows, each run and retried once";
  EXPECT_NE(summary.executor.find("replaced"), std::string::npos) << summary.executor;
}

TEST_F(DistributedRuntimeTest, AValueTooLargeForAMessageFailsOnlyItsRowUnderEveryExecutor) {
  // A value nested 70 levels deep cannot travel (values nest at most 60): before, the worker
  // refused the batch it could not read and the run never ended. (Lists of any length travel:
  // two million children, beside it, are written.)
  {
    std::ofstream out(dir_ / "in.jsonl");
    out << "{\"id\": 0, \"n\": 3, \"deep\": []}\n"
        << "{\"id\": 1, \"n\": 2, \"deep\": " << std::string(70, '[') << std::string(70, ']')
        << "}\n"
        << "{\"id\": 2, \"n\": 2000000, \"deep\": [1]}\n";
  }
  plan::Plan plan = compile(R"(pipeline huge;
source rows = jsonl("$DIR/in.jsonl") as Doc;
counts = test.split(rows, field: "n");
sink jsonl(path: "$DIR/out.jsonl", record: { id: rows.id, n: list.len(counts), deep: test.identity(rows.deep) });
)");
  std::vector<std::string> inProcess = runInProcess(plan);
  ASSERT_EQ(inProcess.size(), 3u);
  EXPECT_NE(inProcess[0].find("0 written"), std::string::npos) << inProcess[0];
  EXPECT_NE(inProcess[1].find("1 failed"), std::string::npos) << inProcess[1];
  EXPECT_NE(inProcess[2].find("2 written"), std::string::npos) << inProcess[2];
  EXPECT_NE(inProcess[2].find("2000000"), std::string::npos) << inProcess[2];
  EXPECT_EQ(runWithWorkerProcesses(plan, 2), inProcess);
}

TEST_F(DistributedRuntimeTest, ChaosKilledStoppedAndHungWorkersChangeNoOutput) {
  // About 4,000 pages through three Calls (some 12,000 grains) while, at 20 random moments, a
  // worker process is killed with SIGKILL or stopped with SIGSTOP; and page 2 of five
  // documents hangs the first time it runs (a batch that never returns until its timeout).
  orch::testing::Random random(77);
  std::vector<std::pair<int, int>> rows;
  std::set<int> hanging;
  while (hanging.size() < 5)
    hanging.insert(std::uniform_int_distribution<int>(0, 399)(random));
  {
    std::ofstream out(dir_ / "in.jsonl");
    for (int id = 0; id < 400; ++id)
      out << "{\"id\": " << id << ", \"n\": " << 1 + id % 19
          << ", \"hang\": " << (hanging.count(id) ? "true" : "false") << "}\n";
  }
  const std::string program = R"(pipeline chaos;
source rows = jsonl("$DIR/in.jsonl") as Doc;
call split = test.split(field: "n") { replicas: 2 };
call work = test.sleep(ms: 3) { batch: 8, replicas: 4 };
call guard = test.fail(kind: "hang", ordinals: "2", when: "hang", attempts: 1, marks: "$DIR/MARKS") { batch: 4, replicas: 2, timeout: 500ms };
pages = expand(split(rows)) as Page;
checked = guard({ page: work(pages), hang: broadcast(rows.hang, pages) });
sink jsonl(path: "$DIR/SINK.jsonl", record: { id: rows.id, pages: reduce(checked) });
)";
  auto planFor = [&](const std::string &name) {
    std::string text = program;
    text.replace(text.find("MARKS"), 5, "marks-" + name);
    text.replace(text.find("SINK"), 4, name);
    fs::create_directories(dir_ / ("marks-" + name));
    return compile(text);
  };
  const std::vector<std::string> undisturbed = runInProcess(planFor("undisturbed"));
  ASSERT_EQ(undisturbed.size(), 400u);
  for (const std::string &row : undisturbed)
    ASSERT_NE(row.find(" written"), std::string::npos) << row;

  std::vector<RootResult> roots;
  int killed = 0, stopped = 0;
  RunSummary summary = runDisturbed(planFor("chaos"), roots, 20, 5, {40, 120},
                                    [&](pid_t victim, std::mt19937 &draw) {
                                      if (draw() % 2)
                                        killed += ::kill(victim, SIGKILL) == 0;
                                      else
                                        stopped += ::kill(victim, SIGSTOP) == 0;
                                    });
  EXPECT_FALSE(summary.error) << *summary.error;
  EXPECT_EQ(killed + stopped, 20) << "the run outlasted the twenty moments";
  EXPECT_GT(killed, 0);
  EXPECT_GT(stopped, 0);
  EXPECT_GT(summary.engine.infrastructureFailures, 0u);
  EXPECT_EQ(normalized(roots), undisturbed);
  // Nothing written twice, nothing missing.
  std::vector<std::string> written = lines("chaos.jsonl");
  EXPECT_EQ(written.size(), 400u);
  EXPECT_EQ(std::set<std::string>(written.begin(), written.end()).size(), 400u);
  EXPECT_TRUE(localWorkerProcesses().empty()) << "no worker outlives the run";
}

/// A counter of the run's executor (BatchExecutor::counters), or 0.
uint64_t executorCounter(const RunSummary &summary, const std::string &name) {
  for (const auto &[counter, value] : summary.executorCounters)
    if (counter == name)
      return value;
  return 0;
}

constexpr const char *kKeptValuesProgram = R"(pipeline kept;
source rows = jsonl("$DIR/in.jsonl") as Doc;
pages = expand(test.split(rows, field: "n")) as Page;
images = test.blob(pages, bytes: 131072) { batch: 4, replicas: 3 };
slow = test.sleep(images, ms: 3) { batch: 4, replicas: 3 };
sums = test.checksum(slow) { batch: 8, replicas: 2 };
sink jsonl(path: "$DIR/SINK.jsonl", record: { id: rows.id, sums: reduce(sums) });
)";

TEST_F(DistributedRuntimeTest, ValuesStayOnTheirWorkerAndTheCoordinatorCarriesReferences) {
  // 128 KiB values made by one Call and read by the next two: with locality they stay on the
  // worker that made them (the coordinator carries references); without, every byte goes
  // through it. Same outputs either way, and the same as in process.
  writeRows({{0, 20}, {1, 7}, {2, 31}, {3, 1}, {4, 12}});
  std::string text = kKeptValuesProgram;
  text.replace(text.find("SINK"), 4, "sums");
  plan::Plan plan = compile(text);
  const std::vector<std::string> inProcess = runInProcess(plan);
  ASSERT_EQ(inProcess.size(), 5u);
  RunSummary kept, inline_;
  EXPECT_EQ(runWithWorkerProcesses(plan, 3, &kept), inProcess);
  CoordinatorOptions options;
  options.localWorkers = 3;
  options.workerProgram = ORCH_WORKER_BINARY;
  options.keepValuesOver = 0;
  std::unique_ptr<BatchExecutor> coordinator = makeCoordinator(options);
  std::vector<RootResult> roots;
  inline_ = runPlan(plan, registry_, *coordinator, collecting(roots));
  coordinator.reset();
  EXPECT_EQ(normalized(roots), inProcess);
  const uint64_t pages = 20 + 7 + 31 + 1 + 12;
  // images and slow: two kept values per page.
  EXPECT_EQ(executorCounter(kept, "values_kept_on_workers"), 2 * pages);
  EXPECT_EQ(executorCounter(inline_, "values_kept_on_workers"), 0u);
  const uint64_t through =
      executorCounter(kept, "batch_bytes_sent") + executorCounter(kept, "result_bytes_received");
  const uint64_t throughInline = executorCounter(inline_, "batch_bytes_sent") +
                                 executorCounter(inline_, "result_bytes_received");
  // Inline, each page's image crosses the coordinator four times (two results, two batches).
  EXPECT_GT(throughInline, 4 * pages * 131072);
  EXPECT_LT(through * 100, throughInline) << through << " vs " << throughInline;
}

TEST_F(DistributedRuntimeTest, KilledWorkersThatKeepValuesLoseNothing) {
  // Workers that keep the values other Calls have yet to read are killed at random moments:
  // their values are computed again from their lineage (the producing grain's inputs) and the
  // outputs do not change.
  std::vector<std::pair<int, int>> rows;
  for (int id = 0; id < 60; ++id)
    rows.emplace_back(id, 1 + id % 13);
  writeRows(rows);
  auto planFor = [&](const std::string &name) {
    std::string text = kKeptValuesProgram;
    text.replace(text.find("SINK"), 4, name);
    return compile(text);
  };
  const std::vector<std::string> undisturbed = runInProcess(planFor("undisturbed"));
  ASSERT_EQ(undisturbed.size(), 60u);

  std::vector<RootResult> roots;
  int killed = 0;
  RunSummary summary =
      runDisturbed(planFor("killed"), roots, 8, 11, {60, 160},
                   [&](pid_t victim, std::mt19937 &) { killed += ::kill(victim, SIGKILL) == 0; });
  EXPECT_FALSE(summary.error) << *summary.error;
  EXPECT_GT(killed, 0);
  EXPECT_GT(executorCounter(summary, "values_recomputed"), 0u) << summary.executor;
  EXPECT_EQ(normalized(roots), undisturbed);
  EXPECT_EQ(lines("killed.jsonl").size(), 60u);
}

TEST_F(DistributedRuntimeTest, ValuesOfAWorkerOthersCannotReachArePassedOnByTheCoordinator) {
  // Both workers announce a peer endpoint nobody listens on (as behind firewalls): a batch that
  // needs one worker's values on the other fails its fetch there and comes back lost, and from
  // then on the coordinator relays that worker's values to the other. The outputs do not
  // change.
  writeRows({{0, 12}, {1, 9}, {2, 15}});
  std::string text = kKeptValuesProgram;
  text.replace(text.find("SINK"), 4, "sums");
  plan::Plan plan = compile(text);
  const std::vector<std::string> inProcess = runInProcess(plan);
  CoordinatorOptions options;
  options.endpoint = "ipc://" + (dir_ / "coordinator.sock").string();
  options.heartbeatMs = 100;
  std::unique_ptr<BatchExecutor> coordinator = makeCoordinator(options);
  ThreadWorkers workers(options.endpoint, registry_, 2, [](int, WorkerOptions &worker) {
    worker.peerEndpoint = "tcp://127.0.0.1:*";
    worker.peerAnnounce = "tcp://127.0.0.1:9";
    worker.verbose = false;
  });
  std::vector<RootResult> roots;
  RunSummary summary = runPlan(plan, registry_, *coordinator, collecting(roots));
  workers.stop();
  EXPECT_FALSE(summary.error) << *summary.error;
  EXPECT_EQ(normalized(roots), inProcess);
  EXPECT_GT(executorCounter(summary, "values_relayed_by_coordinator"), 0u) << summary.executor;
  EXPECT_GT(summary.engine.infrastructureFailures, 0u) << "the fetches that found out";
}

TEST_F(DistributedRuntimeTest, WorkersOfACurveRunFetchKeptValuesFromEachOther) {
  // Three workers, two replicas of the last Call: some batches run where their inputs are not
  // kept, and those fetch them from the owner's peer socket, which admits the run's keys only.
  writeRows({{0, 9}, {1, 14}, {2, 3}, {3, 22}});
  std::string text = kKeptValuesProgram;
  text.replace(text.find("SINK"), 4, "sums");
  plan::Plan plan = compile(text);
  const std::vector<std::string> inProcess = runInProcess(plan);
  RunSummary summary;
  EXPECT_EQ(runWithWorkerProcesses(plan, 3, &summary, generateCurveKeyPair("coordinator")),
            inProcess);
  EXPECT_EQ(executorCounter(summary, "values_kept_on_workers"), 2u * (9 + 14 + 3 + 22));
  EXPECT_GT(executorCounter(summary, "values_fetched_between_workers"), 0u) << summary.executor;
}

/// Random bytes, mutated valid messages, valid messages out of place and extra frames.
class MessageFuzzer {
public:
  explicit MessageFuzzer(uint64_t seed) : random_(seed) {}

  std::vector<std::string> next() {
    std::vector<std::string> frames{body()};
    if (orch::testing::chance(random_, 0.05))
      frames.push_back(body());
    return frames;
  }

private:
  std::string randomBytes(size_t limit) {
    std::string bytes(size_t(orch::testing::pick(random_, 0, int(limit))), '\0');
    for (char &c : bytes)
      c = char(orch::testing::pick(random_, 0, 255));
    return bytes;
  }

  Message validMessage() {
    switch (orch::testing::pick(random_, 0, 7)) {
    case 0: {
      HelloMessage hello;
      // Never the protocol's version: a fuzzer must not become a worker that swallows batches.
      hello.version = uint32_t(orch::testing::pick(random_, kProtocolVersion + 1, 9));
      hello.worker = randomBytes(8);
      return hello;
    }
    case 1:
      return WelcomeMessage{kProtocolVersion, 10, 1, randomBytes(40), {}, {}};
    case 2:
      return InitMessage{uint32_t(orch::testing::pick(random_, 0, 5)), 0, {"value"}};
    case 3: {
      BatchMessage batch;
      batch.batch.id = uint64_t(orch::testing::pick(random_, 0, 100));
      return batch;
    }
    case 4: {
      ResultMessage result;
      result.report.batchId = uint64_t(orch::testing::pick(random_, 0, 1000));
      result.report.grains.push_back(GrainReport{
          GrainRef{NodeId(1), EntityId(2)}, 0, RowResultKind::Value, Value::string("forged"), ""});
      return result;
    }
    case 5:
      return HeartbeatMessage{};
    case 6:
      return ByeMessage{randomBytes(10)};
    default:
      return ErrorMessage{randomBytes(10)};
    }
  }

  std::string body() {
    switch (orch::testing::pick(random_, 0, 3)) {
    case 0:
      return randomBytes(120);
    case 1:
      return encodeMessage(validMessage());
    default: {
      std::string bytes = encodeMessage(validMessage());
      const int edits = orch::testing::pick(random_, 1, 4);
      for (int e = 0; e < edits && !bytes.empty(); ++e) {
        const size_t at = size_t(orch::testing::pick(random_, 0, int(bytes.size()) - 1));
        switch (orch::testing::pick(random_, 0, 2)) {
        case 0:
          bytes[at] = char(orch::testing::pick(random_, 0, 255));
          break;
        case 1:
          bytes.resize(at);
          break;
        default:
          bytes.insert(at, randomBytes(6));
        }
      }
      return bytes;
    }
    }
  }

  orch::testing::Random random_;
};

TEST_F(DistributedRuntimeTest, ALiveCoordinatorSurvivesTenThousandBadMessages) {
  std::vector<std::pair<int, int>> rows;
  for (int i = 0; i < 40; ++i)
    rows.push_back({i, i % 6});
  writeRows(rows);
  plan::Plan plan = compile(kGatedProgram);
  const std::vector<std::string> expected = runInProcess(plan);

  // In the distributed run, test.identity holds its batches until the flood is over, so every
  // message reaches a coordinator that is in the middle of the run.
  std::atomic<bool> floodOver{false};
  OperatorRegistry gatedRegistry = registry_;
  gatedRegistry.addTransform("test.identity", [&floodOver](const OperatorConfig &) {
    return std::make_unique<Gate>(floodOver);
  });

  const std::string endpoint = "ipc://" + (dir_ / "coordinator.sock").string();
  CoordinatorOptions options;
  options.endpoint = endpoint;
  options.heartbeatMs = 100;
  std::unique_ptr<BatchExecutor> coordinator = makeCoordinator(options);
  ThreadWorkers workers(endpoint, gatedRegistry, 2);
  size_t sent = 0, answered = 0, disconnected = 0;
  std::thread fuzzer([&] {
    // A peer that breaks the protocol is answered and then disconnected: each message comes
    // on a connection of its own, which waits for its answer.
    zmq::context_t context(1);
    MessageFuzzer fuzz(99);
    for (; sent < 10000; ++sent) {
      zmq::socket_t stranger(context, zmq::socket_type::dealer);
      stranger.set(zmq::sockopt::routing_id, "fuzzer-" + std::to_string(sent));
      stranger.set(zmq::sockopt::linger, 0);
      stranger.connect(endpoint);
      std::vector<std::string> frames = fuzz.next();
      for (size_t f = 0; f < frames.size(); ++f)
        stranger.send(zmq::buffer(frames[f]),
                      f + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
      // The first few also watch for the coordinator closing their connection.
      const bool watch = sent < 20;
      zmq::socket_t events(context, zmq::socket_type::pair);
      if (watch) {
        const std::string monitor = "inproc://fuzzer-" + std::to_string(sent);
        ASSERT_EQ(zmq_socket_monitor(stranger.handle(), monitor.c_str(), ZMQ_EVENT_DISCONNECTED),
                  0);
        events.connect(monitor);
      }
      zmq::pollitem_t item{stranger.handle(), 0, ZMQ_POLLIN, 0};
      if (zmq::poll(&item, 1, std::chrono::milliseconds(5000)) > 0)
        ++answered;
      zmq::pollitem_t closing{events.handle(), 0, ZMQ_POLLIN, 0};
      if (watch && zmq::poll(&closing, 1, std::chrono::milliseconds(2000)) > 0)
        ++disconnected;
    }
    // Let the coordinator read the last messages before the gate opens.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    floodOver = true;
  });
  std::vector<RootResult> roots;
  RunSummary summary = runPlan(plan, gatedRegistry, *coordinator, collecting(roots));
  fuzzer.join();
  workers.stop();
  EXPECT_EQ(sent, 10000u);
  EXPECT_EQ(answered, 10000u);
  EXPECT_FALSE(summary.error) << *summary.error;
  EXPECT_EQ(normalized(roots), expected);
  // Every message reached the live coordinator and was answered with an error.
  unsigned malformed = 0, unexpected = 0;
  const size_t counts = summary.executor.find("; ");
  ASSERT_NE(counts, std::string::npos) << summary.executor;
  ASSERT_EQ(std::sscanf(summary.executor.c_str() + counts, "; %u malformed and %u unexpected",
                        &malformed, &unexpected),
            2)
      << summary.executor;
  EXPECT_EQ(malformed + unexpected, 10000u) << summary.executor;
  // Strangers that broke the protocol were disconnected; the workers stayed.
  EXPECT_EQ(disconnected, 20u);
  EXPECT_NE(summary.executor.find(", 0 lost"), std::string::npos) << summary.executor;
}

TEST_F(DistributedRuntimeTest, OnlyWorkersWithListedKeysJoinACurveCoordinator) {
  writeRows({{0, 3}, {1, 0}, {2, 5}, {3, 2}});
  plan::Plan plan = compile(R"(pipeline keyed;
source rows = jsonl("$DIR/in.jsonl") as Doc;
pages = expand(test.split(rows, field: "n")) as Page;
work = test.sleep(pages, ms: 1) { batch: 2 };
sink jsonl(path: "$DIR/docs.jsonl", record: { id: rows.id, pages: reduce(work) });
)");
  const std::vector<std::string> expected = runInProcess(plan);
  const CurveKeyPair coordinatorKey = generateCurveKeyPair("coordinator");
  const CurveKeyPair listed = generateCurveKeyPair("listed");
  const CurveKeyPair stranger = generateCurveKeyPair("stranger");
  CoordinatorOptions options;
  options.endpoint = "ipc://" + (dir_ / "coordinator.sock").string();
  options.heartbeatMs = 100;
  options.curveKey = coordinatorKey;
  options.authorizedKeys = {{listed.publicKey, listed.name}};
  std::unique_ptr<BatchExecutor> coordinator = makeCoordinator(options);

  struct Attempt {
    std::string name;
    CurveKeyPair key;
    std::string pinned;
    int exit = -1;
    std::vector<std::string> log;
  };
  std::vector<Attempt> refused = {
      {"stranger", stranger, coordinatorKey.publicKey, -1, {}},
      {"wrong-server-key", listed, stranger.publicKey, -1, {}},
      {"no-keys", {}, "", -1, {}},
  };
  std::mutex logs;
  auto serve = [&](Attempt &attempt) {
    WorkerOptions worker;
    worker.endpoint = options.endpoint;
    worker.name = attempt.name;
    worker.connectTimeoutMs = 20'000;
    if (!attempt.pinned.empty()) {
      worker.curveKey = attempt.key;
      worker.coordinatorKey = attempt.pinned;
    }
    worker.log = [&](const std::string &line) {
      std::lock_guard lock(logs);
      attempt.log.push_back(line);
    };
    attempt.exit = runWorker(worker, registry_);
  };
  Attempt accepted{"accepted", listed, coordinatorKey.publicKey, -1, {}};
  std::atomic<bool> stopWorker{false};
  std::thread workers([&] {
    // The refused ones first, so that the run cannot end before they tried.
    std::vector<std::thread> attempts;
    for (Attempt &attempt : refused)
      attempts.emplace_back([&] { serve(attempt); });
    for (std::thread &attempt : attempts)
      attempt.join();
    serve(accepted);
  });
  std::vector<RootResult> roots;
  RunSummary summary = runPlan(plan, registry_, *coordinator, collecting(roots));
  workers.join();
  EXPECT_FALSE(summary.error) << *summary.error;
  EXPECT_EQ(normalized(roots), expected);
  ASSERT_EQ(summary.workers.size(), 1u) << summary.executor;
  EXPECT_EQ(summary.workers[0].name, "accepted");
  EXPECT_EQ(summary.workers[0].key, "listed");
  EXPECT_NE(summary.executor.find("CURVE keys: listed"), std::string::npos) << summary.executor;
  EXPECT_NE(summary.executor.find("1 unlisted key(s) refused"), std::string::npos)
      << summary.executor;
  // The unlisted key is not counted again as a failed handshake: only the wrong server key and
  // the peer without keys may be (issue: "3 unlisted key(s) refused; 3 failed handshake(s)" for
  // the same three attempts).
  const size_t failed = summary.executor.find(" failed handshake(s)");
  if (failed != std::string::npos) {
    const size_t number = summary.executor.rfind(' ', failed - 1) + 1;
    EXPECT_LE(std::stoul(summary.executor.substr(number, failed - number)), 2u) << summary.executor;
  }
  const std::map<std::string, std::string> reasons = {
      {"stranger", "it refused this worker's key 'stranger'"},
      {"wrong-server-key", "--server-key is probably not its public key"},
      {"no-keys", "requires CURVE keys"},
  };
  for (const Attempt &attempt : refused) {
    EXPECT_EQ(attempt.exit, kWorkerLost) << attempt.name;
    std::string log;
    for (const std::string &line : attempt.log)
      log += line + "\n";
    EXPECT_NE(log.find(reasons.at(attempt.name)), std::string::npos) << attempt.name << ": " << log;
  }
  EXPECT_EQ(accepted.exit, kWorkerDone);
}

TEST_F(DistributedRuntimeTest, LocalWorkersJoinACurveCoordinatorWithAKeyMadeForTheRun) {
  writeRows({{0, 4}, {1, 1}, {2, 6}, {3, 0}, {4, 3}});
  plan::Plan plan = compile(R"(pipeline local_keys;
source rows = jsonl("$DIR/in.jsonl") as Doc;
pages = expand(test.split(rows, field: "n")) as Page;
work = test.sleep(pages, ms: 1) { batch: 2, replicas: 2 };
sink jsonl(path: "$DIR/docs.jsonl", record: { id: rows.id, pages: reduce(work) });
)");
  RunSummary summary;
  EXPECT_EQ(runWithWorkerProcesses(plan, 2, &summary, generateCurveKeyPair("coordinator")),
            runInProcess(plan));
  ASSERT_EQ(summary.workers.size(), 2u) << summary.executor;
  for (const WorkerIdentity &worker : summary.workers)
    EXPECT_EQ(worker.key, "local") << worker.name;
}

TEST_F(DistributedRuntimeTest, ConnectionsThatSayNoHelloAreClosedAndWorkersStay) {
  std::vector<std::pair<int, int>> rows;
  for (int i = 0; i < 20; ++i)
    rows.push_back({i, i % 4});
  writeRows(rows);
  plan::Plan plan = compile(kGatedProgram);
  const std::vector<std::string> expected = runInProcess(plan);
  std::atomic<bool> checked{false}, running{false};
  OperatorRegistry gatedRegistry = registry_;
  gatedRegistry.addTransform("test.identity", [&](const OperatorConfig &) {
    return std::make_unique<Gate>(checked, &running);
  });
  const fs::path socketPath = dir_ / "coordinator.sock";
  CoordinatorOptions options;
  options.endpoint = "ipc://" + socketPath.string();
  options.heartbeatMs = 100;
  options.connectionLimits.maxWaiting = 4;
  options.connectionLimits.helloDeadline = std::chrono::milliseconds(300);
  std::unique_ptr<BatchExecutor> coordinator = makeCoordinator(options);
  ThreadWorkers workers(options.endpoint, gatedRegistry, 2);
  // Twelve connections that never say anything, made while the run is in full swing.
  int closedByCoordinator = 0;
  std::thread idler([&] {
    for (int waited = 0; !running.load() && waited < 20'000; ++waited)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::vector<int> idle;
    for (int i = 0; i < 12; ++i) {
      const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_un address{};
      address.sun_family = AF_UNIX;
      std::snprintf(address.sun_path, sizeof address.sun_path, "%s", socketPath.c_str());
      if (::connect(fd, reinterpret_cast<sockaddr *>(&address), sizeof address) == 0)
        idle.push_back(fd);
      else
        ::close(fd);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    for (int fd : idle) {
      // The coordinator's side greets (ZMTP) and then hangs up: read to the end.
      char buffer[256];
      ssize_t got;
      while ((got = ::recv(fd, buffer, sizeof buffer, MSG_DONTWAIT)) > 0) {
      }
      closedByCoordinator += got == 0;
      ::close(fd);
    }
    checked = true;
  });
  std::vector<RootResult> roots;
  RunSummary summary = runPlan(plan, gatedRegistry, *coordinator, collecting(roots));
  idler.join();
  workers.stop();
  EXPECT_FALSE(summary.error) << *summary.error;
  EXPECT_EQ(normalized(roots), expected);
  EXPECT_EQ(closedByCoordinator, 12);
  EXPECT_NE(summary.executor.find(", 0 lost"), std::string::npos) << summary.executor;
  unsigned closed = 0, violations = 0, late = 0, crowded = 0;
  const size_t at = summary.executor.find("; ", summary.executor.find(" lost"));
  ASSERT_NE(at, std::string::npos) << summary.executor;
  ASSERT_EQ(std::sscanf(summary.executor.c_str() + at,
                        "; %u connection(s) closed (%u broke the protocol, %u said no hello in "
                        "time, %u over the limits)",
                        &closed, &violations, &late, &crowded),
            4)
      << summary.executor;
  EXPECT_EQ(late, 4u) << summary.executor;
  EXPECT_EQ(crowded, 8u) << summary.executor;
}

} // namespace
} // namespace orch::runtime
