// Worker processes started on this machine by the coordinator: spawned with a death signal so
// that none outlives `orch run` (even when it is killed), reaped, and stopped at the end.
#pragma once

#include <chrono>
#include <string>
#include <sys/types.h>
#include <utility>
#include <vector>

namespace orch::runtime {

class LocalWorkerProcesses {
public:
  LocalWorkerProcesses(std::string program, std::string endpoint);
  ~LocalWorkerProcesses();

  /// Starts `program worker --connect ENDPOINT --name NAME --gpus GPUS --quiet` (GPUS: a
  /// device list, or "none"); the pid, or -1.
  pid_t start(const std::string &name, const std::string &gpus);
  /// Children that exited since the last call, with how they ended ("killed by signal 9").
  std::vector<std::pair<pid_t, std::string>> reap();
  /// Waits up to `grace` for every child to exit (asking with SIGTERM after a moment), then
  /// kills the rest.
  void stopAll(std::chrono::milliseconds grace);
  void kill(pid_t pid);
  size_t running() const { return children_.size(); }

private:
  std::string program_;
  std::string endpoint_;
  std::vector<pid_t> children_;
};

} // namespace orch::runtime
