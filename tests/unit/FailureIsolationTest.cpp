// Failures other than exceptions are narrowed down like exceptions (semantics.md, failures): an
// operator process that crashes or hangs on one item fails that item's row alone, under the
// thread executor and worker processes; a Call without a timeout has a hang guard; a run ends
// as soon as every row is finished, whatever is still running.
#include "RuntimeFixture.h"

#include "orch/runtime/cluster/Coordinator.h"
#include "orch/runtime/execution/RunLoop.h"
#include "orch/runtime/execution/ThreadExecutor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <thread>

namespace orch::runtime {
namespace {

enum class Executor { Threads, WorkerProcesses };

std::string executorName(const ::testing::TestParamInfo<Executor> &info) {
  return info.param == Executor::Threads ? "Threads" : "WorkerProcesses";
}

class FailureIsolationTest : public orch::testing::RuntimeFixture,
                             public ::testing::WithParamInterface<Executor> {
protected:
  static bool pythonHasMsgpack() {
    return std::system("/usr/bin/python3 -c 'import msgpack' 2>/dev/null") == 0;
  }

  struct Outcome {
    RunSummary summary;
    /// Source row -> its status, and the kind and message of its cause when it failed.
    std::map<uint64_t, std::string> status;
    std::map<uint64_t, Failure> cause;
    double seconds = 0;
  };

  Outcome run(const plan::Plan &plan, RunOptions options = {}) {
    Outcome outcome;
    options.onRootFinished = [&outcome](const RootResult &root, auto &) {
      outcome.status[root.sourceRow] = rootStatusName(root.status);
      if (!root.failures.empty())
        outcome.cause[root.sourceRow] = root.failures.front();
    };
    const auto start = std::chrono::steady_clock::now();
    if (GetParam() == Executor::Threads) {
      outcome.summary = runOnThreads(plan, registry_, options, 3);
    } else {
      CoordinatorOptions coordinator;
      coordinator.localWorkers = 2;
      coordinator.workerProgram = ORCH_WORKER_BINARY;
      coordinator.heartbeatMs = 200;
      std::unique_ptr<BatchExecutor> executor = makeCoordinator(coordinator);
      outcome.summary = runPlan(plan, registry_, *executor, options);
    }
    outcome.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_TRUE(outcome.summary.started) << outcome.summary.error.value_or("");
    return outcome;
  }

  /// `count` lines "item-i"; the one at `poisoned` reads `poison`.
  void writeLines(int count, int poisoned, const std::string &poison) {
    std::ofstream out(path("in.txt"));
    for (int i = 0; i < count; ++i)
      out << (i == poisoned ? poison : "item-" + std::to_string(i)) << "\n";
  }

  plan::Plan pythonProgram(const std::string &body, const std::string &options) {
    writeFile("model.py", "import os, signal, time\n"
                          "class Model:\n"
                          "    def __call__(self, texts):\n" +
                              body + "        return [len(t) for t in texts]\n");
    return compile(R"(
pipeline p;
operator model(text: String) -> Int = python("model.py", class: "Model");
source rows = lines("$DIR/in.txt");
sink jsonl(path: "$DIR/out.jsonl", record: { n: model(rows) )" +
                       options + R"( });
)",
                   path("test.orch"));
  }

  /// Every row but `poisoned` was written, and it failed with `kind` and `message` in its cause.
  void expectOnlyFailed(const Outcome &outcome, int rows, uint64_t poisoned, FailureKind kind,
                        const std::string &message) {
    ASSERT_EQ(outcome.status.size(), size_t(rows));
    for (const auto &[row, status] : outcome.status)
      EXPECT_EQ(status, row == poisoned ? "failed" : "written") << "row " << row;
    ASSERT_TRUE(outcome.cause.count(poisoned));
    const Failure &cause = outcome.cause.at(poisoned);
    EXPECT_STREQ(failureKindName(cause.kind), failureKindName(kind)) << cause.message;
    EXPECT_NE(cause.message.find(message), std::string::npos) << cause.message;
    EXPECT_EQ(outcome.summary.written, uint64_t(rows - 1));
  }
};

TEST_P(FailureIsolationTest, AnItemThatCrashesItsProcessFailsAloneWithTheSignal) {
  if (!pythonHasMsgpack())
    GTEST_SKIP() << "/usr/bin/python3 has no msgpack (python3-msgpack)";
  writeLines(8, 5, "poison");
  plan::Plan plan = pythonProgram("        if 'poison' in texts:\n"
                                  "            os.kill(os.getpid(), signal.SIGSEGV)\n",
                                  "{ batch: 4 }");
  Outcome outcome = run(plan);
  expectOnlyFailed(outcome, 8, 5, FailureKind::Crash, "signal 11");
  // The batch of 4, its deferred retry, its halves of 2 and the single culprit.
  EXPECT_LE(outcome.summary.engine.batchCrashes, 4u + 1u);
}

TEST_P(FailureIsolationTest, AnItemThatEndsItsProcessFailsAlone) {
  if (!pythonHasMsgpack())
    GTEST_SKIP() << "/usr/bin/python3 has no msgpack (python3-msgpack)";
  writeLines(6, 0, "poison");
  plan::Plan plan = pythonProgram("        if 'poison' in texts:\n"
                                  "            os._exit(3)\n",
                                  "{ batch: 3 }");
  expectOnlyFailed(run(plan), 6, 0, FailureKind::Crash, "exited with status 3");
}

TEST_P(FailureIsolationTest, AnItemThatHangsFailsAloneAfterItsTimeout) {
  if (!pythonHasMsgpack())
    GTEST_SKIP() << "/usr/bin/python3 has no msgpack (python3-msgpack)";
  writeLines(8, 2, "Abstract here");
  plan::Plan plan = pythonProgram("        if 'Abstract here' in texts:\n"
                                  "            time.sleep(3600)\n",
                                  "{ batch: 8, timeout: 400ms }");
  Outcome outcome = run(plan);
  expectOnlyFailed(outcome, 8, 2, FailureKind::Timeout, "timed out after 400ms");
  // log2(8) + 1 re-runs of the culprit after its first run.
  EXPECT_LE(outcome.summary.engine.batchTimeouts, 1u + 3u + 1u);
}

TEST_P(FailureIsolationTest, ANativeOperatorThatHangsFailsOnlyItsDocument) {
  // Pages of three documents share batches; page 1 of document 1 hangs for an hour.
  writeFile("in.jsonl", "{\"id\": 0, \"n\": 3}\n{\"id\": 1, \"n\": 3}\n{\"id\": 2, \"n\": 3}\n");
  // test.fail's `when` reads a Bool field of a record: only document 1's pages carry it.
  plan::Plan plan = compile(R"(
pipeline p;
source rows = jsonl("$DIR/in.jsonl") as Doc;
pages = expand(test.split(rows, field: "n")) as Page;
tagged = { hang: broadcast((rows.id as Int) == 1, pages), page: pages };
h = test.fail(tagged, kind: "hang", ordinals: "1", when: "hang") { batch: 9, timeout: 300ms };
sink jsonl(path: "$DIR/out.jsonl", record: { id: rows.id, pages: reduce(h) });
)");
  Outcome outcome = run(plan);
  ASSERT_EQ(outcome.status.size(), 3u);
  EXPECT_EQ(outcome.status[0], "written");
  EXPECT_EQ(outcome.status[1], "failed");
  EXPECT_EQ(outcome.status[2], "written");
  EXPECT_EQ(outcome.cause[1].kind, FailureKind::Timeout) << outcome.cause[1].message;
  EXPECT_EQ(outcome.cause[1].path, std::vector<uint32_t>{1});
}

TEST_P(FailureIsolationTest, ANativeOperatorThatCrashesItsWorkerFailsOnlyItsDocument) {
  // Pages of four documents; page 1 of document 2 segfaults the process it runs in. In
  // process that is the run (the crash quarantine's case, e2e transactions); with workers it
  // is the worker, and every batch in flight there goes down with it. Before, each of those
  // spent its infrastructure budget: pages of other documents on that worker failed as
  // `infrastructure` "(after 3 re-runs)". A batch lost with its worker now runs alone.
  if (GetParam() == Executor::Threads)
    GTEST_SKIP() << "a native crash ends an in-process run (the crash quarantine's case)";
  writeFile("in.jsonl", "{\"id\": 0, \"n\": 3}\n{\"id\": 1, \"n\": 3}\n{\"id\": 2, \"n\": 3}\n"
                        "{\"id\": 3, \"n\": 3}\n");
  plan::Plan plan = compile(R"(
pipeline p;
source rows = jsonl("$DIR/in.jsonl") as Doc;
pages = expand(test.split(rows, field: "n")) as Page;
tagged = { crash: broadcast((rows.id as Int) == 2, pages), page: pages };
c = test.fail(tagged, kind: "crash", ordinals: "1", when: "crash", ms: 20) { batch: 1, replicas: 2 };
sink jsonl(path: "$DIR/out.jsonl", record: { id: rows.id, pages: reduce(c) });
)");
  Outcome outcome = run(plan);
  ASSERT_EQ(outcome.status.size(), 4u);
  for (uint64_t row : {0u, 1u, 3u})
    EXPECT_EQ(outcome.status[row], "written")
        << "row " << row << ": " << outcome.cause[row].message;
  EXPECT_EQ(outcome.status[2], "failed");
  EXPECT_EQ(outcome.cause[2].kind, FailureKind::Crash) << outcome.cause[2].message;
  EXPECT_EQ(outcome.cause[2].path, std::vector<uint32_t>{1});
  EXPECT_NE(outcome.cause[2].message.find("signal 11"), std::string::npos)
      << outcome.cause[2].message;
}

TEST_P(FailureIsolationTest, BatchesQueuedBehindAHungOneAreNotBlamedForIt) {
  // Page 2 of every document hangs. With worker processes a hang costs its worker, and the
  // batches queued on that worker are lost with it; before, they spent their infrastructure
  // budget on other batches' hangs and innocent pages failed as `infrastructure`.
  writeFile("in.jsonl", "{\"n\": 6}\n{\"n\": 6}\n{\"n\": 6}\n{\"n\": 6}\n");
  plan::Plan plan = compile(R"(
pipeline p;
source rows = jsonl("$DIR/in.jsonl") as Doc;
pages = expand(test.split(rows, field: "n")) as Page;
h = test.fail(pages, kind: "hang", ordinals: "2") { batch: 4, timeout: 300ms };
sink jsonl(path: "$DIR/pages.jsonl", record: { page: h });
)");
  Outcome outcome = run(plan);
  ASSERT_EQ(outcome.status.size(), 4u);
  for (const auto &[row, cause] : outcome.cause) {
    EXPECT_EQ(cause.kind, FailureKind::Timeout) << "row " << row << ": " << cause.message;
    EXPECT_EQ(cause.path, std::vector<uint32_t>{2}) << "row " << row;
  }
  EXPECT_EQ(lines("pages.jsonl").size(), 4u * 5u) << "every page but the hung ones";
}

TEST_P(FailureIsolationTest, WithoutATimeoutTheHangGuardStopsAHungItemAndTheRunEnds) {
  // No timeout written: the guard allows 10 times the slowest item seen, at least its floor.
  writeFile("in.jsonl", "{\"id\": 0, \"n\": 4}\n{\"id\": 1, \"n\": 4}\n");
  plan::Plan plan = compile(R"(
pipeline p;
source rows = jsonl("$DIR/in.jsonl") as Doc;
pages = expand(test.split(rows, field: "n")) as Page;
h = test.fail(pages, kind: "hang", ordinals: "3", when: "") { batch: 2 };
sink jsonl(path: "$DIR/out.jsonl", record: { id: rows.id, pages: reduce(h) });
)");
  RunOptions options;
  options.hangGuardFloor = std::chrono::milliseconds(300);
  Outcome outcome = run(plan, options);
  ASSERT_EQ(outcome.status.size(), 2u);
  EXPECT_EQ(outcome.status[0], "failed");
  EXPECT_EQ(outcome.status[1], "failed");
  EXPECT_EQ(outcome.cause[0].kind, FailureKind::Timeout);
  EXPECT_NE(outcome.cause[0].message.find("hang guard"), std::string::npos)
      << outcome.cause[0].message;
  EXPECT_EQ(outcome.cause[0].path, std::vector<uint32_t>{3});
}

TEST_P(FailureIsolationTest, ARunEndsOnceEveryRowIsFinishedWhateverStillRuns) {
  // The row fails at 0.3 s (page 0 of `bad`); page 2 of `h` hangs for an hour on another
  // replica, and nobody needs it any more: the run does not wait for it.
  writeFile("one.jsonl", "{\"id\": 0, \"n\": 3}\n");
  plan::Plan plan = compile(R"(
pipeline p4;
source rows = jsonl("$DIR/one.jsonl") as Doc;
pages = expand(test.split(rows, field: "n")) as Page;
bad = test.fail(pages, ordinals: "0", ms: 300);
h = test.fail(pages, kind: "hang", ordinals: "2") { replicas: 2 };
sink jsonl(path: "$DIR/d.jsonl", record: { id: rows.id, r: reduce(bad), h: reduce(h) });
)");
  Outcome outcome = run(plan);
  ASSERT_EQ(outcome.status.size(), 1u);
  EXPECT_EQ(outcome.status[0], "failed");
  EXPECT_FALSE(outcome.summary.error) << *outcome.summary.error;
  // Bounded by the hang (an hour) and the hang guard (minutes) otherwise.
  EXPECT_LT(outcome.seconds, 30.0);
}

TEST_P(FailureIsolationTest, ARunEndsOnceEveryRowIsFinishedWithAnUntakenBranchStillRunning) {
  writeFile("one.jsonl", "{\"id\": 0, \"n\": 2}\n");
  plan::Plan plan = compile(R"(
pipeline p5;
source rows = jsonl("$DIR/one.jsonl") as Doc;
pages = expand(test.split(rows, field: "n")) as Page;
h = test.fail(pages, kind: "hang", ordinals: "1");
slow = test.sleep(rows, ms: 300);
count = if (slow.id as Int) == 0 then 0 else list.len(reduce(h));
sink jsonl(path: "$DIR/d.jsonl", record: { id: rows.id, n: count });
)");
  // The condition takes 0.3 s, while page 1 of the untaken branch starts its hour.
  Outcome outcome = run(plan);
  ASSERT_EQ(outcome.status.size(), 1u);
  EXPECT_EQ(outcome.status[0], "written");
  if (GetParam() == Executor::Threads) {
    EXPECT_GE(log_->rowsRun("h"), 1u) << "the hanging page was dispatched";
  }
  EXPECT_FALSE(outcome.summary.error) << *outcome.summary.error;
  EXPECT_LT(outcome.seconds, 30.0);
}

TEST_P(FailureIsolationTest, AnOperatorThatAnswersTheWrongCountBreaksItsContractVisibly) {
  if (!pythonHasMsgpack())
    GTEST_SKIP() << "/usr/bin/python3 has no msgpack (python3-msgpack)";
  // Right for a batch of one, wrong for more: bisection would hide it; the rows fail instead,
  // naming the count.
  writeFile("first.py", "class First:\n    def __call__(self, texts):\n"
                        "        return [len(texts[0])]\n");
  writeLines(4, -1, "");
  plan::Plan plan = compile(R"(
pipeline p;
operator first(text: String) -> Int = python("first.py", class: "First");
source rows = lines("$DIR/in.txt");
sink jsonl(path: "$DIR/out.jsonl", record: { n: first(rows) { batch: 4 } });
)",
                            path("test.orch"));
  Outcome outcome = run(plan);
  EXPECT_EQ(outcome.summary.failed, 4u);
  EXPECT_EQ(outcome.summary.engine.contractViolations, 1u);
  // A dict is no list of results (iterating it would give its keys).
  writeFile("first.py", "class First:\n    def __call__(self, texts):\n"
                        "        return {100 + i: 1 for i in range(len(texts))}\n");
  Outcome dict = run(compile(R"(
pipeline p;
operator first(text: String) -> Int = python("first.py", class: "First");
source rows = lines("$DIR/in.txt");
sink jsonl(path: "$DIR/dict.jsonl", record: { n: first(rows) { batch: 4 } });
)",
                             path("test.orch")));
  EXPECT_EQ(dict.summary.failed, 4u);
  ASSERT_TRUE(dict.cause.count(0));
  EXPECT_EQ(dict.cause[0].kind, FailureKind::ContractViolation) << dict.cause[0].message;
  ASSERT_TRUE(outcome.cause.count(0));
  EXPECT_EQ(outcome.cause[0].kind, FailureKind::ContractViolation);
  EXPECT_NE(outcome.cause[0].message.find("gave 1 result(s) for a batch of 4 item(s)"),
            std::string::npos)
      << outcome.cause[0].message;
}

TEST_P(FailureIsolationTest, AnAnswerTooDeepToReadFailsItsRowsWithoutRestartingTheProcess) {
  if (!pythonHasMsgpack())
    GTEST_SKIP() << "/usr/bin/python3 has no msgpack (python3-msgpack)";
  // Before, a healthy process whose answer nested 100 levels deep was taken for a crash:
  // killed, restarted, retried and bisected.
  writeFile("deep.py", "class Deep:\n    def __call__(self, texts):\n"
                       "        def nest(depth):\n"
                       "            return [] if depth == 0 else [nest(depth - 1)]\n"
                       "        return [nest(100) if t == 'deep' else [] for t in texts]\n");
  writeLines(3, 1, "deep");
  plan::Plan plan = compile(R"(
pipeline p;
operator deep(text: String) -> Json = python("deep.py", class: "Deep");
source rows = lines("$DIR/in.txt");
sink jsonl(path: "$DIR/out.jsonl", record: { d: deep(rows) { batch: 1 } });
)",
                            path("test.orch"));
  Outcome outcome = run(plan);
  expectOnlyFailed(outcome, 3, 1, FailureKind::RecordFailure, "values that cannot be read");
  EXPECT_EQ(outcome.summary.engine.batchCrashes, 0u);
}

/// Whether `pid` names a process that still runs (a zombie has ended).
bool running(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line))
    return false;
  const size_t name = line.rfind(')');
  return name != std::string::npos && name + 2 < line.size() && line[name + 2] != 'Z';
}

TEST_P(FailureIsolationTest, WhatAnOperatorStartedIsGoneWhenItCrashesAndWhenTheRunEnds) {
  if (!pythonHasMsgpack())
    GTEST_SKIP() << "/usr/bin/python3 has no msgpack (python3-msgpack)";
  // Each batch leaves two sleepers behind: one in the operator's process group, one that left
  // it (setsid). Before, both outlived the run.
  writeLines(4, 3, "poison");
  plan::Plan plan = pythonProgram(
      "        for escape in (False, True):\n"
      "            if os.fork() == 0:\n"
      "                if escape:\n"
      "                    os.setsid()\n"
      "                with open(os.path.join(os.path.dirname(__file__), 'pids'), 'a') as f:\n"
      "                    f.write('%d\\n' % os.getpid())\n"
      "                time.sleep(120)\n"
      "                os._exit(0)\n"
      "        time.sleep(0.2)\n"
      "        if 'poison' in texts:\n"
      "            os.kill(os.getpid(), signal.SIGSEGV)\n",
      "{ batch: 2 }");
  Outcome outcome = run(plan);
  expectOnlyFailed(outcome, 4, 3, FailureKind::Crash, "signal 11");
  std::vector<pid_t> pids;
  std::ifstream list(path("pids"));
  for (pid_t pid; list >> pid;)
    pids.push_back(pid);
  EXPECT_GE(pids.size(), 4u);
  for (int waited = 0; waited < 100; ++waited) {
    if (std::none_of(pids.begin(), pids.end(), running))
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (pid_t pid : pids)
    EXPECT_FALSE(running(pid)) << "process " << pid << " outlived the run";
}

INSTANTIATE_TEST_SUITE_P(Executors, FailureIsolationTest,
                         ::testing::Values(Executor::Threads, Executor::WorkerProcesses),
                         executorName);

} // namespace
} // namespace orch::runtime
