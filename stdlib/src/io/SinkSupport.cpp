// The sinks' shared helpers (SinkSupport.h).
#include "SinkSupport.h"

#include "orch/runtime/outputs/OutputFiles.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace orch::stdlib {

namespace fs = std::filesystem;
using runtime::OperatorConfig;
using runtime::OperatorError;

void checkOrder(const OperatorConfig &config) {
  const std::string order = config.stringConstant("order");
  if (order != "finish" && order != "source")
    throw OperatorError(config.name() + ": order must be \"finish\" or \"source\", not \"" + order +
                        "\"");
}

NonFinite nonFiniteOption(const OperatorConfig &config) {
  const std::string choice = config.stringConstant("nonfinite");
  if (choice != "fail" && choice != "null")
    throw OperatorError(config.name() + ": nonfinite must be \"fail\" or \"null\", not \"" +
                        choice + "\"");
  return choice == "null" ? NonFinite::Null : NonFinite::Fail;
}

size_t labelIndex(const OperatorConfig &config, const std::string &label) {
  const std::vector<std::string> &labels = config.inputLabels();
  auto found = std::find(labels.begin(), labels.end(), label);
  if (found == labels.end())
    throw OperatorError(config.op() + ": no input '" + label + "'");
  return static_cast<size_t>(found - labels.begin());
}

void createDirectory(const fs::path &dir, const OperatorConfig &config) {
  std::error_code error;
  if (!dir.empty())
    fs::create_directories(dir, error);
  if (error || (!dir.empty() && !fs::is_directory(dir)))
    throw OperatorError(config.name() + ": cannot create directory \"" + dir.string() +
                        "\": " + (error ? error.message() : "a file of that name is in the way"));
}

std::string sanitizeFileName(const std::string &name) {
  std::string safe;
  for (char c : name) {
    const auto byte = static_cast<unsigned char>(c);
    safe += (c == '/' || c == '\\' || byte < 0x20 || byte == 0x7f) ? '_' : c;
  }
  if (safe.empty() || safe == "." || safe == "..")
    safe = "_" + safe;
  if (safe.front() == '.')
    safe.front() = '_';
  return safe;
}

int lockDirectory(const fs::path &dir, const OperatorConfig &config) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0 || ::flock(fd, LOCK_EX | LOCK_NB) != 0)
    throw OperatorError(
        config.name() + ": \"" + dir.string() +
        "\" is being written by another orch run, or by another sink of this one; wait for "
        "it, or stop it");
  return fd;
}

void removePartialFiles(const fs::path &dir) {
  std::error_code error;
  for (const fs::directory_entry &entry : fs::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    const bool partial = name.size() > kPartialSuffix.size() && name.front() == '.' &&
                         name.compare(name.size() - kPartialSuffix.size(), kPartialSuffix.size(),
                                      kPartialSuffix) == 0;
    // A probe of a run killed between making and removing it (the directory is locked: no
    // other run's probe is here).
    const bool probe = name.rfind(".orch-probe-", 0) == 0;
    if (partial || probe)
      fs::remove(entry.path(), error);
  }
}

void probeWritable(const fs::path &dir, const OperatorConfig &config) {
  const fs::path probe = dir / (".orch-probe-" + std::to_string(::getpid()));
  ::unlink(probe.c_str());
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0)
    throw OperatorError(config.name() + ": cannot write in directory \"" + dir.string() +
                        "\": " + std::strerror(errno));
  ::close(fd);
  ::unlink(probe.c_str());
}

int openOutputFile(const fs::path &path, int flags, const std::string &what) {
  // The process's own streams are named on purpose, and written through the descriptor the
  // process has (its offset shared: `>>` appends, and other writers to it are not overwritten).
  if (runtime::isStandardStream(path.string())) {
    const int fd = runtime::duplicateStandardStream(path.string());
    if (fd < 0)
      throw OperatorError(what + ": cannot write \"" + path.string() +
                          "\": " + std::strerror(errno));
    return fd;
  }
  int fd = ::open(path.c_str(), flags | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd >= 0)
    return fd;
  const int error = errno;
  struct stat link {
  }, target{};
  if (error == ELOOP && ::lstat(path.c_str(), &link) == 0 && S_ISLNK(link.st_mode)) {
    // A link to a device or a pipe writes no file of anyone's.
    if (::stat(path.c_str(), &target) == 0 && !S_ISREG(target.st_mode) &&
        !S_ISDIR(target.st_mode) &&
        (fd = ::open(path.c_str(), (flags & ~O_CREAT) | O_CLOEXEC)) >= 0)
      return fd;
    std::error_code ignored;
    const fs::path pointee = fs::read_symlink(path, ignored);
    throw OperatorError(what + ": \"" + path.string() + "\" is a symbolic link (to \"" +
                        pointee.string() +
                        "\"); orch writes no output through a link: name the file it points "
                        "to in the program, or remove the link");
  }
  throw OperatorError(what + ": cannot write \"" + path.string() + "\": " + std::strerror(error));
}

std::string partialName(const std::string &name) {
  const std::string plain = "." + name + std::string(kPartialSuffix);
  if (plain.size() <= NAME_MAX)
    return plain;
  // A name near the limit: its partial is named by a hash of it (FNV-1a, stable across runs).
  uint64_t hash = 1469598103934665603ull;
  for (unsigned char c : name)
    hash = (hash ^ c) * 1099511628211ull;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
  return ".long-" + std::string(hex) + std::string(kPartialSuffix);
}

int createPartialFile(int dirFd, const std::string &partial) {
  // A leftover of a killed run, or a link planted in its place, goes first: the new file is
  // ours alone (O_EXCL), and never a link's target (O_NOFOLLOW).
  ::unlinkat(dirFd, partial.c_str(), 0);
  return ::openat(dirFd, partial.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                  0644);
}

} // namespace orch::stdlib
