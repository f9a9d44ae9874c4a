// What every writer of an output shares (sinks, the run journal, the errors journal): whole
// writes, the process's own streams named as paths, and fields of line-based records escaped.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace orch::runtime {

/// Writes all of `bytes` to `fd` (retrying short writes and EINTR); false with errno set
/// otherwise (EIO for a write of nothing).
bool writeAll(int fd, std::string_view bytes);

/// /dev/stdout, /dev/stderr and /dev/fd/N: the process's own streams, written as they are.
bool isStandardStream(const std::string &path);

/// A descriptor of the stream `path` names (isStandardStream), duplicated close-on-exec: its
/// offset is the process's (`>>` appends, other writers to it are not overwritten). -1 with
/// errno otherwise.
int duplicateStandardStream(const std::string &path);

/// A %-escape of everything that would split a line or a field of one (control characters,
/// space, '%', DEL), and its inverse (nullopt for a malformed escape).
std::string escapeField(std::string_view text);
std::optional<std::string> unescapeField(std::string_view text);

} // namespace orch::runtime
