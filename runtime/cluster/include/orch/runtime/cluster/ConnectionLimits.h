// The bounds on peers' connections that a ConnectionGuard keeps: set by the coordinator for its
// ROUTER, and by a worker for its peer socket.
#pragma once

#include <chrono>
#include <cstddef>

namespace orch::runtime {

/// How the coordinator bounds the connections of peers that have not joined (ConnectionGuard).
struct ConnectionLimits {
  /// Connections that have not said hello yet, at most; the one waiting longest goes first.
  size_t maxWaiting = 64;
  /// How long a connection may stay without saying hello.
  std::chrono::milliseconds helloDeadline{10'000};
  /// Connections at most (0: half of the file descriptors free when the guard starts, so the
  /// rest stay for sinks, sources and operators).
  size_t maxConnections = 0;
};

} // namespace orch::runtime
