// CURVE key pairs (ZeroMQ's CurveZMQ: Curve25519 keys written in Z85, 40 characters) and the
// files that hold them: `orch keygen NAME` writes NAME.key (the pair, mode 0600) and NAME.pub
// (one line, `curve KEY NAME`); an authorized-keys file is such lines, one per worker key
// (docs/cluster.md, "Security").
#pragma once

#include <map>
#include <optional>
#include <string>
#include <variant>

namespace orch::runtime {

struct CurveKeyPair {
  /// Z85, 40 characters each.
  std::string publicKey;
  std::string secretKey;
  /// Who the key stands for ("coordinator", "gpu-node-7"): shown where the key is recognised.
  std::string name;
};

/// A public key and the name it was published under.
struct CurvePublicKey {
  std::string key;
  std::string name;
};

/// Worker public keys the coordinator admits, each with its name (the ZAP User-Id).
using AuthorizedKeys = std::map<std::string, std::string>;

/// A fresh key pair from libsodium's random source.
CurveKeyPair generateCurveKeyPair(std::string name);

/// Whether `name` may name a key (letters, digits, '.', '_', '-', '@', ':'; 1-64 characters).
bool isValidKeyName(const std::string &name);

/// Whether `text` is a Z85 CURVE key (40 characters that decode to 32 bytes).
bool isCurveKey(const std::string &text);

/// The public key whose secret half is `secretKey`, or "" if it is not a key.
std::string publicKeyOf(const std::string &secretKey);

/// Writes BASE.key (the pair, created with mode 0600) and BASE.pub; refuses to replace existing
/// files unless `overwrite`. A message when it cannot.
std::optional<std::string> writeKeyFiles(const CurveKeyPair &pair, const std::string &base,
                                         bool overwrite);

/// The key pair in a .key file. Refused when other users could read it (like ssh's "unprotected
/// private key file"), when someone else could have written it (TrustedFiles.h) or it is not a
/// key file; the message names the file.
std::variant<CurveKeyPair, std::string> readKeyPairFile(const std::string &path);

/// The public key in a .pub file (the first key line): a worker pins its coordinator with it, so
/// it is refused when someone else could have written it (TrustedFiles.h).
std::variant<CurvePublicKey, std::string> readPublicKeyFile(const std::string &path);

/// Every key line of an authorized-keys file (blank lines and `#` comments allowed); a
/// malformed line is an error naming path:line. An empty file is an error too (it would admit
/// nobody), and so is one someone else could have written (TrustedFiles.h).
std::variant<AuthorizedKeys, std::string> readAuthorizedKeys(const std::string &path);

/// The text of a .pub file, and of one authorized-keys line: "curve KEY NAME\n".
std::string publicKeyLine(const std::string &key, const std::string &name);

} // namespace orch::runtime
