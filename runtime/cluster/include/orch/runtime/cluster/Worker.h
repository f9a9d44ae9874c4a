// The worker side of the distributed runtime (`orch worker`): connects a DEALER to the
// coordinator, says HELLO, hosts the Call replicas it is asked to (one operator instance and
// one thread per replica, kept for every batch), runs batches, and heartbeats.
#pragma once

#include "orch/runtime/cluster/CurveKeys.h"
#include "orch/runtime/operators/Operator.h"
#include "orch/runtime/operators/ProgramPermissions.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace orch::runtime {

struct WorkerOptions {
  std::string endpoint;
  /// CURVE: this worker's key pair and the coordinator's public key it pins (unset: a
  /// coordinator without keys).
  std::optional<CurveKeyPair> curveKey;
  std::string coordinatorKey;
  /// Which declared operators' programs it starts for its coordinator (its authentication and
  /// allow-list).
  ProgramPermissions programs;
  /// Routing identity and name in logs ("" = host:pid).
  std::string name;
  double cpus = 1;
  /// Bytes of memory it offers replicas (0: not said), against the Calls' `memory` hints.
  uint64_t memoryBytes = 0;
  /// Where other workers fetch the values this one keeps ("tcp://10.0.0.7:7801"; "": beside
  /// an ipc coordinator's socket, else a free TCP port, docs/cluster.md).
  std::string peerEndpoint;
  /// The endpoint other workers are told, when it is not the one bound (behind NAT: the
  /// address others reach); "": the bound one (PeerEndpoint.h).
  std::string peerAnnounce;
  /// The CUDA devices it offers; GPU replicas it hosts get them as GpuPlacement.h says.
  std::vector<int64_t> gpus;
  /// Bytes of memory of each of `gpus`, in that order (empty: not known).
  std::vector<uint64_t> gpuMemory;
  /// How long to wait for the coordinator's WELCOME before giving up.
  uint32_t connectTimeoutMs = 60'000;
  /// Set to stop the worker (a signal); it says BYE and returns.
  const std::atomic<bool> *stopRequested = nullptr;
  /// Problems are always logged; routine events (connected, goodbye) only when verbose.
  bool verbose = true;
  std::function<void(const std::string &)> log;
  /// Called when the coordinator asks this worker to start afresh because a batch ran past its
  /// timeout here (a replica may be stuck inside its operator and cannot be joined). `orch
  /// worker` executes itself again; it should not return. Unset: runWorker returns
  /// kWorkerMustRestart without waiting for the replicas.
  std::function<void(const std::string &why)> restart;
};

/// runWorker's results: the coordinator said BYE or stop was requested; the coordinator was
/// lost, refused this worker or declared it lost; or it asked for a restart (see
/// WorkerOptions::restart).
enum WorkerExit : int { kWorkerDone = 0, kWorkerLost = 1, kWorkerMustRestart = 3 };

/// Serves one coordinator session.
int runWorker(const WorkerOptions &options, const OperatorRegistry &registry);

} // namespace orch::runtime
