// The run journal's store of finished grains' values (GrainCheckpoints.h): a resumed run
// reads the store a record at a time, keeps small values in memory and reads big ones (a
// `checkpoint: true` Call's rendered pages) back only when they are recalled, and starts from a
// store holding only the records of rows that run again.
#include "EngineTestPlans.h"

#include "../../runtime/outputs/src/GrainCheckpoints.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fcntl.h>
#include <filesystem>
#include <functional>
#include <map>
#include <unistd.h>

namespace orch::runtime {
namespace {

/// A pipeline with one Call, whose values a store keeps.
plan::Plan oneCallPlan() {
  return orch::testing::compileRunnable(R"(pipeline kept;
source rows = jsonl("in.jsonl") as Doc;
sink jsonl(path: "out.jsonl", record: { v: test.identity(rows.id) });
)");
}

uint32_t firstInvoke(const plan::Plan &plan) {
  uint32_t node = 0;
  while (plan.nodes[node].kind != plan::NodeKind::Invoke)
    ++node;
  return node;
}

/// A store file of this test's, not there yet.
std::string freshStore(const std::string &name) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::filesystem::remove(path);
  return path;
}

std::function<bool(uint32_t, uint64_t)> every() {
  return [](uint32_t, uint64_t) { return true; };
}
std::function<bool(uint32_t, uint64_t)> none() {
  return [](uint32_t, uint64_t) { return false; };
}

TEST(GrainCheckpointsTest, BigValuesAreReadBackWhenRecalledFromAStoreOfTheRowsThatRunAgain) {
  const plan::Plan plan = orch::testing::compileRunnable(R"(pipeline kept;
source rows = jsonl("in.jsonl") as Doc;
big = test.identity(rows.id) { checkpoint: true };
small = test.identity(big);
sink jsonl(path: "out.jsonl", record: { v: small });
)");
  uint32_t bigNode = 0, smallNode = 0;
  for (uint32_t n = 0; n < plan.nodes.size(); ++n)
    if (plan.nodes[n].kind == plan::NodeKind::Invoke)
      (plan.calls[plan.nodes[n].index].name == "big" ? bigNode : smallNode) = n;
  const std::string dir = ::testing::TempDir() + "/grain-checkpoints";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/values";
  const Value large = Value::bytes(std::string(3 << 20, 'p')); // a rendered page
  {
    GrainCheckpoints writer(plan);
    writer.attach(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644));
    for (uint64_t row = 0; row < 4; ++row) {
      writer.keep(bigNode, 100 + row, 0, row, large);
      writer.keep(smallNode, 200 + row, 0, row, Value::integer(int64_t(row)));
    }
  } // flushed and closed
  const uint64_t before = std::filesystem::file_size(path);
  EXPECT_GT(before, 4u * (3u << 20)) << "a checkpoint: true Call keeps values of any size";

  GrainCheckpoints reader(plan);
  // Rows 0 and 2 were committed: their values are garbage now.
  reader.load(
      path, [](uint32_t, uint64_t row) { return row % 2 == 1; },
      [](uint32_t, uint64_t) { return false; });
  EXPECT_EQ(reader.recallable(), 4u);
  ASSERT_TRUE(reader.replaceStore(path));
  EXPECT_LT(std::filesystem::file_size(path), before / 2 + 1024) << "rows 1 and 3 only";
  EXPECT_FALSE(std::filesystem::exists(path + ".new"));
  for (uint64_t row : {1u, 3u}) {
    const Value *small = reader.recall(smallNode, 200 + row);
    ASSERT_TRUE(small);
    EXPECT_EQ(*small, Value::integer(int64_t(row)));
    const Value *page = reader.recall(bigNode, 100 + row);
    ASSERT_TRUE(page) << "read back from the rewritten store";
    EXPECT_EQ(*page, large);
  }
  EXPECT_FALSE(reader.recall(bigNode, 100)) << "row 0 was done";
  EXPECT_FALSE(reader.recall(smallNode, 202));
}

TEST(GrainCheckpointsTest, ACheapValueIsKeptOnlyWhereAKeptValueAfterItWasMadeFromIt) {
  // `quick` feeds `slow`, whose kept value a resume reuses: were quick's value computed again
  // (an operator that is not deterministic), the row would mix the two runs. `leaf` feeds only
  // the sink; `pinned` says checkpoint: true.
  const plan::Plan plan = orch::testing::compileRunnable(R"(pipeline cheap;
source rows = jsonl("in.jsonl") as Doc;
quick = test.identity(rows.id);
slow = test.sleep(quick, ms: 1);
leaf = test.identity(rows.id);
pinned = test.identity(rows.id) { checkpoint: true };
sink jsonl(path: "out.jsonl", record: { a: slow, b: leaf, c: pinned });
)");
  std::map<std::string, uint32_t> nodeOf;
  for (uint32_t n = 0; n < plan.nodes.size(); ++n)
    if (plan.nodes[n].kind == plan::NodeKind::Invoke)
      nodeOf[plan.calls[plan.nodes[n].index].name] = n;
  ASSERT_EQ(nodeOf.size(), 4u);
  const std::string path = freshStore("grain-checkpoints-cheap");
  {
    GrainCheckpoints writer(plan);
    writer.attach(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644));
    uint64_t key = 1;
    for (const auto &[name, node] : nodeOf)
      writer.keep(node, key++, 0, 0, Value::integer(7), /*cheap=*/true);
    writer.keep(nodeOf["leaf"], key++, 0, 0, Value::integer(8), /*cheap=*/false);
  }
  GrainCheckpoints reader(plan);
  reader.load(path, every(), none());
  ASSERT_TRUE(reader.replaceStore(path));
  std::map<std::string, bool> kept;
  uint64_t key = 1;
  for (const auto &[name, node] : nodeOf)
    kept[name] = reader.recall(node, key++) != nullptr;
  EXPECT_TRUE(kept["quick"]) << "slow's kept value was made from it";
  EXPECT_FALSE(kept["slow"]) << "cheap, and nothing after it keeps";
  EXPECT_FALSE(kept["leaf"]) << "cheap, and nothing after it keeps";
  EXPECT_TRUE(kept["pinned"]) << "checkpoint: true";
  EXPECT_TRUE(reader.recall(nodeOf["leaf"], key)) << "a value worth keeping is kept";
}

TEST(GrainCheckpointsTest, ARecordThatClaimsMoreThanTheStoreEndsIt) {
  const plan::Plan plan = oneCallPlan();
  const uint32_t node = firstInvoke(plan);
  const std::string path = freshStore("grain-checkpoints-cut");
  {
    GrainCheckpoints writer(plan);
    writer.attach(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644));
    writer.keep(node, 1, 0, 0, Value::integer(7));
  }
  // A header claiming 2 GiB, as a crash mid-write or a damaged disk might leave.
  const char claim[8] = {'\0', '\0', '\0', '\x80', '\0', '\0', '\0', '\0'};
  std::FILE *file = std::fopen(path.c_str(), "ab");
  ASSERT_TRUE(file);
  std::fwrite(claim, 1, sizeof(claim), file);
  std::fclose(file);
  GrainCheckpoints reader(plan);
  reader.load(path, every(), none());
  EXPECT_EQ(reader.recallable(), 1u) << "the record before it stays";
  ASSERT_TRUE(reader.replaceStore(path));
  const Value *kept = reader.recall(node, 1);
  ASSERT_TRUE(kept);
  EXPECT_EQ(*kept, Value::integer(7));
}

TEST(GrainCheckpointsTest,
     ARowCommittedBeforeItsValuesAreWrittenHasNoneWrittenButAFailedRowKeepsThem) {
  const plan::Plan plan = oneCallPlan();
  const uint32_t node = firstInvoke(plan);
  const std::string path = freshStore("grain-checkpoints-committed");
  {
    GrainCheckpoints writer(plan);
    writer.attach(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644));
    for (uint64_t row = 0; row < 4; ++row)
      writer.keep(node, 10 + row, 0, row, Value::integer(int64_t(row)));
    writer.rowCommitted(0, 0, /*failed=*/false); // written: a resume skips it
    writer.rowCommitted(0, 1, /*failed=*/true);  // --retry-failed recalls its values
    writer.flush();
    writer.keep(node, 14, 0, 4, Value::integer(4));
    writer.rowCommitted(0, 2, /*failed=*/false); // after its value was written: it stays
  }                                              // flushed and closed
  GrainCheckpoints reader(plan);
  reader.load(path, every(), none());
  EXPECT_EQ(reader.recallable(), 4u) << "rows 1 to 4";
  EXPECT_FALSE(reader.recall(node, 10)) << "row 0 was committed before its value was written";
  for (uint64_t row = 1; row <= 4; ++row) {
    const Value *kept = reader.recall(node, 10 + row);
    ASSERT_TRUE(kept) << "row " << row;
    EXPECT_EQ(*kept, Value::integer(int64_t(row)));
  }
}

TEST(GrainCheckpointsTest, KeptValuesAreWrittenWhenTheRunLoopFindsThemATenthOfASecondOld) {
  // keep() reads no clock (it runs once per grain): the run loop hands its clock to flushIfDue
  // once a round.
  const plan::Plan plan = oneCallPlan();
  const uint32_t node = firstInvoke(plan);
  const std::string path = freshStore("grain-checkpoints-due");
  GrainCheckpoints writer(plan);
  writer.attach(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644));
  const auto attached = std::chrono::steady_clock::now();
  for (uint64_t row = 0; row < 3; ++row)
    writer.keep(node, 10 + row, 0, row, Value::integer(int64_t(row)));
  writer.flushIfDue(attached + std::chrono::milliseconds(50));
  EXPECT_EQ(std::filesystem::file_size(path), 0u) << "not due yet: the values wait";
  writer.flushIfDue(attached + std::chrono::milliseconds(150));
  const uint64_t written = std::filesystem::file_size(path);
  EXPECT_GT(written, 0u) << "due: the waiting values are written";
  writer.keep(node, 13, 0, 3, Value::integer(3));
  writer.flushIfDue(attached + std::chrono::milliseconds(200));
  EXPECT_EQ(std::filesystem::file_size(path), written) << "a tenth of a second after the last";
  writer.flushIfDue(attached + std::chrono::milliseconds(260));
  EXPECT_GT(std::filesystem::file_size(path), written);
  // Many values do not wait for the clock: 1 MiB of them is written at once.
  const uint64_t before = std::filesystem::file_size(path);
  for (uint64_t row = 4; row < 4 + 40; ++row)
    writer.keep(node, 10 + row, 0, row, Value::string(std::string(40000, 'x')));
  EXPECT_GT(std::filesystem::file_size(path), before + (1u << 20) / 2);
}

} // namespace
} // namespace orch::runtime
