// Whole writes and the process's streams (OutputFiles.h).
#include "orch/runtime/outputs/OutputFiles.h"

#include <cerrno>
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

} // namespace orch::runtime
