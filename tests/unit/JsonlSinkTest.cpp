// The jsonl sink's group commit (docs/outputs.md): the lines of committed roots are held and
// written together, with their space reserved when each root is prepared; a rolled-back root
// leaves nothing, held or written; a root of many rows is written through as it is staged and
// cut off again when it is rolled back; closing writes what is held and gives the reserved
// space back.
#include "orch/runtime/operators/Operator.h"
#include "orch/stdlib/StandardOperators.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace orch::runtime {
namespace {

namespace fs = std::filesystem;

std::string contentOf(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// Whether the file system under `dir` reserves space past a file's end (fallocate with
/// FALLOC_FL_KEEP_SIZE): where it cannot, the sink writes each root's lines at once.
bool reservesSpace(const fs::path &dir) {
  const fs::path probe = dir / "probe";
  const int fd = ::open(probe.c_str(), O_RDWR | O_CREAT, 0644);
  const bool reserves = fd >= 0 && ::fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 4096) == 0;
  if (fd >= 0)
    ::close(fd);
  fs::remove(probe);
  return reserves;
}

class JsonlSinkTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("orch-jsonl-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    if (!reservesSpace(dir_))
      GTEST_SKIP() << dir_ << " cannot reserve space past a file's end: nothing is held there";
    stdlib::registerStandardOperators(registry_);
    const std::vector<plan::NamedConstant> constants = {{"path", path().string()},
                                                        {"order", std::string("finish")},
                                                        {"nonfinite", std::string("fail")}};
    config_.emplace("jsonl", "jsonl", constants, std::vector<std::string>{"record"});
    sink_ = (*registry_.sink("jsonl"))(*config_);
    sink_->takeUp();
  }
  void TearDown() override {
    sink_.reset();
    fs::remove_all(dir_);
  }

  fs::path path() const { return dir_ / "rows.jsonl"; }

  /// Stages one row {"id": id, "pad": pad}; the line it makes.
  std::string write(int64_t id, const std::string &pad = "") {
    const Value row = Value::record({{"id", Value::integer(id)}, {"pad", Value::string(pad)}});
    sink_->write(std::span<const Value>(&row, 1));
    return "{\"id\":" + std::to_string(id) + ",\"pad\":\"" + pad + "\"}\n";
  }

  uint64_t blocksBytes() const {
    struct stat info {};
    EXPECT_EQ(::stat(path().c_str(), &info), 0);
    return uint64_t(info.st_blocks) * 512;
  }

  fs::path dir_;
  OperatorRegistry registry_;
  std::optional<OperatorConfig> config_;
  std::unique_ptr<RowSink> sink_;
};

TEST_F(JsonlSinkTest, CommittedRootsAreHeldAndWrittenTogetherAndARolledBackRootLeavesNothing) {
  std::string expected = write(1);
  expected += write(2);
  sink_->prepare();
  EXPECT_FALSE(sink_->publishes()) << "its commit makes nothing visible: nothing to record first";
  sink_->commit();
  EXPECT_EQ(sink_->heldBytes(), expected.size());
  EXPECT_EQ(fs::file_size(path()), 0u) << "held, not written one root at a time";

  write(3);
  sink_->prepare();
  sink_->rollback();
  EXPECT_EQ(sink_->heldBytes(), expected.size()) << "the rolled-back root's line is gone";

  expected += write(4);
  sink_->prepare();
  sink_->commit();
  sink_->writeHeld();
  EXPECT_EQ(sink_->heldBytes(), 0u);
  EXPECT_EQ(contentOf(path()), expected) << "one write for both roots, in order";

  expected += write(5);
  sink_->prepare();
  sink_->commit();
  sink_->close();
  EXPECT_EQ(contentOf(path()), expected) << "closing writes what is held";
  EXPECT_LT(blocksBytes(), uint64_t(64) << 10) << "the space reserved past the end is given back";
}

TEST_F(JsonlSinkTest, ARootOfManyRowsIsWrittenThroughAndItsRollbackCutsTheFileBack) {
  const std::string first = write(0);
  sink_->prepare();
  sink_->commit();
  // 300 rows of 4 KiB: past the 1 MiB step, what is held goes to the file as it is staged.
  const std::string pad(4096, 'x');
  for (int64_t id = 1; id <= 300; ++id)
    write(id, pad);
  EXPECT_GT(fs::file_size(path()), uint64_t(1) << 20) << "a root this large is not held whole";
  EXPECT_LT(sink_->heldBytes(), uint64_t(1) << 20);
  sink_->prepare();
  sink_->rollback();
  EXPECT_EQ(contentOf(path()), first) << "the root's lines are cut off, the one before stays";
  EXPECT_EQ(sink_->heldBytes(), 0u);

  const std::string last = write(301);
  sink_->prepare();
  sink_->commit();
  sink_->close();
  EXPECT_EQ(contentOf(path()), first + last);
}

TEST_F(JsonlSinkTest, AHeldRootPreparedButNotCommittedIsWrittenBeforeItsRecordAndRollsBack) {
  // A sink beside it publishes (a file renamed into place): the journal records the root
  // first, and a record never points past what is written, so the prepared root's lines go to
  // the file before its commit; a rollback then still takes them back.
  const std::string first = write(1);
  sink_->prepare();
  sink_->commit();
  const std::string second = write(2);
  sink_->prepare();
  sink_->writeHeld();
  EXPECT_EQ(contentOf(path()), first + second);
  sink_->rollback();
  EXPECT_EQ(contentOf(path()), first);
  const std::string third = write(3);
  sink_->prepare();
  sink_->commit();
  sink_->close();
  EXPECT_EQ(contentOf(path()), first + third);
}

} // namespace
} // namespace orch::runtime
