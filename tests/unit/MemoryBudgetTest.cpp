// The byte budget (EngineOptions::valueBudgetBytes, `orch run --value-budget`): values consumed
// by their only reader are released before their parent finishes; over the budget nothing is
// admitted and Calls that add bytes wait; a budget smaller than one batch still finishes; and
// outputs never depend on the budget.
#include "RuntimeFixture.h"

#include "orch/runtime/execution/ThreadExecutor.h"

#include <gtest/gtest.h>

#include <set>

namespace orch::runtime {
namespace {

constexpr uint64_t kKiB = 1024, kMiB = 1024 * 1024;

class MemoryBudgetTest : public orch::testing::RuntimeFixture {
protected:
  /// `parents` source rows of `children` children each.
  void writeParents(int parents, int children) {
    std::string input;
    for (int i = 0; i < parents; ++i)
      input += "{\"id\": " + std::to_string(i) + ", \"n\": " + std::to_string(children) + "}\n";
    writeFile("in.jsonl", input);
  }

  /// Each child becomes a blob of `blobBytes` (a rendered page) that a checksum reads.
  plan::Plan blobPipeline(uint64_t blobBytes, const std::string &producer,
                          const std::string &consumer) {
    return compile(R"(
pipeline blobs;
source rows = jsonl("$DIR/in.jsonl") as Doc;
pages = expand(test.split(rows, field: "n")) as Page;
images = test.blob(pages, bytes: )" +
                   std::to_string(blobBytes) + ") " + producer + R"(;
sums = test.checksum(images) )" +
                   consumer + R"(;
sink jsonl(path: "$DIR/out/sums.jsonl", record: { id: rows.id, sums: reduce(sums) });
)");
  }

  RunSummary run(const plan::Plan &plan, uint64_t limit) {
    RunOptions options;
    options.engine.valueBudgetBytes = limit;
    RunSummary summary = runOnThreads(plan, registry_, options, 6);
    EXPECT_TRUE(summary.started) << summary.error.value_or("");
    EXPECT_FALSE(summary.error) << summary.error.value_or("");
    return summary;
  }

  std::set<std::string> outputs() {
    std::vector<std::string> rows = lines("out/sums.jsonl");
    std::filesystem::remove(path("out/sums.jsonl"));
    return {rows.begin(), rows.end()};
  }
};

TEST_F(MemoryBudgetTest, AValueIsReleasedOnceItsOnlyReaderIsDoneNotWhenItsParentFinishes) {
  writeParents(1, 200);
  plan::Plan plan = blobPipeline(256 * kKiB, "{ replicas: 1 }", "{ replicas: 2 }");
  RunSummary summary = run(plan, 0);
  EXPECT_EQ(summary.written, 1u);
  EXPECT_EQ(outputs().size(), 1u);
  // Held until the parent finished, the 200 blobs would be 50 MiB at the end.
  EXPECT_GT(summary.peakBytesHeld, 256 * kKiB);
  EXPECT_LT(summary.peakBytesHeld, 20 * 256 * kKiB);
}

TEST_F(MemoryBudgetTest, ABudgetSmallerThanAFewParentsValuesGivesTheSameOutputs) {
  writeParents(8, 40);
  plan::Plan plan =
      blobPipeline(256 * kKiB, "{ batch: 4, replicas: 4 }", "{ batch: 1, replicas: 1 }");
  RunSummary unbounded = run(plan, 0);
  const std::set<std::string> expected = outputs();
  RunSummary bounded = run(plan, 2 * kMiB);
  EXPECT_EQ(outputs(), expected);
  EXPECT_EQ(expected.size(), 8u);
  EXPECT_EQ(bounded.valueBudget, 2 * kMiB);
  // One wave of the producer's first batches runs before its size is known (4 replicas x 4
  // blobs); after that the budget holds.
  EXPECT_LE(bounded.peakBytesHeld, 2 * kMiB + 16 * 256 * kKiB + 64 * kKiB);
  EXPECT_GT(unbounded.peakBytesHeld, 2 * bounded.peakBytesHeld)
      << "without a budget the fast producer runs ahead of the slow consumer";
  EXPECT_GT(bounded.calls[1].heldBackSeconds, 0.0) << "the producer waited for the consumer";
  // The consumer waits only before its first batch tells that it gives bytes back.
  EXPECT_LT(bounded.calls[2].heldBackSeconds, bounded.calls[1].heldBackSeconds / 4);
  ASSERT_FALSE(bounded.bytesHeld.empty());
  for (const auto &[seconds, bytes] : bounded.bytesHeld)
    EXPECT_LE(bytes, bounded.peakBytesHeld);
}

TEST_F(MemoryBudgetTest, ABudgetSmallerThanOneBatchStillFinishes) {
  writeParents(2, 100);
  plan::Plan plan = blobPipeline(kMiB, "{ batch: 4, replicas: 2 }", "{ batch: 2, replicas: 2 }");
  RunSummary unbounded = run(plan, 0);
  const std::set<std::string> expected = outputs();
  RunSummary tiny = run(plan, kKiB);
  EXPECT_EQ(tiny.written, 2u);
  EXPECT_EQ(outputs(), expected);
  EXPECT_EQ(unbounded.written, 2u);
  // The summary can say why the budget did not hold: batches went past it to go on, and one
  // row held more than the budget; a budget that holds the program sends none past it.
  EXPECT_GT(tiny.batchesPastBudget, 0u);
  EXPECT_GE(tiny.largestRowBytes, kMiB);
  EXPECT_EQ(unbounded.batchesPastBudget, 0u) << "no budget, nothing past it";
  RunSummary roomy = run(plan, 64 * kMiB);
  EXPECT_EQ(outputs(), expected);
  EXPECT_EQ(roomy.batchesPastBudget, 0u);
  EXPECT_LE(roomy.largestRowBytes, roomy.peakBytesHeld);
}

} // namespace
} // namespace orch::runtime
