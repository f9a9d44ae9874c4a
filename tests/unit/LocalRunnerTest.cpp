// The embedded runtime end to end: real worker threads, real files in and out, operator
// exceptions, timeouts, and runs that cannot start.
#include "CompileExample.h"

#include "orch/runtime/LocalRunner.h"
#include "orch/runtime/TestOperators.h"
#include "orch/stdlib/StandardOperators.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace orch::runtime {
namespace {

namespace fs = std::filesystem;

class LocalRunnerTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("orch-runner-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    registerTestOperators(registry_, log_);
    stdlib::registerStandardOperators(registry_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string &name) const { return (dir_ / name).string(); }

  void writeFile(const std::string &name, const std::string &text) {
    std::ofstream(path(name)) << text;
  }

  std::vector<std::string> lines(const std::string &name) const {
    std::ifstream input(path(name));
    std::vector<std::string> result;
    for (std::string line; std::getline(input, line);)
      result.push_back(line);
    return result;
  }

  /// Compiles `program` with $DIR replaced by the test's directory.
  plan::Plan compile(std::string program) {
    for (size_t at; (at = program.find("$DIR")) != std::string::npos;)
      program.replace(at, 4, dir_.string());
    std::string error;
    std::optional<plan::Plan> plan = orch::testing::compileText(program, &error);
    EXPECT_TRUE(plan) << error;
    return plan.value_or(plan::Plan{});
  }

  RunSummary run(const plan::Plan &plan, unsigned threads = 4) {
    RunOptions options;
    options.onRootFinished = [this](const RootResult &root) { finished_.push_back(root); };
    return runLocally(plan, registry_, options, threads);
  }

  fs::path dir_;
  std::shared_ptr<TestOperatorLog> log_ = std::make_shared<TestOperatorLog>();
  OperatorRegistry registry_;
  std::vector<RootResult> finished_;
};

TEST_F(LocalRunnerTest, RunsAPipelineFromFilesToFiles) {
  std::string input;
  for (int i = 0; i < 40; ++i)
    input += "{\"id\": " + std::to_string(i) + ", \"n\": " + std::to_string(i % 7) + "}\n";
  input += "{broken\n";
  writeFile("in.jsonl", input);
  plan::Plan plan = compile(R"(
pipeline files;
source rows = jsonl("$DIR/in.jsonl") as Doc;
call split = test.split(field: "n") { replicas: 2 };
call work = test.sleep(ms: 0.2) { batch: 8, replicas: 3 };
pages = expand(split(rows)) as Page;
sink jsonl(path: "$DIR/out/docs.jsonl", record: { id: rows.id, pages: reduce(work(pages)) });
)");
  RunSummary summary = run(plan);
  ASSERT_TRUE(summary.started) << summary.error.value_or("");
  EXPECT_FALSE(summary.error) << *summary.error;
  EXPECT_EQ(summary.rows, 41u);
  EXPECT_EQ(summary.written, 40u);
  EXPECT_EQ(summary.failed, 1u) << "the malformed line is accounted for";
  std::vector<std::string> written = lines("out/docs.jsonl");
  ASSERT_EQ(written.size(), 40u);
  std::set<std::string> expected;
  for (int i = 0; i < 40; ++i) {
    std::string pages;
    for (int p = 0; p < i % 7; ++p)
      pages += (p ? "," : "") + std::to_string(p);
    expected.insert("{\"id\":" + std::to_string(i) + ",\"pages\":[" + pages + "]}");
  }
  EXPECT_EQ(std::set<std::string>(written.begin(), written.end()), expected);
  EXPECT_EQ(log_->rowsRun("work"), size_t(5 * (0 + 1 + 2 + 3 + 4 + 5 + 6) + 0 + 1 + 2 + 3 + 4));
  EXPECT_GT(summary.calls[1].grains, summary.calls[1].batches) << "pages were batched";
}

TEST_F(LocalRunnerTest, AnOperatorExceptionFailsRowsNotTheRun) {
  writeFile("in.jsonl", "{\"n\": 2}\n{\"n\": 3}\n");
  plan::Plan plan = compile(R"(
pipeline throwing;
source rows = jsonl("$DIR/in.jsonl") as Doc;
pages = expand(test.split(rows, field: "n")) as Page;
boom = test.fail(pages, kind: "batch", ordinals: "2") { batch: 1 };
sink jsonl(path: "$DIR/pages.jsonl", record: { page: boom });
)");
  RunSummary summary = run(plan);
  EXPECT_FALSE(summary.error);
  EXPECT_EQ(summary.written, 1u);
  EXPECT_EQ(summary.failed, 1u);
  EXPECT_EQ(lines("pages.jsonl").size(), 4u);
}

TEST_F(LocalRunnerTest, ABatchPastItsTimeoutIsALostBatch) {
  writeFile("in.jsonl", "{\"n\": 1}\n");
  plan::Plan plan = compile(R"(
pipeline slow;
source rows = jsonl("$DIR/in.jsonl") as Doc;
slow = test.sleep(rows, ms: 150) { timeout: 20ms };
sink jsonl(path: "$DIR/out.jsonl", record: { row: slow });
)");
  RunSummary summary = run(plan, 2);
  EXPECT_FALSE(summary.error);
  ASSERT_EQ(finished_.size(), 1u);
  EXPECT_EQ(finished_[0].status, RootStatus::Failed);
  EXPECT_EQ(finished_[0].failures[0].kind, FailureKind::Infrastructure);
  EXPECT_NE(finished_[0].failures[0].message.find("timed out"), std::string::npos);
  EXPECT_EQ(summary.engine.infrastructureFailures, 4u) << "the first run and three re-runs";
}

TEST_F(LocalRunnerTest, MissingImplementationsStopTheRunBeforeItStarts) {
  plan::Plan plan = compile(R"(
pipeline unimplemented;
source docs = files("$DIR/*.pdf");
sink jsonl(path: "$DIR/out.jsonl", record: { pages: list.len(reduce(pdf.text(expand(pdf.pages(docs)) as Page))) });
)");
  RunSummary summary = run(plan);
  EXPECT_FALSE(summary.started);
  ASSERT_TRUE(summary.error);
  EXPECT_NE(summary.error->find("no implementation for operator pdf.pages"), std::string::npos)
      << *summary.error;
}

TEST_F(LocalRunnerTest, AnUnwritableSinkStopsTheRunBeforeItStarts) {
  writeFile("in.jsonl", "{}\n");
  writeFile("blocker", "a file where a directory should be");
  plan::Plan plan = compile(R"(
pipeline unwritable;
source rows = jsonl("$DIR/in.jsonl");
sink jsonl(path: "$DIR/blocker/out.jsonl", record: { row: test.identity(rows) });
)");
  RunSummary summary = run(plan);
  EXPECT_FALSE(summary.started);
  ASSERT_TRUE(summary.error);
  EXPECT_NE(summary.error->find("blocker"), std::string::npos) << *summary.error;
}

} // namespace
} // namespace orch::runtime
