// SHA-256 (FIPS 180-4), for the fingerprint of a declared operator's script or executable: the
// compiler records it in the plan and every worker checks the file it is about to run.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace orch::plan {

/// The digest of `bytes` as 64 lowercase hex digits.
std::string sha256Hex(std::string_view bytes);

/// The digest of the file at `path`, or nullopt with `error` ("No such file or directory").
std::optional<std::string> sha256OfFile(const std::string &path, std::string &error);

} // namespace orch::plan
