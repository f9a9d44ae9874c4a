// Key files as `orch keygen` writes them and the coordinator and workers read them: formats,
// modes, and the messages for files that cannot be used.
#include "orch/runtime/cluster/CurveKeys.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

namespace orch::runtime {
namespace {

namespace fs = std::filesystem;

class CurveKeysTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("orch-keys-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string &name) const { return (dir_ / name).string(); }
  void write(const std::string &name, const std::string &text) {
    std::ofstream(path(name)) << text;
  }

  fs::path dir_;
};

TEST_F(CurveKeysTest, AWrittenPairReadsBackWithItsNameAndModes) {
  const CurveKeyPair pair = generateCurveKeyPair("gpu-node-7");
  EXPECT_TRUE(isCurveKey(pair.publicKey));
  EXPECT_TRUE(isCurveKey(pair.secretKey));
  EXPECT_EQ(publicKeyOf(pair.secretKey), pair.publicKey);
  ASSERT_FALSE(writeKeyFiles(pair, path("gpu-node-7"), false));
  struct stat info {};
  ASSERT_EQ(::stat(path("gpu-node-7.key").c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat(path("gpu-node-7.pub").c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0644u);

  auto read = readKeyPairFile(path("gpu-node-7.key"));
  ASSERT_TRUE(std::holds_alternative<CurveKeyPair>(read)) << std::get<std::string>(read);
  EXPECT_EQ(std::get<CurveKeyPair>(read).secretKey, pair.secretKey);
  EXPECT_EQ(std::get<CurveKeyPair>(read).publicKey, pair.publicKey);
  EXPECT_EQ(std::get<CurveKeyPair>(read).name, "gpu-node-7");

  auto published = readPublicKeyFile(path("gpu-node-7.pub"));
  ASSERT_TRUE(std::holds_alternative<CurvePublicKey>(published));
  EXPECT_EQ(std::get<CurvePublicKey>(published).key, pair.publicKey);
  EXPECT_EQ(std::get<CurvePublicKey>(published).name, "gpu-node-7");

  // A second keygen of the same name does not destroy the first key.
  std::optional<std::string> again =
      writeKeyFiles(generateCurveKeyPair("x"), path("gpu-node-7"), false);
  ASSERT_TRUE(again);
  EXPECT_NE(again->find("exists already"), std::string::npos) << *again;
  EXPECT_EQ(std::get<CurveKeyPair>(readKeyPairFile(path("gpu-node-7.key"))).secretKey,
            pair.secretKey);
}

TEST_F(CurveKeysTest, ASecretKeyOthersCanReadIsRefused) {
  ASSERT_FALSE(writeKeyFiles(generateCurveKeyPair("w"), path("w"), false));
  ::chmod(path("w.key").c_str(), 0644);
  auto read = readKeyPairFile(path("w.key"));
  ASSERT_TRUE(std::holds_alternative<std::string>(read));
  EXPECT_NE(std::get<std::string>(read).find("can be read by other users (mode 0644)"),
            std::string::npos)
      << std::get<std::string>(read);
}

TEST_F(CurveKeysTest, AuthorizedKeysAreThePubLinesAndBadLinesNameTheirPlace) {
  const CurveKeyPair a = generateCurveKeyPair("a"), b = generateCurveKeyPair("b");
  write("workers", "# the cluster's workers\n" + publicKeyLine(a.publicKey, a.name) + "\n" +
                       publicKeyLine(b.publicKey, b.name));
  auto keys = readAuthorizedKeys(path("workers"));
  ASSERT_TRUE(std::holds_alternative<AuthorizedKeys>(keys)) << std::get<std::string>(keys);
  EXPECT_EQ(std::get<AuthorizedKeys>(keys),
            (AuthorizedKeys{{a.publicKey, "a"}, {b.publicKey, "b"}}));

  write("bad", publicKeyLine(a.publicKey, "a") + "curve not-a-key b\n");
  auto bad = readAuthorizedKeys(path("bad"));
  ASSERT_TRUE(std::holds_alternative<std::string>(bad));
  EXPECT_EQ(std::get<std::string>(bad),
            path("bad") + ":2: 'not-a-key' is not a CURVE public key (40 Z85 characters)");

  write("secret-by-mistake", "public " + a.publicKey + "\nsecret " + a.secretKey + "\n");
  auto mistaken = readAuthorizedKeys(path("secret-by-mistake"));
  ASSERT_TRUE(std::holds_alternative<std::string>(mistaken));
  EXPECT_NE(std::get<std::string>(mistaken).find(":1: expected 'curve KEY NAME'"),
            std::string::npos);

  write("empty", "# nobody yet\n");
  auto empty = readAuthorizedKeys(path("empty"));
  ASSERT_TRUE(std::holds_alternative<std::string>(empty));
  EXPECT_NE(std::get<std::string>(empty).find("lists no worker keys"), std::string::npos);
}

// Files that grant access are refused when someone else could have written them (StrictModes).
TEST_F(CurveKeysTest, FilesOthersCouldWriteGrantNothing) {
  const CurveKeyPair a = generateCurveKeyPair("a");
  ::chmod(dir_.c_str(), 0755);
  write("workers", publicKeyLine(a.publicKey, a.name));
  ASSERT_FALSE(writeKeyFiles(a, path("a"), false));
  auto refusal = [](const auto &read) {
    return std::holds_alternative<std::string>(read) ? std::get<std::string>(read) : "";
  };
  ::chmod(path("workers").c_str(), 0644);
  EXPECT_EQ(refusal(readAuthorizedKeys(path("workers"))), "");
  for (mode_t loose : {0666, 0664, 0646}) {
    ::chmod(path("workers").c_str(), loose);
    const std::string message = refusal(readAuthorizedKeys(path("workers")));
    EXPECT_NE(message.find("the authorized-keys file " + path("workers") +
                           " can be written by other users"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("chmod go-w " + path("workers")), std::string::npos) << message;
  }
  ::chmod(path("workers").c_str(), 0644);
  ::chmod(path("a.pub").c_str(), 0666);
  EXPECT_NE(refusal(readPublicKeyFile(path("a.pub"))).find("can be written by other users"),
            std::string::npos);
  ::chmod(path("a.pub").c_str(), 0644);

  // A directory others can write lets them replace the file; a sticky one (/tmp) does not.
  ::chmod(dir_.c_str(), 0777);
  const std::string message = refusal(readAuthorizedKeys(path("workers")));
  EXPECT_NE(message.find("the directory " + dir_.string() + " can be written by other users"),
            std::string::npos)
      << message;
  EXPECT_NE(refusal(readKeyPairFile(path("a.key"))).find("the directory"), std::string::npos);
  ::chmod(dir_.c_str(), 01777);
  EXPECT_EQ(refusal(readAuthorizedKeys(path("workers"))), "");
  ::chmod(dir_.c_str(), 0755);

  // Owned by another user (not root): refused even with a strict mode. Needs root to chown.
  if (::geteuid() != 0)
    GTEST_SKIP() << "changing a file's owner needs root";
  ASSERT_EQ(::chown(path("workers").c_str(), 65534, 65534), 0);
  const std::string foreign = refusal(readAuthorizedKeys(path("workers")));
  EXPECT_NE(foreign.find(path("workers") + " belongs to "), std::string::npos) << foreign;
  EXPECT_NE(foreign.find("not to root (who runs Orch): "), std::string::npos) << foreign;
  EXPECT_NE(foreign.find("chown root " + path("workers")), std::string::npos) << foreign;
  ASSERT_EQ(::chown(path("a.key").c_str(), 65534, 65534), 0);
  EXPECT_NE(refusal(readKeyPairFile(path("a.key"))).find("belongs to"), std::string::npos);
}

TEST_F(CurveKeysTest, KeyNamesAreShortAndPlain) {
  EXPECT_TRUE(isValidKeyName("gpu-node-7.example.org"));
  EXPECT_TRUE(isValidKeyName("worker@host:3"));
  EXPECT_FALSE(isValidKeyName(""));
  EXPECT_FALSE(isValidKeyName("two words"));
  EXPECT_FALSE(isValidKeyName("../escape"));
  EXPECT_FALSE(isValidKeyName(std::string(65, 'a')));
}

} // namespace
} // namespace orch::runtime
