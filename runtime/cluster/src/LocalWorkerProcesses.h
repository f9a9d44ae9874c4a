// Worker processes started on this machine by the coordinator: spawned with a death signal so
// that none outlives `orch run` (even when it is killed), reaped, and stopped at the end.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <sys/types.h>
#include <utility>
#include <vector>

namespace orch::runtime {

/// A fixed number of worker slots on this machine, each running one worker process that is
/// replaced when it dies (within a budget, so that a worker program that cannot start is given
/// up on). Slot i offers devices i, i + slots, ... (GpuPlacement.h).
class LocalWorkerProcesses {
public:
  /// `environment` ("NAME=VALUE") is added to each worker's; `log` receives "cannot start a
  /// local worker" lines.
  LocalWorkerProcesses(std::string program, std::string endpoint, unsigned slots,
                       int64_t gpuDevices, std::vector<std::string> environment,
                       std::function<void(const std::string &)> log);
  ~LocalWorkerProcesses();

  /// Starts the worker of every slot.
  void startAll();
  /// A child that exited: how it ended ("killed by signal 11"), and whether a signal ended it
  /// (a crash or an OOM kill, not an exit).
  struct Exited {
    pid_t pid = 0;
    std::string how;
    bool killedBySignal = false;
  };
  /// Children that exited since the last call; each one's slot is refilled with a new worker
  /// while the replacement budget lasts.
  std::vector<Exited> reapAndReplace();
  /// Waits up to `grace` for every child to exit (asking with SIGTERM after a moment), then
  /// kills the rest.
  void stopAll(std::chrono::milliseconds grace);
  void kill(pid_t pid);
  size_t running() const { return children_.size(); }
  /// Workers started to replace ones that died.
  uint64_t replaced() const { return replaced_; }

private:
  /// Starts `program worker --connect ENDPOINT --name local-N --gpus DEVICES --quiet --once`
  /// for `slot`.
  void start(unsigned slot);
  std::vector<Exited> reap();

  std::string program_;
  std::string endpoint_;
  unsigned slots_;
  int64_t gpuDevices_;
  std::vector<std::string> environment_;
  /// "ORCH_RUN_TOKEN=...", in every worker's environment.
  std::string runToken_;
  std::function<void(const std::string &)> log_;
  std::vector<pid_t> children_;
  std::map<pid_t, unsigned> slotOf_;
  unsigned nextName_ = 0;
  uint64_t replaced_ = 0;
};

} // namespace orch::runtime
