// Whole writes, the process's streams and escaped fields (OutputFiles.h).
#include "orch/runtime/outputs/OutputFiles.h"

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <unistd.h>

namespace orch::runtime {

bool writeAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t written = ::write(fd, bytes.data(), bytes.size());
    if (written < 0 && errno == EINTR)
      continue;
    if (written <= 0) {
      if (written == 0)
        errno = EIO;
      return false;
    }
    bytes.remove_prefix(size_t(written));
  }
  return true;
}

bool isStandardStream(const std::string &path) {
  return (path == "/dev/stdout" || path == "/dev/stderr" || path.rfind("/dev/fd/", 0) == 0) &&
         path.find("..") == std::string::npos;
}

int duplicateStandardStream(const std::string &path) {
  const int stream = path == "/dev/stdout"   ? STDOUT_FILENO
                     : path == "/dev/stderr" ? STDERR_FILENO
                                             : std::atoi(path.c_str() + 8);
  return ::fcntl(stream, F_DUPFD_CLOEXEC, 3);
}

std::string escapeField(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if (c <= 0x20 || c == '%' || c == 0x7f) {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", c);
      out += hex;
    } else {
      out += char(c);
    }
  }
  return out;
}

std::optional<std::string> unescapeField(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    unsigned value = 0;
    if (i + 2 >= text.size())
      return std::nullopt;
    const auto [end, error] = std::from_chars(text.data() + i + 1, text.data() + i + 3, value, 16);
    if (error != std::errc() || end != text.data() + i + 3)
      return std::nullopt;
    out += char(value);
    i += 2;
  }
  return out;
}

} // namespace orch::runtime
