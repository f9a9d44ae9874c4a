// Untrusted input cannot take the coordinator down: a JSON line nested 30,000 levels deep, a
// WebDataset member whose header claims 100 GiB, a JSON member nested 50,000 levels deep are
// each one failed row with the reason, and the rows around them are read as usual.
#include "orch/runtime/operators/Operator.h"
#include "orch/stdlib/StandardOperators.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace orch::runtime {
namespace {

namespace fs = std::filesystem;

class PoisonInputTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("orch-poison-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    stdlib::registerStandardOperators(registry_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  /// Every row `source` yields: its value's text, or "error: why".
  std::vector<std::string> read(const std::string &source, const std::string &constant,
                                const std::string &value) {
    const std::vector<plan::NamedConstant> constants = {{constant, value}};
    OperatorConfig config(source, source, constants, {});
    std::unique_ptr<RowSource> rows = (*registry_.source(source))(config);
    std::vector<std::string> out;
    while (std::optional<SourceRow> row = rows->next())
      out.push_back(row->value ? row->value->str() : "error: " + row->error);
    return out;
  }

  /// One tar member: a ustar header claiming `claimed` bytes (base-256 when it does not fit
  /// in octal, as GNU tar writes it), then `content` padded to 512 bytes.
  static std::string tarMember(const std::string &name, const std::string &content,
                               uint64_t claimed) {
    char header[512] = {};
    std::memcpy(header, name.data(), std::min<size_t>(name.size(), 99));
    std::memcpy(header + 100, "0000644", 7);
    std::memcpy(header + 108, "0000000", 7);
    std::memcpy(header + 116, "0000000", 7);
    if (claimed < (uint64_t(1) << 33)) {
      std::snprintf(header + 124, 12, "%011llo", static_cast<unsigned long long>(claimed));
    } else {
      header[124] = char(0x80);
      for (int i = 0; i < 8; ++i)
        header[135 - i] = char((claimed >> (8 * i)) & 0xff);
    }
    std::memcpy(header + 136, "00000000000", 11);
    header[156] = '0';
    std::memcpy(header + 257, "ustar", 6);
    std::memcpy(header + 263, "00", 2);
    std::memset(header + 148, ' ', 8);
    unsigned sum = 0;
    for (unsigned char c : header)
      sum += c;
    std::snprintf(header + 148, 8, "%06o", sum);
    std::string member(header, 512);
    member += content;
    member.append((512 - content.size() % 512) % 512, '\0');
    return member;
  }

  fs::path dir_;
  OperatorRegistry registry_;
};

TEST_F(PoisonInputTest, AJsonLineNestedThirtyThousandLevelsIsOneFailedRow) {
  std::ofstream(dir_ / "in.jsonl") << "{\"id\": 0}\n"
                                   << std::string(30000, '[') << std::string(30000, ']') << "\n"
                                   << "{\"id\": 2, \"deep\": [[[1]]]}\n";
  std::vector<std::string> rows = read("jsonl", "path", (dir_ / "in.jsonl").string());
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0], "{\"id\": 0}");
  EXPECT_NE(rows[1].find("in.jsonl:2: nested deeper than 512 levels"), std::string::npos)
      << rows[1];
  EXPECT_EQ(rows[2], "{\"id\": 2, \"deep\": [[[1]]]}");
}

TEST_F(PoisonInputTest, BracketsInsideStringsDoNotCountAsNesting) {
  std::ofstream(dir_ / "in.jsonl")
      << "{\"text\": \"" << std::string(2000, '[') << "\\\"" << std::string(2000, '{') << "\"}\n";
  std::vector<std::string> rows = read("jsonl", "path", (dir_ / "in.jsonl").string());
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].rfind("error:", 0), std::string::npos) << rows[0].substr(0, 200);
}

TEST_F(PoisonInputTest, AShardMemberClaimingOneHundredGibibytesIsOneFailedRow) {
  // Before, the reader allocated what the header claimed: "LLVM ERROR: out of memory".
  std::ofstream(dir_ / "shard-0.tar", std::ios::binary)
      << tarMember("a.txt", "first", 5) << tarMember("b.bin", "short", uint64_t(100) << 30)
      << std::string(1024, '\0');
  std::ofstream(dir_ / "shard-1.tar", std::ios::binary)
      << tarMember("c.txt", "after", 5) << std::string(1024, '\0');
  std::vector<std::string> rows = read("webdataset", "glob", (dir_ / "shard-*.tar").string());
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_NE(rows[0].find("\"txt\": \"first\""), std::string::npos) << rows[0];
  EXPECT_NE(rows[1].find("\"b.bin\" in the shard"), std::string::npos) << rows[1];
  EXPECT_NE(rows[1].find("claims 100.0 GiB, the shard holds"), std::string::npos) << rows[1];
  EXPECT_NE(rows[2].find("\"txt\": \"after\""), std::string::npos) << rows[2];
}

TEST_F(PoisonInputTest, AJsonShardMemberNestedFiftyThousandLevelsIsOneFailedRow) {
  const std::string deep = std::string(50000, '[') + std::string(50000, ']');
  // The sample holding it fails; the samples around it in the same shard are read.
  std::ofstream(dir_ / "shard-0.tar", std::ios::binary)
      << tarMember("a.txt", "before", 6) << tarMember("b.txt", "deep", 4)
      << tarMember("b.json", deep, deep.size()) << tarMember("c.txt", "after", 5)
      << std::string(1024, '\0');
  std::vector<std::string> rows = read("webdataset", "glob", (dir_ / "shard-*.tar").string());
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_NE(rows[0].find("\"txt\": \"before\""), std::string::npos) << rows[0];
  EXPECT_NE(rows[1].find("error: \"b.json\" in the shard"), std::string::npos) << rows[1];
  EXPECT_NE(rows[1].find("nested deeper than 512 levels"), std::string::npos) << rows[1];
  EXPECT_NE(rows[2].find("\"txt\": \"after\""), std::string::npos) << rows[2];
}

TEST_F(PoisonInputTest, AJsonShardMemberThatIsNotJsonFailsItsSample) {
  // Before, it became Bytes and was written as base64, the row counted as written.
  std::ofstream(dir_ / "shard-0.tar", std::ios::binary)
      << tarMember("a.json", "{\"x\": 1", 7) << tarMember("b.json", "{\"x\": 2}", 8)
      << std::string(1024, '\0');
  std::vector<std::string> rows = read("webdataset", "glob", (dir_ / "shard-*.tar").string());
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_NE(rows[0].find("error: \"a.json\" in the shard"), std::string::npos) << rows[0];
  EXPECT_NE(rows[0].find("not valid JSON"), std::string::npos) << rows[0];
  EXPECT_NE(rows[1].find("\"json\": {\"x\": 2}"), std::string::npos) << rows[1];
}

} // namespace
} // namespace orch::runtime
