// The ownership and mode checks of files that grant access (TrustedFiles.h).
#include "orch/runtime/TrustedFiles.h"

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

} // namespace

std::optional<std::string> untrustedFileProblem(const std::string &path, const std::string &what) {
  char resolved[PATH_MAX];
  if (!::realpath(path.c_str(), resolved))
    return "cannot read " + what + " " + path + ": " + std::strerror(errno);
  struct stat info {};
  if (::stat(resolved, &info) != 0)
    return "cannot read " + what + " " + path + ": " + std::strerror(errno);
  const std::string why = "whoever can change it decides who is trusted";
  if (auto problem = ownershipProblem(info, path, what, why))
    return problem;
  // Whoever can write the directory can put another file in its place.
  std::string directory = resolved;
  directory = directory.substr(0, std::max<size_t>(1, directory.rfind('/')));
  if (::stat(directory.c_str(), &info) != 0)
    return "cannot read the directory of " + what + " " + path + ": " + std::strerror(errno);
  return ownershipProblem(info, directory, "the directory",
                          "whoever can write it can replace " + what + " " + path);
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
  return std::nullopt;
}

} // namespace orch::runtime
