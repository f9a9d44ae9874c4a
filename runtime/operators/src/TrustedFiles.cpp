// The ownership and mode checks of files that grant access (TrustedFiles.h).
#include "orch/runtime/operators/TrustedFiles.h"

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

namespace orch::runtime {
namespace {

std::string userName(uid_t uid) {
  char buffer[1024];
  struct passwd entry {
  }, *found = nullptr;
  if (::getpwuid_r(uid, &entry, buffer, sizeof buffer, &found) == 0 && found)
    return found->pw_name;
  return "uid " + std::to_string(uid);
}

std::string octalMode(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", unsigned(mode & 07777));
  return text;
}

/// Why `info` (of `path`, called `what`) is not trustworthy, or nullopt; `why` says what is at
/// stake.
std::optional<std::string> ownershipProblem(const struct stat &info, const std::string &path,
                                            const std::string &what, const std::string &why) {
  const uid_t me = ::geteuid();
  if (info.st_uid != me && info.st_uid != 0)
    return what + " " + path + " belongs to " + userName(info.st_uid) + ", not to " + userName(me) +
           " (who runs Orch)" + (me == 0 ? "" : " or root") + ": " + why +
           "; make it yours (chown " + userName(me) + " " + path + ")";
  const bool sticky = S_ISDIR(info.st_mode) && (info.st_mode & S_ISVTX);
  if ((info.st_mode & 022) && !sticky)
    return what + " " + path + " can be written by other users (mode " + octalMode(info.st_mode) +
           "): " + why + "; chmod go-w " + path;
  return std::nullopt;
}

/// Why a directory above `path` (absolute; every proper prefix of it, links followed within a
/// prefix, so the directory that holds a link counts) could let someone else replace `what`
/// `file`, or nullopt.
std::optional<std::string> directoriesAboveProblem(const std::string &path, const std::string &what,
                                                   const std::string &file) {
  for (size_t slash = path.rfind('/'); slash != std::string::npos;
       slash = slash == 0 ? std::string::npos : path.rfind('/', slash - 1)) {
    const std::string directory = slash == 0 ? "/" : path.substr(0, slash);
    struct stat info {};
    if (::stat(directory.c_str(), &info) != 0)
      return "cannot read the directory " + directory + " of " + what + " " + file + ": " +
             std::strerror(errno);
    if (auto problem = ownershipProblem(info, directory, "the directory",
                                        "whoever can write it can replace " + what + " " + file))
      return problem;
  }
  return std::nullopt;
}

/// Why a directory on the way to `path` could let someone else replace it: the way the path
/// names it (a link may sit there) and the way it really is, or nullopt.
std::optional<std::string> wayProblem(const std::string &path, const std::string &what) {
  std::string named = path;
  if (named.empty() || named.front() != '/') {
    char cwd[PATH_MAX];
    if (!::getcwd(cwd, sizeof cwd))
      return "cannot read the working directory: " + std::string(std::strerror(errno));
    named = std::string(cwd) + "/" + path;
  }
  if (auto problem = directoriesAboveProblem(named, what, path))
    return problem;
  char resolved[PATH_MAX];
  if (!::realpath(path.c_str(), resolved))
    return "cannot read " + what + " " + path + ": " + std::strerror(errno);
  return directoriesAboveProblem(resolved, what, path);
}

/// The checks of a file that grants access, on the file `info` describes (opened from `path`).
std::optional<std::string> trustProblem(const std::string &path, const struct stat &info,
                                        const std::string &what) {
  if (!S_ISREG(info.st_mode))
    return what + " " + path + " is not a regular file";
  if (auto problem =
          ownershipProblem(info, path, what, "whoever can change it decides who is trusted"))
    return problem;
  // Whoever can write a directory on the way can put another file in its place.
  return wayProblem(path, what);
}

} // namespace

std::optional<std::string> untrustedFileProblem(const std::string &path, const std::string &what) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0)
    return "cannot read " + what + " " + path + ": " + std::strerror(errno);
  return trustProblem(path, info, what);
}

std::optional<std::string> readTrustedFile(const std::string &path, const std::string &what,
                                           std::string &text, bool secret) {
  // The file read is the file checked: opened once, then checked through its descriptor.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return "cannot read " + what + " " + path + ": " + std::strerror(errno);
  struct stat info {};
  std::optional<std::string> problem;
  if (::fstat(fd, &info) != 0)
    problem = "cannot read " + what + " " + path + ": " + std::strerror(errno);
  else if (secret && S_ISREG(info.st_mode) && (info.st_mode & 077))
    problem = what + " " + path + " can be read by other users (mode " + octalMode(info.st_mode) +
              "): its secret key must be private; chmod 600 " + path;
  else
    problem = trustProblem(path, info, what);
  text.clear();
  char buffer[4096];
  for (ssize_t got; !problem && (got = ::read(fd, buffer, sizeof buffer)) != 0;) {
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0)
      problem = "cannot read " + what + " " + path + ": " + std::strerror(errno);
    else if ((text += std::string(buffer, size_t(got))).size() > (1u << 20))
      problem = what + " " + path + " is larger than 1 MiB: not a file of keys";
  }
  ::close(fd);
  return problem;
}

std::optional<std::string> privateDirectoryProblem(const std::string &directory) {
  struct stat info {};
  if (::stat(directory.c_str(), &info) != 0)
    return "cannot use the directory " + directory + ": " + std::strerror(errno);
  const uid_t me = ::geteuid();
  if (info.st_uid != me && info.st_uid != 0)
    return "the directory " + directory + " belongs to " + userName(info.st_uid) + ", not to " +
           userName(me);
  if (info.st_mode & 022)
    return "the directory " + directory + " can be written by other users (mode " +
           octalMode(info.st_mode) + ")";
  // Nor may anyone else be able to replace it.
  return wayProblem(directory, "the directory");
}

} // namespace orch::runtime
