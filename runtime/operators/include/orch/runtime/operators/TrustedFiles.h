// Files that grant access (a coordinator's authorized keys, key pairs, the coordinator key a
// worker pins, a worker's allowed operators) must be ones only their reader could have written,
// as OpenSSH's StrictModes requires of ~/.ssh: owned by the user running Orch or by root, not
// writable by group or others, in directories others cannot write either (unless sticky, as
// /tmp is), so that nobody else can add a key or swap the file (docs/cluster.md, "Security").
#pragma once

#include <optional>
#include <string>

namespace orch::runtime {

/// Why the file at `path` cannot be trusted to grant access, or nullopt: it, or a directory on
/// the way to it (where the path names it, and where it really is, up to /), could have been
/// written by someone else. `what` names it in the message ("the authorized-keys file"); the
/// message says how to fix it.
std::optional<std::string> untrustedFileProblem(const std::string &path, const std::string &what);

/// Reads the file at `path` into `text` if it can be trusted (untrustedFileProblem), checking
/// the very file it reads (opened once, checked through its descriptor, so that a link
/// swapped meanwhile gains nothing); `secret` files must not be readable by others either
/// (chmod 600). Why not, or nullopt.
std::optional<std::string> readTrustedFile(const std::string &path, const std::string &what,
                                           std::string &text, bool secret = false);

/// Why `directory` is not private to the user running Orch (owned by them or root, writable by
/// nobody else: a sticky /tmp does not count, as anyone may create a name there; and no
/// directory above it, as named or resolved, writable by someone else), or nullopt.
/// A socket in a private directory can only have been made by that user.
std::optional<std::string> privateDirectoryProblem(const std::string &directory);

} // namespace orch::runtime
