// The coordinator side of the distributed runtime: a ZeroMQ ROUTER that accepts workers,
// places Call replicas on them, sends batches (up to `depth` per replica), heartbeats, and
// turns a lost worker's batches into lost events for the engine. As a BatchExecutor it plugs
// into the same run loop as the in-process executor.
#pragma once

#include "orch/runtime/cluster/ConnectionLimits.h"
#include "orch/runtime/cluster/CurveKeys.h"
#include "orch/runtime/cluster/Protocol.h"
#include "orch/runtime/execution/BatchExecutor.h"

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
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
  /// Results of at least this many bytes that only other Calls read stay on the worker that
  /// made them (0: every value goes through the coordinator). docs/runtime.md, "Value locality".
  uint64_t keepValuesOver = kDefaultKeepValuesOver;
  /// Worker processes to start on this machine (and replace when they die); 0 in cluster mode.
  unsigned localWorkers = 0;
  /// Cluster mode: no row is admitted, and no replica placed, until this many workers joined
  /// or `waitWorkersTimeout` passed (then the run starts with those there, and says so).
  unsigned waitWorkers = 0;
  std::chrono::milliseconds waitWorkersTimeout{std::chrono::minutes(2)};
  /// The program started as `PROGRAM --connect ENDPOINT ...` for local workers (orch-worker).
  std::string workerProgram;
  /// CUDA devices on this machine, split between the local workers (GpuPlacement.h).
  int64_t localGpuDevices = 0;
  std::function<void(const std::string &)> log;
  /// CURVE: the coordinator's key pair; workers must pin its public key, and only
  /// `authorizedKeys` may join (local workers get a key made for the run). Unset: no
  /// authentication or encryption (the private ipc socket, or --insecure).
  std::optional<CurveKeyPair> curveKey;
  AuthorizedKeys authorizedKeys;
  /// Without keys, a tcp `endpoint` must turn out to be on loopback once bound (the address
  /// the socket bound decides, not the text: start() fails otherwise). False with --insecure.
  bool loopbackOnly = false;
  ConnectionLimits connectionLimits;
};

std::unique_ptr<BatchExecutor> makeCoordinator(CoordinatorOptions options);

/// Why a coordinator may not listen on `endpoint` without keys, found by binding it for a
/// moment: a tcp:// endpoint whose bound address is not loopback (an interface may be named
/// "127.lan"). Nullopt when it may, or when it cannot be bound at all (the coordinator says
/// why). The coordinator checks again the socket it binds (CoordinatorOptions::loopbackOnly);
/// this lets `orch run` refuse before it touches any output.
std::optional<std::string> keylessEndpointProblem(const std::string &endpoint);

} // namespace orch::runtime
