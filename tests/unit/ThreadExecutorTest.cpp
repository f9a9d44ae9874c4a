// The embedded runtime end to end: real worker threads, real files in and out, operator
// exceptions, timeouts, and runs that cannot start.
#include "RuntimeFixture.h"

#include "orch/runtime/execution/ThreadExecutor.h"
#include "orch/runtime/operators/TestOperators.h"
#include "orch/stdlib/StandardOperators.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace orch::runtime {
namespace {

namespace fs = std::filesystem;

class ThreadExecutorTest : public orch::testing::RuntimeFixture {
protected:
  RunSummary run(const plan::Plan &plan, unsigned threads = 4) {
    RunOptions options;
    options.onRootFinished = [this](const RootResult &root, auto &) { finished_.push_back(root); };
    return runOnThreads(plan, registry_, options, threads);
  }

  std::vector<RootResult> finished_;
};

TEST_F(ThreadExecutorTest, RunsAPipelineFromFilesToFiles) {
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

TEST_F(ThreadExecutorTest, AnOperatorExceptionFailsRowsNotTheRun) {
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

TEST_F(ThreadExecutorTest, ABatchPastItsTimeoutIsNarrowedDownAndItsRowFails) {
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
  EXPECT_EQ(finished_[0].failures[0].kind, FailureKind::Timeout);
  EXPECT_NE(finished_[0].failures[0].message.find("timed out after 20ms"), std::string::npos);
  EXPECT_EQ(summary.engine.batchTimeouts, 2u) << "the first run and the deferred retry (isolate)";
  EXPECT_EQ(summary.engine.infrastructureFailures, 0u);
}

TEST_F(ThreadExecutorTest, AHungBatchIsAbandonedAndTheRunEnds) {
  // A thread cannot be killed: it is left to its ten-minute sleep, a new thread takes its
  // place, and after the Call's recovery (isolate: one deferred retry) the row fails; the run
  // does not wait for it.
  writeFile("in.jsonl", "{\"id\": 0}\n{\"id\": 1}\n");
  plan::Plan plan = compile(R"(
pipeline hung;
source rows = jsonl("$DIR/in.jsonl") as Doc;
hangs = math.gt(list.len(test.split(rows, field: "id")), 0);
hung = test.sleep(filter(rows, hangs), ms: 600000) { timeout: 50ms };
sink jsonl(path: "$DIR/out.jsonl", record: { id: rows.id, hung: hung });
)");
  RunSummary summary = run(plan, 1);
  EXPECT_FALSE(summary.error);
  ASSERT_EQ(finished_.size(), 2u);
  EXPECT_EQ(summary.written, 0u);
  EXPECT_EQ(summary.dropped, 1u) << "row 0 is filtered out and never waits for the hung thread";
  EXPECT_EQ(summary.failed, 1u);
  EXPECT_EQ(summary.engine.batchTimeouts, 2u);
  EXPECT_NE(summary.executor.find("2 abandoned in timed-out batches"), std::string::npos)
      << summary.executor;
}

TEST_F(ThreadExecutorTest, ANonFiniteNumberFailsItsRowInAJsonSinkUnlessItOptsIntoNull) {
  // Before, NaN and infinities were written as null and the rows counted as written. Twelve
  // such rows in a row do not stop the run: the output is fine, the values are not.
  std::string input;
  for (int i = 0; i < 14; ++i)
    input += std::string("{\"x\": \"") +
             (i == 0    ? "1.5"
              : i == 13 ? "2"
              : i % 2   ? "nan"
                        : "-inf") +
             "\"}\n";
  writeFile("in.jsonl", input);
  plan::Plan plan = compile(R"(
pipeline nonfinite;
source rows = jsonl("$DIR/in.jsonl") as Doc;
x = float(rows.x as String);
sink jsonl(path: "$DIR/strict.jsonl", record: { score: { x: x } });
sink jsonl(path: "$DIR/lenient.jsonl", record: { x: x }, nonfinite: "null");
)");
  RunSummary summary = run(plan);
  EXPECT_FALSE(summary.error) << *summary.error;
  EXPECT_EQ(summary.written, 2u);
  EXPECT_EQ(summary.failed, 12u);
  EXPECT_EQ(lines("strict.jsonl"),
            (std::vector<std::string>{"{\"score\":{\"x\":1.5}}", "{\"score\":{\"x\":2.0}}"}));
  EXPECT_EQ(lines("lenient.jsonl").size(), 2u) << "a failed row is in no sink";
  size_t nan = 0;
  for (const RootResult &root : finished_)
    if (root.status == RootStatus::Failed) {
      EXPECT_EQ(root.failures.back().kind, FailureKind::OutputFailure);
      nan += root.failures.back().message.find("NaN at .score.x cannot be written as JSON") !=
             std::string::npos;
    }
  EXPECT_EQ(nan, 6u);

  plan = compile(R"(
pipeline nonfinite;
source rows = jsonl("$DIR/in.jsonl") as Doc;
sink jsonl(path: "$DIR/lenient.jsonl", record: { x: float(rows.x as String) }, nonfinite: "null");
)");
  finished_.clear();
  summary = run(plan);
  EXPECT_EQ(summary.written, 14u);
  EXPECT_EQ(lines("lenient.jsonl")[1], "{\"x\":null}");
}

TEST_F(ThreadExecutorTest, TestChecksumHashesPixelsNotASummaryOfTheImage) {
  // Before, an image hashed as its text ("{width: 2, ..., pixels: <4 bytes>}"): every page of
  // a PDF had one checksum.
  auto image = [](std::string pixels) {
    return Value::record({{"width", Value::integer(2)},
                          {"height", Value::integer(2)},
                          {"channels", Value::integer(1)},
                          {"pixels", Value::bytes(std::move(pixels))}});
  };
  const std::vector<Value> inputs = {image("abcd"), image("abce"), image("abcd")};
  std::vector<OperatorRow> rows;
  for (const Value &input : inputs)
    rows.push_back(OperatorRow{std::span<const Value>(&input, 1), {}});
  OperatorConfig config("sums", "test.checksum", {}, {"value"});
  std::unique_ptr<Operator> checksum = (*registry_.transform("test.checksum"))(config);
  std::vector<RowResult> results;
  checksum->process(rows, results);
  ASSERT_EQ(results.size(), 3u);
  EXPECT_NE(results[0].value.asInt(), results[1].value.asInt()) << "one pixel differs";
  EXPECT_EQ(results[0].value.asInt(), results[2].value.asInt());
}

TEST_F(ThreadExecutorTest, ADocumentWhosePageZeroFailsFinishesAtOnceAndItsOtherPagesNeverRun) {
  // Before, the document waited for its 99 other 30 ms pages (3 s) although its only row was
  // already known to fail.
  writeFile("in.jsonl", "{\"n\": 100}\n");
  plan::Plan plan = compile(R"(
pipeline early;
source rows = jsonl("$DIR/in.jsonl") as Doc;
pages = expand(test.split(rows, field: "n")) as Page;
checked = test.fail(pages, ordinals: "0") { batch: 1 };
slow = test.sleep(checked, ms: 30) { batch: 1 };
sink jsonl(path: "$DIR/out.jsonl", record: { pages: reduce(slow) });
)");
  RunSummary summary = run(plan, 1);
  EXPECT_FALSE(summary.error);
  EXPECT_EQ(summary.failed, 1u);
  EXPECT_LE(log_->rowsRun("slow"), 3u) << "pages 1.. were cancelled, not run";
  uint64_t cancelled = 0;
  for (const CallSummary &call : summary.calls)
    cancelled += call.cancelled;
  EXPECT_GE(cancelled, 190u) << "about 99 'checked' and 99 'slow' grains";
  EXPECT_EQ(cancelled, summary.engine.grainsCancelled);
}

TEST_F(ThreadExecutorTest, MissingImplementationsStopTheRunBeforeItStarts) {
  plan::Plan plan = compile(R"(
pipeline unimplemented;
source docs = files("$DIR/*.pdf");
sink jsonl(path: "$DIR/out.jsonl", record: { text: text.join(reduce(pdf.text(expand(pdf.pages(docs)) as Page))) });
)");
  // A worker built without the PDF operators (only the test operators and files/jsonl here).
  OperatorRegistry partial;
  registerTestOperators(partial, log_);
  partial.addSource("files", *registry_.source("files"));
  partial.addSink("jsonl", *registry_.sink("jsonl"));
  RunSummary summary = runOnThreads(plan, partial, RunOptions{}, 2);
  EXPECT_FALSE(summary.started);
  ASSERT_TRUE(summary.error);
  EXPECT_NE(summary.error->find("no implementation for operator pdf.pages, operator pdf.text, "
                                "operator text.join"),
            std::string::npos)
      << *summary.error;
}

TEST_F(ThreadExecutorTest, AnUnwritableSinkStopsTheRunBeforeItStarts) {
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
