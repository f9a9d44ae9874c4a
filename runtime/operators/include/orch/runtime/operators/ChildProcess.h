// A child process that serves a worker: its own process group (killed as a whole), killed when
// the worker dies (PR_SET_PDEATHSIG), a socket on fd 3 for the protocol, and its stdout and
// stderr forwarded line by line to a log. Everything it starts carries a token in its
// environment ($ORCH_PROCESS_TOKEN), so that descendants that left its process group (setsid)
// are found and killed with it.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <sys/types.h>
#include <thread>
#include <utility>
#include <vector>

namespace orch::runtime {

struct ChildProcessSpec {
  /// argv[0] is the program; a name without '/' is looked up on PATH.
  std::vector<std::string> argv;
  /// Set in the child's environment (on top of the worker's own).
  std::vector<std::pair<std::string, std::string>> environment;
  /// Receives each line the child writes to stdout or stderr (from another thread).
  std::function<void(const std::string &line)> output;
};

/// SIGKILLs every process (other than this one) whose environment holds the entry `entry`
/// ("NAME=VALUE"), passing twice for processes forked meanwhile; how many it found. Processes
/// a child started keep its environment wherever they move (setsid, a new parent).
size_t killProcessesCarrying(const std::string &entry, bool prefix = false);

/// Kills what every ChildProcess this process started may have left behind, the children of
/// abandoned operators included: at the end of a run or a worker's session.
size_t killLeftoversOfChildProcesses();
/// How many times killLeftoversOfChildProcesses ran in this process: a process started before
/// the last time and found dead was killed as a leftover, not crashed.
uint64_t leftoverKills();

/// The fd number of the protocol socket in the child (also in $ORCH_OPERATOR_FD).
inline constexpr int kChildChannelFd = 3;

class ChildProcess {
public:
  /// Starts the program; std::runtime_error when it cannot (no such program).
  explicit ChildProcess(const ChildProcessSpec &spec);
  /// Kills the process group if it still runs.
  ~ChildProcess();
  ChildProcess(const ChildProcess &) = delete;
  ChildProcess &operator=(const ChildProcess &) = delete;

  pid_t pid() const { return pid_; }
  /// This side of the protocol socket.
  int channel() const { return channel_; }

  /// SIGKILL to the whole process group and to every process that carries this child's token
  /// (its descendants, wherever they moved), then reaps the child.
  void kill();
  /// Waits up to `timeout` for the child to exit by itself; true when it did.
  bool waitForExit(std::chrono::milliseconds timeout);
  /// How it ended ("exited with status 1", "killed by signal 9 (Killed)"), once reaped.
  std::optional<std::string> exitDescription();

private:
  void reap(bool block);
  void forwardOutput(int fd, std::function<void(const std::string &)> output);

  /// "ORCH_PROCESS_TOKEN=<this process's pid>-<n>-<time>", in its environment.
  std::string token_;
  pid_t pid_ = -1;
  int channel_ = -1;
  int outputFd_ = -1;
  std::optional<int> status_;
  /// status_ is set (read by the output thread).
  std::atomic<bool> reaped_{false};
  std::thread outputThread_;
};

} // namespace orch::runtime
