// fork/exec of local workers with PR_SET_PDEATHSIG, reaping and stopping them.
#include "LocalWorkerProcesses.h"

#include "orch/runtime/operators/ChildProcess.h"

#include "orch/runtime/execution/GpuPlacement.h"
#include "orch/runtime/execution/MemorySize.h"

#include <algorithm>
#include <csignal>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace orch::runtime {

LocalWorkerProcesses::LocalWorkerProcesses(std::string program, std::string endpoint,
                                           unsigned slots, int64_t gpuDevices,
                                           std::vector<std::string> environment,
                                           std::function<void(const std::string &)> log)
    : program_(std::move(program)), endpoint_(std::move(endpoint)), slots_(slots),
      gpuDevices_(gpuDevices), environment_(std::move(environment)), log_(std::move(log)) {
  // Tesseract's OpenMP threads would fight over the cores otherwise.
  if (!::getenv("OMP_THREAD_LIMIT"))
    environment_.push_back("OMP_THREAD_LIMIT=1");
  // Everything the workers start carries it: what outlives a killed worker is found by it.
  runToken_ = "ORCH_RUN_TOKEN=" + std::to_string(::getpid()) + "-" +
              std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  environment_.push_back(runToken_);
}

void LocalWorkerProcesses::startAll() {
  for (unsigned slot = 0; slot < slots_; ++slot)
    start(slot);
}

std::vector<LocalWorkerProcesses::Exited> LocalWorkerProcesses::reapAndReplace() {
  std::vector<Exited> exited = reap();
  for (const Exited &child : exited) {
    const unsigned slot = slotOf_[child.pid];
    slotOf_.erase(child.pid);
    // Keep the machine's worker count; give up on a worker program that cannot start.
    if (replaced_ < 100 * uint64_t(slots_)) {
      ++replaced_;
      start(slot);
    }
  }
  return exited;
}

LocalWorkerProcesses::~LocalWorkerProcesses() { stopAll(std::chrono::milliseconds(0)); }

void LocalWorkerProcesses::start(unsigned slot) {
  const std::string name = "local-" + std::to_string(nextName_++);
  std::string gpus;
  for (int64_t device : devicesOfLocalWorker(gpuDevices_, slot, slots_))
    gpus += (gpus.empty() ? "" : ",") + std::to_string(device);
  if (gpus.empty())
    gpus = "none";
  // The workers share this machine's memory.
  const std::string memory = std::to_string(machineMemory() / std::max(1u, slots_));
  // Everything the child needs is built before fork: after it, only async-signal-safe calls.
  std::vector<char *> environment;
  for (char **variable = environ; *variable; ++variable)
    environment.push_back(*variable);
  for (std::string &variable : environment_)
    environment.push_back(variable.data());
  environment.push_back(nullptr);
  const char *argv[] = {program_.c_str(), "--connect", endpoint_.c_str(), "--name",
                        name.c_str(),     "--gpus",    gpus.c_str(),      "--memory",
                        memory.c_str(),   "--quiet",   "--once",          nullptr};
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    if (log_)
      log_("cannot start a local worker: " + program_);
    return;
  }
  if (pid == 0) {
    // The worker dies with its coordinator, whatever kills the coordinator.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent)
      ::_exit(1);
    ::execve(program_.c_str(), const_cast<char *const *>(argv), environment.data());
    ::_exit(127);
  }
  children_.push_back(pid);
  slotOf_[pid] = slot;
}

std::vector<LocalWorkerProcesses::Exited> LocalWorkerProcesses::reap() {
  std::vector<Exited> exited;
  for (auto it = children_.begin(); it != children_.end();) {
    int status = 0;
    if (::waitpid(*it, &status, WNOHANG) != *it) {
      ++it;
      continue;
    }
    std::string how = WIFSIGNALED(status)
                          ? "killed by signal " + std::to_string(WTERMSIG(status))
                          : "exited with status " + std::to_string(WEXITSTATUS(status));
    exited.push_back(Exited{*it, std::move(how), WIFSIGNALED(status)});
    it = children_.erase(it);
  }
  return exited;
}

void LocalWorkerProcesses::kill(pid_t pid) {
  if (std::find(children_.begin(), children_.end(), pid) != children_.end())
    ::kill(pid, SIGKILL);
}

void LocalWorkerProcesses::stopAll(std::chrono::milliseconds grace) {
  // Workers that joined leave on the coordinator's BYE; ask the others (still starting up)
  // with SIGTERM after a moment, and kill whatever is left when the grace period is over.
  const auto start = std::chrono::steady_clock::now();
  const auto askAt = start + std::min(grace, std::chrono::milliseconds(200));
  bool asked = false;
  while (!children_.empty() && std::chrono::steady_clock::now() < start + grace) {
    reap();
    if (!asked && std::chrono::steady_clock::now() >= askAt) {
      for (pid_t pid : children_)
        ::kill(pid, SIGTERM);
      asked = true;
    }
    if (!children_.empty())
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (pid_t pid : children_) {
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
  }
  children_.clear();
  // A worker killed above could not stop what its operators started (setsid escapes).
  killProcessesCarrying(runToken_);
}

} // namespace orch::runtime
