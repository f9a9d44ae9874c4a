// Edge cases of the execution model through the real run loop and admission, under every
// executor (threads, local worker processes, a cluster of workers over TCP) and every policy
// flag, each compared with rows computed by hand: empty expansions, filters that drop
// everything, nesting, broadcasts into grandchildren, sinks at several domains, failures of
// every kind at every level under every recovery policy, retries that succeed later, queued
// and hung batches with timeouts, and very wide and very long inputs.
#include "RuntimeFixture.h"

#include "orch/runtime/cluster/Coordinator.h"
#include "orch/runtime/cluster/Worker.h"
#include "orch/runtime/execution/ThreadExecutor.h"

#include <gtest/gtest.h>
#include <zmq.hpp>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <thread>

namespace orch::runtime {
namespace {

namespace fs = std::filesystem;

/// What a run must produce: each sink file's lines (in any order) and the summary's counts.
struct Expected {
  std::map<std::string, std::vector<std::string>> files;
  uint64_t written = 0, dropped = 0, failed = 0;
  /// An aborted run: which rows finished before the abort depends on timing, so only the
  /// account is checked (every row written or failed) and the run's error.
  std::string abort;
};

struct EdgeCase {
  std::string name;
  /// $DIR is the test's directory, $OUT the run's output directory, $MARKS a fresh directory
  /// for attempt marks (test.fail's `marks`).
  std::string program;
  std::string input;
  Expected expected;
  /// Large or slow: runs under every executor with the default policies, and in-process under
  /// every policy.
  bool slow = false;
};

std::string jsonRows(size_t count, const std::function<std::string(size_t)> &row) {
  std::string text;
  for (size_t i = 0; i < count; ++i)
    text += row(i) + "\n";
  return text;
}

std::string intList(size_t count) {
  std::string text = "[";
  for (size_t i = 0; i < count; ++i)
    text += (i ? "," : "") + std::to_string(i);
  return text + "]";
}

// Documents 0..5 have 0, 2, 0, 3, 1, 4 pages.
const std::vector<size_t> kPages{0, 2, 0, 3, 1, 4};
const std::string kDocs = jsonRows(kPages.size(), [](size_t i) {
  return "{\"id\": " + std::to_string(i) + ", \"n\": " + std::to_string(kPages[i]) + "}";
});

const char *kHeader = R"(source rows = jsonl("$DIR/in.jsonl") as Doc;
pages = expand(test.split(rows, field: "n")) as Page;
)";

/// The documents with at least two pages fail (page 1 fails); the others are written with
/// their page lists.
Expected pageOneFails() {
  Expected expected;
  for (size_t i = 0; i < kPages.size(); ++i) {
    if (kPages[i] >= 2) {
      ++expected.failed;
      continue;
    }
    ++expected.written;
    expected.files["docs.jsonl"].push_back("{\"id\":" + std::to_string(i) +
                                           ",\"pages\":" + intList(kPages[i]) + "}");
  }
  return expected;
}

Expected everyDocWritten() {
  Expected expected;
  for (size_t i = 0; i < kPages.size(); ++i) {
    ++expected.written;
    expected.files["docs.jsonl"].push_back("{\"id\":" + std::to_string(i) +
                                           ",\"pages\":" + intList(kPages[i]) + "}");
  }
  return expected;
}

std::vector<EdgeCase> edgeCases() {
  std::vector<EdgeCase> cases;
  auto docsWith = [](const std::string &body) {
    return "pipeline edge;\n" + std::string(kHeader) + body;
  };

  cases.push_back(
      {"EmptyExpansions",
       docsWith(
           R"(sink jsonl(path: "$OUT/docs.jsonl", record: { id: rows.id, pages: reduce(test.identity(pages) { batch: 3 }) });)"),
       kDocs, everyDocWritten()});

  {
    Expected expected;
    for (size_t i = 0; i < kPages.size(); ++i)
      expected.files["docs.jsonl"].push_back("{\"id\":" + std::to_string(i) + ",\"kept\":[]}");
    expected.files["pages.jsonl"] = {};
    expected.written = kPages.size();
    cases.push_back({"FiltersThatDropEverything",
                     docsWith(R"(kept = filter(pages, math.gt(pages, 100));
sink jsonl(path: "$OUT/docs.jsonl", record: { id: rows.id, kept: reduce(test.identity(kept)) });
sink jsonl(path: "$OUT/pages.jsonl", record: { page: kept });)"),
                     kDocs, expected});
  }

  {
    // Every page has three lines; the line-level sink sees the document and page through
    // broadcasts; the page-level sink the lines gathered per page.
    Expected expected;
    for (size_t i = 0; i < kPages.size(); ++i) {
      std::string nested = "[";
      for (size_t p = 0; p < kPages[i]; ++p) {
        nested += std::string(p ? "," : "") + "[0,1,2]";
        expected.files["pages.jsonl"].push_back("{\"doc\":" + std::to_string(i) + ",\"page\":" +
                                                std::to_string(p) + ",\"lines\":[0,1,2]}");
        for (size_t l = 0; l < 3; ++l)
          expected.files["lines.jsonl"].push_back("{\"doc\":" + std::to_string(i) +
                                                  ",\"page\":" + std::to_string(p) +
                                                  ",\"line\":" + std::to_string(l) + "}");
      }
      expected.files["docs.jsonl"].push_back("{\"id\":" + std::to_string(i) +
                                             ",\"pages\":" + nested + "]}");
    }
    expected.written = kPages.size();
    cases.push_back({"NestingBroadcastsIntoGrandchildrenAndSinksAtEveryDomain",
                     docsWith(R"(lines = expand(test.split(pages, n: 3)) as Line;
seen = test.identity(lines) { batch: 5 };
per_page = reduce(seen);
sink jsonl(path: "$OUT/docs.jsonl", record: { id: rows.id, pages: reduce(per_page) });
sink jsonl(path: "$OUT/pages.jsonl", record: { doc: broadcast(rows.id, pages), page: pages, lines: per_page });
sink jsonl(path: "$OUT/lines.jsonl", record: { doc: broadcast(rows.id, lines), page: broadcast(pages, lines), line: seen });)"),
                     kDocs, expected});
  }

  {
    // Expressions the engine evaluates between batched Calls: even pages take one filtered
    // branch, odd pages the other, coalesce merges them; page 1 divides by zero, which fails its
    // document only (documents with two pages or more), located in the journal.
    Expected expected;
    for (size_t i : {0, 2})
      expected.files["docs.jsonl"].push_back("{\"id\":" + std::to_string(i) + ",\"pages\":[]}");
    expected.files["docs.jsonl"].push_back("{\"id\":4,\"pages\":[\"even 0\"]}");
    expected.written = 3;
    expected.failed = 3;
    cases.push_back({"ExpressionsMergeBranchesAndADivisionByZeroFailsOnlyItsDocument",
                     docsWith(R"(seen = test.identity(pages) { batch: 3 };
even = filter("even " + string(seen), seen % 2 == 0);
odd = filter(string(10 / (seen - 1)), seen % 2 == 1);
sink jsonl(path: "$OUT/docs.jsonl", record: { id: rows.id, pages: reduce(coalesce(even, odd)) });)"),
                     kDocs, expected});
  }

  for (const char *kind : {"record", "group"})
    cases.push_back({std::string("A") + (kind[0] == 'r' ? "Record" : "Group") +
                         "FailureOfAPageFailsOnlyItsDocument",
                     docsWith(std::string(R"(checked = test.fail(pages, kind: ")") + kind +
                              R"(", ordinals: "1") { batch: 3 };
sink jsonl(path: "$OUT/docs.jsonl", record: { id: rows.id, pages: reduce(checked) });)"),
                     kDocs, pageOneFails()});

  for (const char *options : {"{ batch: 4 }", "{ batch: 4, recovery: \"isolate\", retries: 2 }",
                              "{ batch: 4, recovery: \"retry\", retries: 1 }"})
    cases.push_back(
        {std::string("ABatchErrorFailsOnlyTheDocumentOfItsPage_") +
             (std::string(options).find("retry\"") != std::string::npos   ? "Retry"
              : std::string(options).find("isolate") != std::string::npos ? "IsolateWithRetries"
                                                                          : "Default"),
         docsWith(std::string(R"(checked = test.fail(pages, kind: "batch", ordinals: "1") )") +
                  options + R"(;
sink jsonl(path: "$OUT/docs.jsonl", record: { id: rows.id, pages: reduce(checked) });)"),
         kDocs, pageOneFails()});

  {
    // An abort on a page: every one of 300 rows is still accounted for (written before the
    // abort, or failed), whatever the executor, policy or live-root bound.
    Expected expected;
    expected.written = 200;
    expected.failed = 100;
    expected.abort = "run aborted: call 'checked' failed a batch";
    cases.push_back(
        {"AnAbortAccountsForEveryRow",
         docsWith(
             R"(checked = test.fail(pages, kind: "batch", ordinals: "1") { batch: 4, recovery: "abort", retries: 1 };
sink jsonl(path: "$OUT/docs.jsonl", record: { id: rows.id, pages: reduce(checked) });)"),
         jsonRows(300,
                  [](size_t i) {
                    return "{\"id\": " + std::to_string(i) + ", \"n\": " + std::to_string(i % 3) +
                           "}";
                  }),
         expected});
  }

  {
    // A batch error on a line: every page has two lines, line 1 always fails, so every
    // document with a page fails and the others are written.
    Expected expected;
    for (size_t i = 0; i < kPages.size(); ++i) {
      if (kPages[i] > 0) {
        ++expected.failed;
        continue;
      }
      ++expected.written;
      expected.files["docs.jsonl"].push_back("{\"id\":" + std::to_string(i) + ",\"pages\":[]}");
    }
    cases.push_back({"ABatchErrorOnAGrandchildFailsItsDocument",
                     docsWith(R"(lines = expand(test.split(pages, n: 2)) as Line;
checked = test.fail(lines, kind: "batch", ordinals: "1") { batch: 5 };
sink jsonl(path: "$OUT/docs.jsonl", record: { id: rows.id, pages: reduce(reduce(checked)) });)"),
                     kDocs, expected});
  }

  {
    // Root-level failures: source rows 1 and 3 (a root's ordinal is its row number).
    Expected expected;
    for (size_t i = 0; i < kPages.size(); ++i) {
      if (i == 1 || i == 3) {
        ++expected.failed;
        continue;
      }
      ++expected.written;
      expected.files["docs.jsonl"].push_back("{\"id\":" + std::to_string(i) + "}");
    }
    for (const char *kind : {"record", "batch"})
      cases.push_back(
          {std::string("RootLevel") + (kind[0] == 'r' ? "Record" : "Batch") + "Failures",
           std::string(R"(pipeline roots;
source rows = jsonl("$DIR/in.jsonl") as Doc;
checked = test.fail(rows, kind: ")") +
               kind + R"(", ordinals: "1,3") { batch: 4 };
sink jsonl(path: "$OUT/docs.jsonl", record: { id: checked.id });)",
           kDocs, expected});
  }

  cases.push_back(
      {"RetriesThatSucceedOnALaterAttempt",
       docsWith(
           R"(checked = test.fail(pages, kind: "batch", ordinals: "1", attempts: 2, marks: "$MARKS") { batch: 4, retries: 2, recovery: "retry" };
sink jsonl(path: "$OUT/docs.jsonl", record: { id: rows.id, pages: reduce(checked) });)"),
       kDocs, everyDocWritten()});

  {
    // One replica with two batches sent ahead: the second waits 150 ms, then runs 150 ms.
    Expected expected;
    expected.written = 3;
    for (int i = 0; i < 3; ++i)
      expected.files["docs.jsonl"].push_back("{\"id\":" + std::to_string(i) + ",\"pages\":[0,1]}");
    cases.push_back(
        {"BatchesQueuedBehindOthersDoNotTimeOut",
         docsWith(R"(slow = test.sleep(pages, ms: 150) { batch: 1, timeout: 250ms };
sink jsonl(path: "$OUT/docs.jsonl", record: { id: rows.id, pages: reduce(slow) });)"),
         jsonRows(3, [](size_t i) { return "{\"id\": " + std::to_string(i) + ", \"n\": 2}"; }),
         expected, true});
  }

  cases.push_back(
      {"AHungBatchIsStoppedAndRunsAgain",
       docsWith(
           R"(checked = test.fail(pages, kind: "hang", ordinals: "1", attempts: 1, marks: "$MARKS") { batch: 2, timeout: 300ms };
sink jsonl(path: "$OUT/docs.jsonl", record: { id: rows.id, pages: reduce(checked) });)"),
       kDocs, everyDocWritten(), true});

  {
    Expected expected;
    expected.written = 1;
    expected.files["docs.jsonl"] = {"{\"id\":0,\"pages\":100000}"};
    cases.push_back(
        {"OneParentWithAHundredThousandChildren",
         docsWith(
             R"(sink jsonl(path: "$OUT/docs.jsonl", record: { id: rows.id, pages: list.len(reduce(test.identity(pages) { batch: 1000 })) });)"),
         "{\"id\": 0, \"n\": 100000}\n", expected, true});
  }

  {
    Expected expected;
    expected.written = 50000;
    for (size_t i = 0; i < 50000; ++i)
      expected.files["docs.jsonl"].push_back("{\"id\":" + std::to_string(i) + ",\"pages\":[0]}");
    cases.push_back(
        {"FiftyThousandParentsWithOneChildEach",
         R"(pipeline wide;
source rows = jsonl("$DIR/in.jsonl") as Doc;
pages = expand(test.split(rows, field: "n") { batch: 256 }) as Page;
sink jsonl(path: "$OUT/docs.jsonl", record: { id: rows.id, pages: reduce(test.identity(pages) { batch: 256 }) });)",
         jsonRows(50000, [](size_t i) { return "{\"id\": " + std::to_string(i) + ", \"n\": 1}"; }),
         expected, true});
  }
  return cases;
}

/// Names the case in test listings (instead of its bytes).
void PrintTo(const EdgeCase &edge, std::ostream *out) { *out << edge.name; }

enum class Executor { Threads, WorkerProcesses, Cluster };

const char *executorName(Executor executor) {
  switch (executor) {
  case Executor::Threads:
    return "threads";
  case Executor::WorkerProcesses:
    return "worker processes";
  case Executor::Cluster:
    return "cluster";
  }
  return "?";
}

struct Policy {
  std::string name;
  EngineOptions engine;
};

std::vector<Policy> policies() {
  std::vector<Policy> all{{"default", {}}};
  auto with = [&](std::string name, auto change) {
    Policy policy{std::move(name), {}};
    change(policy.engine);
    all.push_back(policy);
  };
  with("--ready-order unordered", [](EngineOptions &o) { o.readyOrder = ReadyOrder::Unordered; });
  with("--batching parent-bound",
       [](EngineOptions &o) { o.batching = BatchingScope::ParentBound; });
  with("--gather barrier", [](EngineOptions &o) { o.gather = GatherMode::GlobalBarrier; });
  with("--probe-first", [](EngineOptions &o) { o.probeFirst = true; });
  with("--max-live-roots 1", [](EngineOptions &o) { o.maxLiveRoots = 1; });
  return all;
}

/// A TCP port that was free a moment ago, for a cluster coordinator.
int freeTcpPort() {
  zmq::context_t context(1);
  zmq::socket_t probe(context, zmq::socket_type::router);
  probe.bind("tcp://127.0.0.1:*");
  const std::string endpoint = probe.get(zmq::sockopt::last_endpoint);
  return std::stoi(endpoint.substr(endpoint.rfind(':') + 1));
}

class FailureEdgeCasesTest : public orch::testing::RuntimeFixture,
                             public ::testing::WithParamInterface<EdgeCase> {
protected:
  /// Runs the case once; compares files and counts with the expectation.
  void runOnce(const EdgeCase &edge, Executor executor, const Policy &policy, int index) {
    const std::string where = std::string(executorName(executor)) + ", " + policy.name;
    const fs::path out = dir_ / ("run-" + std::to_string(index));
    const fs::path marks = dir_ / ("marks-" + std::to_string(index));
    fs::create_directories(out);
    fs::create_directories(marks);
    std::string text = edge.program;
    for (auto [key, value] :
         {std::pair<std::string, std::string>{"$OUT", out.string()}, {"$MARKS", marks.string()}})
      for (size_t at; (at = text.find(key)) != std::string::npos;)
        text.replace(at, key.size(), value);
    plan::Plan plan = compile(text);
    RunOptions options;
    options.engine = policy.engine;
    RunSummary summary;
    switch (executor) {
    case Executor::Threads:
      summary = runOnThreads(plan, registry_, options, 3);
      break;
    case Executor::WorkerProcesses: {
      CoordinatorOptions coordinator;
      coordinator.localWorkers = 2;
      coordinator.workerProgram = ORCH_WORKER_BINARY;
      coordinator.heartbeatMs = 200;
      std::unique_ptr<BatchExecutor> executorImpl = makeCoordinator(coordinator);
      summary = runPlan(plan, registry_, *executorImpl, options);
      break;
    }
    case Executor::Cluster: {
      CoordinatorOptions coordinator;
      coordinator.endpoint = "tcp://127.0.0.1:" + std::to_string(freeTcpPort());
      coordinator.heartbeatMs = 200;
      std::unique_ptr<BatchExecutor> executorImpl = makeCoordinator(coordinator);
      std::atomic<bool> stop{false};
      std::vector<std::thread> workers;
      for (int w = 0; w < 2; ++w)
        workers.emplace_back([&, w] {
          WorkerOptions worker;
          worker.endpoint = coordinator.endpoint;
          worker.name = "cluster-" + std::to_string(w);
          worker.stopRequested = &stop;
          worker.verbose = false;
          // As `orch worker` does: serve again after a restart (a hung batch was stopped).
          while (!stop && runWorker(worker, registry_) == kWorkerMustRestart) {
          }
        });
      summary = runPlan(plan, registry_, *executorImpl, options);
      executorImpl.reset();
      stop = true;
      for (std::thread &worker : workers)
        worker.join();
      break;
    }
    }
    ASSERT_TRUE(summary.started) << where << ": " << summary.error.value_or("");
    const Expected &expected = edge.expected;
    if (!expected.abort.empty()) {
      EXPECT_NE(summary.error.value_or("").find(expected.abort), std::string::npos)
          << where << ": " << summary.error.value_or("no error");
      EXPECT_EQ(summary.rows, expected.written + expected.failed) << where;
      // The abort's own rows are unfinished, not failed: a resumed run runs them again.
      EXPECT_EQ(summary.written + summary.failed + summary.unfinished, summary.rows) << where;
      EXPECT_GE(summary.failed + summary.unfinished, expected.failed) << where;
      EXPECT_GT(summary.unfinished, 0u) << where;
      fs::remove_all(out);
      return;
    }
    EXPECT_FALSE(summary.error) << where << ": " << *summary.error;
    EXPECT_EQ(summary.rows, expected.written + expected.dropped + expected.failed) << where;
    EXPECT_EQ(summary.written, expected.written) << where;
    EXPECT_EQ(summary.dropped, expected.dropped) << where;
    EXPECT_EQ(summary.failed, expected.failed) << where;
    for (const auto &[file, rows] : expected.files) {
      std::vector<std::string> got;
      std::ifstream input(out / file);
      for (std::string line; std::getline(input, line);)
        got.push_back(line);
      std::vector<std::string> want = rows;
      std::sort(got.begin(), got.end());
      std::sort(want.begin(), want.end());
      if (got != want) {
        ADD_FAILURE() << where << ": " << file << " has " << got.size() << " rows, expected "
                      << want.size() << (got.empty() ? "" : "; first: " + got.front());
      }
    }
    fs::remove_all(out);
  }
};

TEST_P(FailureEdgeCasesTest, EveryExecutorAndPolicyGivesTheHandComputedRows) {
  const EdgeCase &edge = GetParam();
  writeFile("in.jsonl", edge.input);
  int index = 0;
  for (Executor executor : {Executor::Threads, Executor::WorkerProcesses, Executor::Cluster})
    for (const Policy &policy : policies()) {
      if (edge.slow && executor != Executor::Threads && policy.name != "default")
        continue;
      runOnce(edge, executor, policy, index++);
    }
}

INSTANTIATE_TEST_SUITE_P(Cases, FailureEdgeCasesTest, ::testing::ValuesIn(edgeCases()),
                         [](const ::testing::TestParamInfo<EdgeCase> &param) {
                           return param.param.name;
                         });

} // namespace
} // namespace orch::runtime
