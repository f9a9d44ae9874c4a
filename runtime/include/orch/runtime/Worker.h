// The worker side of the distributed runtime (`orch worker`): connects a DEALER to the
// coordinator, says HELLO, hosts the Call replicas it is asked to (one operator instance and
// one thread per replica, kept for every batch), runs batches, and heartbeats.
#pragma once

#include "orch/runtime/Operator.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace orch::runtime {

struct WorkerOptions {
  std::string endpoint;
  /// Routing identity and name in logs ("" = host:pid).
  std::string name;
  double cpus = 1;
  /// The CUDA devices it offers; GPU replicas it hosts get them as GpuPlacement.h says.
  std::vector<int64_t> gpus;
  /// How long to wait for the coordinator's WELCOME before giving up.
  uint32_t connectTimeoutMs = 60'000;
  /// Set to stop the worker (a signal); it says BYE and returns.
  const std::atomic<bool> *stopRequested = nullptr;
  /// Problems are always logged; routine events (connected, goodbye) only when verbose.
  bool verbose = true;
  std::function<void(const std::string &)> log;
};

/// Runs until the coordinator says BYE (0), the coordinator is lost or refuses this worker (1),
/// or stop is requested (0).
int runWorker(const WorkerOptions &options, const OperatorRegistry &registry);

} // namespace orch::runtime
