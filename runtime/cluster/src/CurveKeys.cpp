// Key generation with libzmq (zmq_curve_keypair uses libsodium) and the key files' formats.
#include "orch/runtime/cluster/CurveKeys.h"

#include "orch/runtime/operators/TrustedFiles.h"

#include <zmq.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace orch::runtime {
namespace {

constexpr size_t kZ85KeyLength = 40;

std::string systemError(const std::string &what, const std::string &path) {
  return what + " " + path + ": " + std::strerror(errno);
}

/// The words of each line that is not blank or a comment, with its line number.
struct KeyFileLine {
  unsigned number;
  std::vector<std::string> words;
};

/// The key lines of the file at `path` (`what`), read only if it can be trusted
/// (TrustedFiles.h); `secret`: others may not read it either.
std::variant<std::vector<KeyFileLine>, std::string>
readKeyFileLines(const std::string &path, const std::string &what, bool secret = false) {
  std::string contents;
  if (std::optional<std::string> problem = readTrustedFile(path, what, contents, secret))
    return *problem;
  std::istringstream in(contents);
  std::vector<KeyFileLine> lines;
  std::string text;
  for (unsigned number = 1; std::getline(in, text); ++number) {
    std::istringstream words(text);
    KeyFileLine line{number, {}};
    for (std::string word; words >> word;)
      line.words.push_back(word);
    if (!line.words.empty() && line.words.front()[0] != '#')
      lines.push_back(std::move(line));
  }
  return lines;
}

/// Writes `text` to a new file `path` with `mode` (replacing an old one only if `overwrite`).
std::optional<std::string> writeNewFile(const std::string &path, const std::string &text,
                                        mode_t mode, bool overwrite) {
  if (overwrite)
    ::unlink(path.c_str());
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) {
    if (errno == EEXIST)
      return path + " exists already (remove it, or use --force to replace it)";
    return systemError("cannot create", path);
  }
  // The umask may have taken bits away, never added: fchmod makes the mode exact.
  ::fchmod(fd, mode);
  const bool written = ::write(fd, text.data(), text.size()) == ssize_t(text.size());
  const bool closed = ::close(fd) == 0;
  if (!written || !closed)
    return systemError("cannot write", path);
  return std::nullopt;
}

} // namespace

CurveKeyPair generateCurveKeyPair(std::string name) {
  char publicKey[kZ85KeyLength + 1] = {};
  char secretKey[kZ85KeyLength + 1] = {};
  if (::zmq_curve_keypair(publicKey, secretKey) != 0)
    throw std::runtime_error(std::string("cannot generate a CURVE key pair: ") +
                             ::zmq_strerror(::zmq_errno()) +
                             " (this libzmq was built without CURVE support)");
  return CurveKeyPair{publicKey, secretKey, std::move(name)};
}

bool isValidKeyName(const std::string &name) {
  if (name.empty() || name.size() > 64)
    return false;
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && !std::strchr("._-@:", c))
      return false;
  return true;
}

bool isCurveKey(const std::string &text) {
  if (text.size() != kZ85KeyLength)
    return false;
  uint8_t bytes[32];
  return ::zmq_z85_decode(bytes, text.c_str()) != nullptr;
}

std::string publicKeyOf(const std::string &secretKey) {
  if (!isCurveKey(secretKey))
    return {};
  char publicKey[kZ85KeyLength + 1] = {};
  if (::zmq_curve_public(publicKey, secretKey.c_str()) != 0)
    return {};
  return publicKey;
}

std::string publicKeyLine(const std::string &key, const std::string &name) {
  return "curve " + key + " " + name + "\n";
}

std::optional<std::string> writeKeyFiles(const CurveKeyPair &pair, const std::string &base,
                                         bool overwrite) {
  const std::string secretText = "# Orch CURVE key pair \"" + pair.name +
                                 "\". Secret: whoever can read this file can act as " + pair.name +
                                 ".\n# Its public half is in " + base + ".pub.\npublic " +
                                 pair.publicKey + "\nsecret " + pair.secretKey + "\nname " +
                                 pair.name + "\n";
  if (auto problem = writeNewFile(base + ".key", secretText, 0600, overwrite))
    return problem;
  return writeNewFile(base + ".pub", publicKeyLine(pair.publicKey, pair.name), 0644, overwrite);
}

std::variant<CurveKeyPair, std::string> readKeyPairFile(const std::string &path) {
  auto lines = readKeyFileLines(path, "the key file", true);
  if (auto *problem = std::get_if<std::string>(&lines))
    return *problem;
  CurveKeyPair pair;
  for (const KeyFileLine &line : std::get<std::vector<KeyFileLine>>(lines)) {
    const std::string where = path + ":" + std::to_string(line.number) + ": ";
    if (line.words.size() != 2)
      return where + "expected 'public KEY', 'secret KEY' or 'name NAME'";
    const std::string &field = line.words[0], &value = line.words[1];
    if (field == "public")
      pair.publicKey = value;
    else if (field == "secret")
      pair.secretKey = value;
    else if (field == "name")
      pair.name = value;
    else
      return where + "unknown field '" + field + "'";
  }
  if (!isCurveKey(pair.secretKey))
    return path + " holds no secret CURVE key (write one with orch keygen NAME)";
  const std::string derived = publicKeyOf(pair.secretKey);
  if (!pair.publicKey.empty() && pair.publicKey != derived)
    return path + ": the public key does not belong to the secret key";
  pair.publicKey = derived;
  if (pair.name.empty())
    pair.name = pair.publicKey.substr(0, 8);
  return pair;
}

namespace {

/// One `curve KEY NAME` line; the message names path:line.
std::variant<CurvePublicKey, std::string> parsePublicKeyLine(const KeyFileLine &line,
                                                             const std::string &path) {
  const std::string where = path + ":" + std::to_string(line.number) + ": ";
  if (line.words.size() < 2 || line.words.size() > 3 || line.words[0] != "curve")
    return where + "expected 'curve KEY NAME' (a line of a .pub file written by orch keygen)";
  if (!isCurveKey(line.words[1]))
    return where + "'" + line.words[1] + "' is not a CURVE public key (40 Z85 characters)";
  CurvePublicKey key{line.words[1], line.words.size() == 3 ? line.words[2] : ""};
  if (key.name.empty())
    key.name = key.key.substr(0, 8);
  return key;
}

} // namespace

std::variant<CurvePublicKey, std::string> readPublicKeyFile(const std::string &path) {
  auto lines = readKeyFileLines(path, "the public key file");
  if (auto *problem = std::get_if<std::string>(&lines))
    return *problem;
  const auto &keyLines = std::get<std::vector<KeyFileLine>>(lines);
  if (keyLines.empty())
    return path + " holds no public key (expected 'curve KEY NAME', as orch keygen writes)";
  return parsePublicKeyLine(keyLines.front(), path);
}

std::variant<AuthorizedKeys, std::string> readAuthorizedKeys(const std::string &path) {
  auto lines = readKeyFileLines(path, "the authorized-keys file");
  if (auto *problem = std::get_if<std::string>(&lines))
    return *problem;
  AuthorizedKeys keys;
  for (const KeyFileLine &line : std::get<std::vector<KeyFileLine>>(lines)) {
    auto parsed = parsePublicKeyLine(line, path);
    if (auto *problem = std::get_if<std::string>(&parsed))
      return *problem;
    CurvePublicKey &key = std::get<CurvePublicKey>(parsed);
    keys[key.key] = key.name;
  }
  if (keys.empty())
    return path + " lists no worker keys: no worker could join (append the workers' .pub files)";
  return keys;
}

} // namespace orch::runtime
