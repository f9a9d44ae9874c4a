// The webdataset sink's members, known answer: keys made safe for WebDataset readers, Bytes as
// they are, strings as UTF-8, records as JSON; a rolled-back source row leaves nothing; shards
// close at the first commit past shard_samples. Read back with libarchive.
#include "orch/runtime/operators/Operator.h"
#include "orch/runtime/outputs/SinkExtents.h"
#include "orch/stdlib/StandardOperators.h"

#include <archive.h>
#include <archive_entry.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <unistd.h>

namespace orch::runtime {
namespace {

namespace fs = std::filesystem;

/// Every member of a tar: (name, content), in order.
std::vector<std::pair<std::string, std::string>> members(const fs::path &tar) {
  std::vector<std::pair<std::string, std::string>> found;
  archive *reader = archive_read_new();
  archive_read_support_format_tar(reader);
  EXPECT_EQ(archive_read_open_filename(reader, tar.c_str(), 10240), ARCHIVE_OK) << tar;
  archive_entry *entry = nullptr;
  while (archive_read_next_header(reader, &entry) == ARCHIVE_OK) {
    std::string content(size_t(archive_entry_size(entry)), '\0');
    archive_read_data(reader, content.data(), content.size());
    found.emplace_back(archive_entry_pathname(entry), content);
  }
  archive_read_free(reader);
  return found;
}

TEST(WebDatasetTest, MembersAreKeyDotFieldWithTheirBytesAndShardsCloseOnCommits) {
  const fs::path dir = fs::temp_directory_path() / ("orch-wds-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  OperatorRegistry registry;
  stdlib::registerStandardOperators(registry);
  const std::vector<plan::NamedConstant> constants = {{"dir", dir.string()},
                                                      {"shard_samples", int64_t(2)},
                                                      {"shard_bytes", int64_t(0)},
                                                      {"order", std::string("finish")}};
  OperatorConfig config("webdataset", "webdataset", constants, {"sample"});
  std::unique_ptr<RowSink> sink = (*registry.sink("webdataset"))(config);
  sink->takeUp();
  auto sample = [](const char *key, std::string png) {
    return Value::record({{"__key__", Value::string(key)},
                          {"png", Value::bytes(std::move(png))},
                          {"txt", Value::string("héllo")},
                          {"json", Value::record({{"page", Value::integer(3)}})}});
  };
  const Value first = sample("doc.v2/page 1", std::string("\x89PNG\0\1", 6));
  sink->write(std::span<const Value>(&first, 1));
  sink->prepare();
  sink->commit();
  const Value dropped = sample("rolled-back", "x");
  sink->write(std::span<const Value>(&dropped, 1));
  sink->rollback();
  const Value second = sample("b", "y"), third = sample("c", "z");
  sink->write(std::span<const Value>(&second, 1));
  sink->write(std::span<const Value>(&third, 1));
  sink->prepare(); // three samples: past shard_samples, the shard ends here
  EXPECT_EQ(decodeExtent(sink->resumeRecord())->names,
            std::vector<std::string>{"shard-000000.tar"});
  sink->commit(); // and is renamed into place
  EXPECT_TRUE(fs::exists(dir / "shard-000000.tar"));
  const Value fourth = sample("d", "w");
  sink->write(std::span<const Value>(&fourth, 1));
  sink->prepare();
  sink->commit();
  // A root prepared (it fills the shard, which is ended) but rolled back, as when another sink
  // cannot write its rows: its members and the shard's end go, and the shard goes on.
  const Value fifth = sample("e", "v");
  sink->write(std::span<const Value>(&fifth, 1));
  sink->prepare();
  EXPECT_EQ(decodeExtent(sink->resumeRecord())->names,
            std::vector<std::string>{"shard-000001.tar"});
  sink->rollback();
  EXPECT_FALSE(fs::exists(dir / "shard-000001.tar"));
  sink->close();

  const auto shard0 = members(dir / "shard-000000.tar");
  ASSERT_EQ(shard0.size(), 9u);
  EXPECT_EQ(shard0[0],
            std::make_pair(std::string("doc_v2_page 1.png"), std::string("\x89PNG\0\1", 6)));
  EXPECT_EQ(shard0[1], std::make_pair(std::string("doc_v2_page 1.txt"), std::string("héllo")));
  EXPECT_EQ(shard0[2],
            std::make_pair(std::string("doc_v2_page 1.json"), std::string("{\"page\":3}")));
  EXPECT_EQ(shard0[3].first, "b.png");
  EXPECT_EQ(shard0[6].first, "c.png");
  const auto shard1 = members(dir / "shard-000001.tar");
  ASSERT_EQ(shard1.size(), 3u);
  EXPECT_EQ(shard1[0], std::make_pair(std::string("d.png"), std::string("w")));
  // Nothing hidden is left; the rolled-back sample is nowhere.
  std::vector<std::string> files;
  for (const auto &entry : fs::directory_iterator(dir))
    files.push_back(entry.path().filename().string());
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{"shard-000000.tar", "shard-000001.tar"}));
  fs::remove_all(dir);
}

} // namespace
} // namespace orch::runtime
