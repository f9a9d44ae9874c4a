// A worker's peer socket (docs/protocol.md, "Between workers"): a ROUTER on its own thread that
// answers other workers' `fetch` with the values this worker keeps (KeptValues). With CURVE it
// is a server with the worker's key that admits only the run's worker keys (the coordinator
// names them in `welcome`); a ConnectionGuard bounds its connections as the coordinator's.
#pragma once

#include "ConnectionGuard.h"
#include "KeptValues.h"
#include "WakeSignal.h"

#include "orch/runtime/cluster/CurveKeys.h"

#include <zmq.hpp>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace orch::runtime {

class PeerServer {
public:
  /// Binds `endpoint` ("tcp://*:*", "ipc:///dir/peer.sock"); throws zmq::error_t when it cannot.
  /// With `key`, nobody is admitted before admit().
  PeerServer(KeptValues &values, const std::string &endpoint, std::optional<CurveKeyPair> key,
             std::function<void(const std::string &)> log);
  ~PeerServer();
  PeerServer(const PeerServer &) = delete;
  PeerServer &operator=(const PeerServer &) = delete;

  /// The endpoint as bound (a wildcard port resolved).
  const std::string &boundEndpoint() const { return bound_; }
  /// The public keys of workers that may fetch (CURVE only).
  void admit(const std::vector<std::string> &publicKeys);
  /// Values and bytes sent to other workers so far.
  uint64_t valuesServed() const { return valuesServed_.load(); }
  uint64_t bytesServed() const { return bytesServed_.load(); }

private:
  void run();
  void serve(std::vector<zmq::message_t> &frames);

  KeptValues &values_;
  std::function<void(const std::string &)> log_;
  zmq::context_t context_;
  zmq::socket_t router_;
  std::unique_ptr<ConnectionGuard> guard_;
  std::string bound_;
  std::atomic<bool> stopping_{false};
  /// Written when stopping: the thread's wait ends at once (a worker's exit waited up to the
  /// wait's 100 ms for it: every distributed run's end, 0.54 -> 0.66 s in bench/experiments).
  WakeSignal wake_;
  std::atomic<uint64_t> valuesServed_{0}, bytesServed_{0};
  std::thread thread_;
};

} // namespace orch::runtime
