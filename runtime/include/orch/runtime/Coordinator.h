// The coordinator side of the distributed runtime: a ZeroMQ ROUTER that accepts workers,
// places Call replicas on them, sends batches (up to `depth` per replica), heartbeats, and
// turns a lost worker's batches into lost events for the engine. As a BatchExecutor it plugs
// into the same run loop as the in-process executor.
#pragma once

#include "orch/runtime/BatchExecutor.h"
#include "orch/runtime/Protocol.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace orch::runtime {

struct CoordinatorOptions {
  /// Where the ROUTER binds: "ipc:///tmp/x.sock", "tcp://127.0.0.1:7700" ("" = a fresh ipc
  /// endpoint in the temporary directory).
  std::string endpoint;
  uint32_t heartbeatMs = kDefaultHeartbeatMs;
  /// Heartbeats a peer may miss before it is declared lost.
  uint32_t liveness = kDefaultLiveness;
  /// Batches sent ahead to each replica.
  uint32_t depth = kDefaultDepth;
  /// Worker processes to start on this machine (and replace when they die); 0 in cluster mode.
  unsigned localWorkers = 0;
  /// The program started as `PROGRAM --connect ENDPOINT ...` for local workers (orch-worker).
  std::string workerProgram;
  /// CUDA devices on this machine, split between the local workers (GpuPlacement.h).
  int64_t localGpuDevices = 0;
  std::function<void(const std::string &)> log;
};

std::unique_ptr<BatchExecutor> makeCoordinator(CoordinatorOptions options);

} // namespace orch::runtime
