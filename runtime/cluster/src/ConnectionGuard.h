// The coordinator's door: who may connect to its ROUTER and for how long. On its own thread it
// answers ZeroMQ's authentication requests (ZAP, RFC 27: a CURVE peer is admitted only with a
// listed key, and its name becomes the messages' User-Id), and watches the socket's
// connections (a socket monitor): a connection that has not said hello within the deadline, the
// longest-waiting one when too many wait to say hello, one beyond the peers' share of file
// descriptors, and one that broke the protocol are closed, so that strangers cannot starve the run
// of memory or descriptors.
#pragma once

#include "orch/runtime/cluster/ConnectionLimits.h"
#include "orch/runtime/cluster/CurveKeys.h"

#include "WakeSignal.h"

#include <zmq.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <sys/types.h>
#include <thread>
#include <utility>

namespace orch::runtime {

/// What the guard turned away, for the run's summary.
struct ConnectionGuardCounts {
  uint64_t refusedKeys = 0;
  uint64_t closedLate = 0;
  uint64_t closedCrowded = 0;
  uint64_t closedViolations = 0;
  uint64_t failedHandshakes = 0;
};

class ConnectionGuard {
public:
  /// Call before `router` binds. With `keys`, a ZAP handler admits only those CURVE keys (the
  /// router must be a CURVE server); without, every ZMTP peer passes authentication and only
  /// the connection limits apply.
  ConnectionGuard(zmq::context_t &context, zmq::socket_t &router,
                  std::optional<AuthorizedKeys> keys, ConnectionLimits limits,
                  std::function<void(const std::string &)> log);
  ~ConnectionGuard();
  ConnectionGuard(const ConnectionGuard &) = delete;
  ConnectionGuard &operator=(const ConnectionGuard &) = delete;

  /// The connection on `fd` (a message's ZMQ_SRCFD) said hello: it is no longer waiting.
  void joined(int fd);
  /// Closes the connection on `fd` (it broke the protocol) after a short grace, so that the
  /// error it was answered with reaches it. The socket is identified now, so a reused
  /// descriptor is never touched.
  void disconnect(int fd);
  /// Replaces the keys admitted from now on (a guard made with keys only).
  void admit(AuthorizedKeys keys);
  ConnectionGuardCounts counts() const;
  size_t maxConnections() const { return limits_.maxConnections; }

private:
  /// A socket's identity while it is open (its inode), which a reused descriptor does not
  /// share.
  using SocketId = std::pair<dev_t, ino_t>;
  struct Connection {
    SocketId id;
    std::chrono::steady_clock::time_point since;
    /// Shut down; waiting for its disconnect event.
    bool closing = false;
  };
  /// A connection that broke the protocol, closed when its grace ends.
  struct Violation {
    int fd;
    SocketId id;
    std::chrono::steady_clock::time_point closeAt;
  };

  void run();
  void answerAuthentication();
  void readMonitorEvent();
  void accepted(int fd);
  void closeLate();
  static std::optional<SocketId> socketOn(int fd);
  /// Shuts `fd` down if it is still socket `id`; libzmq then closes it.
  static bool shutDown(int fd, SocketId id);
  void logProblem(uint64_t count, const std::string &line);

  zmq::context_t &context_;
  std::optional<AuthorizedKeys> keys_;
  ConnectionLimits limits_;
  std::function<void(const std::string &)> log_;
  std::string monitorEndpoint_;
  zmq::socket_t authentication_;
  zmq::socket_t monitor_;
  mutable std::mutex mutex_;
  /// By descriptor, from the monitor's accept and disconnect events.
  std::map<int, Connection> connections_;
  /// Sockets that said hello.
  std::set<SocketId> joined_;
  std::deque<Violation> violations_;
  ConnectionGuardCounts counts_;
  std::atomic<bool> stopping_{false};
  /// Written when stopping: the thread's wait ends at once rather than within 20 ms.
  WakeSignal wake_;
  std::thread thread_;
};

} // namespace orch::runtime
