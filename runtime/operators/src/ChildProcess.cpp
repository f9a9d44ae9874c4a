// fork + exec with the protocol socket on fd 3. Between fork and exec only async-signal-safe
// calls: everything the child needs is prepared before the fork.
#include "orch/runtime/operators/ChildProcess.h"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <stdexcept>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace orch::runtime {
namespace {

/// The start of the environment entry of every child this process starts.
std::string tokenPrefix() { return "ORCH_PROCESS_TOKEN=" + std::to_string(::getpid()) + "-"; }

void closeQuietly(int &fd) {
  if (fd >= 0)
    ::close(fd);
  fd = -1;
}

/// The worker's environment with `overrides` replacing or adding entries.
std::vector<std::string>
mergedEnvironment(const std::vector<std::pair<std::string, std::string>> &overrides) {
  std::vector<std::string> entries;
  for (char **entry = environ; entry && *entry; ++entry) {
    const std::string text(*entry);
    const std::string name = text.substr(0, text.find('='));
    bool replaced = false;
    for (const auto &[key, value] : overrides)
      replaced = replaced || key == name;
    if (!replaced)
      entries.push_back(text);
  }
  for (const auto &[key, value] : overrides)
    entries.push_back(key + "=" + value);
  return entries;
}

std::vector<char *> pointers(std::vector<std::string> &strings) {
  std::vector<char *> out;
  for (std::string &text : strings)
    out.push_back(text.data());
  out.push_back(nullptr);
  return out;
}

/// ChildProcesses this process started: their tokens end in the count.
std::atomic<uint64_t> childProcessesStarted{0};

} // namespace

ChildProcess::ChildProcess(const ChildProcessSpec &spec) {
  if (spec.argv.empty())
    throw std::runtime_error("no program to run");
  std::vector<std::string> argv = spec.argv;
  token_ = tokenPrefix() + std::to_string(++childProcessesStarted) + "-" +
           std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  std::vector<std::pair<std::string, std::string>> overrides = spec.environment;
  overrides.emplace_back("ORCH_PROCESS_TOKEN", token_.substr(token_.find('=') + 1));
  std::vector<std::string> environment = mergedEnvironment(overrides);
  std::vector<char *> argvPointers = pointers(argv);
  std::vector<char *> environmentPointers = pointers(environment);
  const bool searchPath = spec.argv.front().find('/') == std::string::npos;

  int sockets[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sockets) != 0)
    throw std::runtime_error(std::string("socketpair: ") + std::strerror(errno));
  int output[2];
  if (::pipe2(output, O_CLOEXEC) != 0) {
    ::close(sockets[0]);
    ::close(sockets[1]);
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  }
  // exec's failure comes back over this pipe (closed by a successful exec).
  int execError[2];
  if (::pipe2(execError, O_CLOEXEC) != 0) {
    for (int fd : {sockets[0], sockets[1], output[0], output[1]})
      ::close(fd);
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  }
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ < 0) {
    const int error = errno;
    for (int fd : {sockets[0], sockets[1], output[0], output[1], execError[0], execError[1]})
      ::close(fd);
    throw std::runtime_error(std::string("fork: ") + std::strerror(error));
  }
  if (pid_ == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent)
      ::_exit(127);
    const int devNull = ::open("/dev/null", O_RDONLY);
    ::dup2(devNull, STDIN_FILENO);
    ::dup2(output[1], STDOUT_FILENO);
    ::dup2(output[1], STDERR_FILENO);
    ::dup2(sockets[1], kChildChannelFd);
    // dup2 onto itself (a worker started with a standard stream closed) keeps close-on-exec.
    for (int fd : {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO, kChildChannelFd})
      ::fcntl(fd, F_SETFD, 0);
    // Nothing else of the worker's (its sockets, the sinks' files) reaches the operator.
    ::close_range(kChildChannelFd + 1, ~0U, 0);
    // Reset what the parent blocked.
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::signal(SIGPIPE, SIG_DFL);
    if (searchPath)
      ::execvpe(argvPointers[0], argvPointers.data(), environmentPointers.data());
    else
      ::execve(argvPointers[0], argvPointers.data(), environmentPointers.data());
    const int error = errno;
    [[maybe_unused]] ssize_t written = ::write(execError[1], &error, sizeof error);
    ::_exit(127);
  }
  ::setpgid(pid_, pid_);
  ::close(sockets[1]);
  ::close(output[1]);
  ::close(execError[1]);
  channel_ = sockets[0];
  outputFd_ = output[0];
  int error = 0;
  ssize_t got;
  do
    got = ::read(execError[0], &error, sizeof error);
  while (got < 0 && errno == EINTR);
  ::close(execError[0]);
  if (got == sizeof error) {
    reap(true);
    closeQuietly(channel_);
    closeQuietly(outputFd_);
    throw std::runtime_error("cannot run " + spec.argv.front() + ": " + std::strerror(error));
  }
  outputThread_ = std::thread(&ChildProcess::forwardOutput, this, outputFd_, spec.output);
}

ChildProcess::~ChildProcess() {
  kill();
  // It may have ended by itself and left processes behind (they would also keep its output
  // pipe open).
  killProcessesCarrying(token_);
  if (outputThread_.joinable())
    outputThread_.join();
  closeQuietly(outputFd_);
}

void ChildProcess::kill() {
  if (pid_ > 0 && !status_) {
    ::kill(-pid_, SIGKILL);
    ::kill(pid_, SIGKILL);
    reap(true);
  }
  if (pid_ > 0)
    killProcessesCarrying(token_);
  closeQuietly(channel_);
}

bool ChildProcess::waitForExit(std::chrono::milliseconds timeout) {
  const auto giveUp = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    reap(false);
    if (status_)
      return true;
    if (std::chrono::steady_clock::now() >= giveUp)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

std::optional<std::string> ChildProcess::exitDescription() {
  reap(false);
  if (!status_)
    return std::nullopt;
  if (WIFEXITED(*status_))
    return "exited with status " + std::to_string(WEXITSTATUS(*status_));
  if (WIFSIGNALED(*status_))
    return "was killed by signal " + std::to_string(WTERMSIG(*status_)) + " (" +
           ::strsignal(WTERMSIG(*status_)) + ")";
  return "ended";
}

void ChildProcess::reap(bool block) {
  if (pid_ <= 0 || status_)
    return;
  int status = 0;
  pid_t done;
  do
    done = ::waitpid(pid_, &status, block ? 0 : WNOHANG);
  while (done < 0 && errno == EINTR);
  if (done == pid_)
    status_ = status;
  else if (done < 0)
    status_ = 0; // already reaped elsewhere: nothing more to learn
  if (status_)
    reaped_.store(true);
}

/// Reads the child's output until every writer closed it (the child and anything it started
/// exited); the destructor kills the process group, so this ends.
void ChildProcess::forwardOutput(int fd, std::function<void(const std::string &)> output) {
  std::string pending;
  char buffer[4096];
  for (;;) {
    pollfd item{fd, POLLIN, 0};
    const int ready = ::poll(&item, 1, 200);
    if (ready < 0 && errno != EINTR)
      break;
    if (ready <= 0) {
      // A child that is gone but whose output pipe is held by an escaped grandchild: stop.
      if (reaped_.load())
        break;
      continue;
    }
    const ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0)
      break;
    pending.append(buffer, size_t(got));
    size_t newline;
    while ((newline = pending.find('\n')) != std::string::npos) {
      if (output)
        output(pending.substr(0, newline));
      pending.erase(0, newline + 1);
    }
  }
  if (!pending.empty() && output)
    output(pending);
}

namespace {
std::atomic<uint64_t> leftoverKillCount{0};
} // namespace

size_t killLeftoversOfChildProcesses() {
  ++leftoverKillCount;
  // Only a ChildProcess hands the token on: a process that started none (a run of built-in
  // operators) has no leftovers, and need not read every process's environment (milliseconds).
  if (childProcessesStarted.load() == 0)
    return 0;
  return killProcessesCarrying(tokenPrefix(), true);
}

uint64_t leftoverKills() { return leftoverKillCount.load(); }

size_t killProcessesCarrying(const std::string &needle, bool prefix) {
  size_t found = 0;
  // Twice: a descendant may have forked while the first pass ran.
  for (int pass = 0; pass < 2; ++pass) {
    DIR *proc = ::opendir("/proc");
    if (!proc)
      return found;
    while (const dirent *entry = ::readdir(proc)) {
      char *end = nullptr;
      const long pid = std::strtol(entry->d_name, &end, 10);
      if (pid <= 0 || *end != '\0' || pid == ::getpid())
        continue;
      const std::string path = std::string("/proc/") + entry->d_name + "/environ";
      const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0)
        continue;
      std::string environment;
      char buffer[4096];
      for (ssize_t got; (got = ::read(fd, buffer, sizeof buffer)) > 0;)
        environment.append(buffer, size_t(got));
      ::close(fd);
      // Entries are NUL-separated: match a whole entry.
      for (size_t at = environment.find(needle); at != std::string::npos;
           at = environment.find(needle, at + 1))
        if ((at == 0 || environment[at - 1] == '\0') &&
            (prefix || at + needle.size() == environment.size() ||
             environment[at + needle.size()] == '\0')) {
          ::kill(pid_t(pid), SIGKILL);
          ++found;
          break;
        }
    }
    ::closedir(proc);
  }
  return found;
}

} // namespace orch::runtime
