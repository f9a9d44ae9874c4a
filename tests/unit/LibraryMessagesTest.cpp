// What a library prints while an operator runs a batch comes back through the operator's log
// with its Call, replica and row, at a level the user can silence (LibraryMessages.h). The
// library is real: leptonica, whose message hook the standard library installs.
#include "orch/runtime/operators/LibraryMessages.h"
#include "orch/runtime/operators/Operator.h"
#include "orch/stdlib/StandardOperators.h"

#include <leptonica/allheaders.h>

#include <gtest/gtest.h>

#include <mutex>

namespace orch::runtime {
namespace {

/// A batch of two grains: row 12's member 3 and row 40 itself.
Batch twoGrains() {
  Batch batch;
  batch.id = 7;
  batch.grains.push_back(BatchGrain{{}, 0, GrainLineage{1, 3, 1, 0, 12}});
  batch.grains.push_back(BatchGrain{{}, 0, GrainLineage{2, 0, 0, 0, 40}});
  return batch;
}

class LibraryMessagesTest : public ::testing::Test {
protected:
  void SetUp() override {
    OperatorRegistry registry;
    stdlib::registerStandardOperators(registry); // installs leptonica's hook
    config_.withReplica(1).withLog([this](const std::string &line) {
      std::lock_guard lock(mutex_);
      lines_.push_back(line);
    });
  }
  void TearDown() override { setLogLevel(LogLevel::Info); }

  /// Leptonica's own complaint about a box outside its rectangle, as tesseract's layout
  /// analysis triggers it on real pages.
  static void leptonicaComplains() {
    BOX *outside = boxCreate(100, 100, 10, 10);
    BOX *clipped = boxClipToRectangle(outside, 50, 50);
    EXPECT_EQ(clipped, nullptr);
    boxDestroy(&outside);
  }

  std::vector<std::string> lines() {
    std::lock_guard lock(mutex_);
    return lines_;
  }

  OperatorConfig config_{"ocr", "ocr.tesseract", {}, {"image"}};
  std::mutex mutex_;
  std::vector<std::string> lines_;
};

TEST_F(LibraryMessagesTest, ALeptonicaMessageNamesTheCallTheReplicaAndTheItemsRow) {
  const Batch batch = twoGrains();
  {
    const OperatorActivity activity(config_, batch);
    noteCurrentItem(0);
    leptonicaComplains();
  }
  ASSERT_EQ(lines().size(), 1u);
  EXPECT_EQ(lines()[0], "ocr: replica 1, row 12 (member 3): leptonica: Error in "
                        "boxClipToRectangle: box outside rectangle");
}

TEST_F(LibraryMessagesTest, WithoutAnItemTheMessageNamesTheBatchsRows) {
  const Batch batch = twoGrains();
  {
    const OperatorActivity activity(config_, batch);
    leptonicaComplains();
  }
  ASSERT_EQ(lines().size(), 1u);
  EXPECT_EQ(lines()[0].substr(0, 43), "ocr: replica 1, rows 12 and 40: leptonica: ");
}

TEST_F(LibraryMessagesTest, LogLevelWarningSilencesLibraries) {
  setLogLevel(LogLevel::Warning);
  const Batch batch = twoGrains();
  {
    const OperatorActivity activity(config_, batch);
    leptonicaComplains();
  }
  EXPECT_TRUE(lines().empty());
  EXPECT_EQ(parseLogLevel("warning"), LogLevel::Warning);
  EXPECT_FALSE(parseLogLevel("loud"));
}

TEST_F(LibraryMessagesTest, AMessageAfterTheBatchIsNotPinnedOnIt) {
  const Batch batch = twoGrains();
  { const OperatorActivity activity(config_, batch); }
  // Off an operator's thread: standard error, not the finished batch's operator log.
  leptonicaComplains();
  EXPECT_TRUE(lines().empty());
}

} // namespace
} // namespace orch::runtime
