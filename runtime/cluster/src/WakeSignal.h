// Ends a background thread's wait at once when it is told to stop: an eventfd it polls beside
// its sockets (a zmq_pollitem_t with a file descriptor), written once on stop. Without it the
// thread waits out its poll's timeout, and whatever joins it with it (a worker's exit waited up
// to 100 ms for its peer socket's thread).
#pragma once

#include <zmq.hpp>

#include <cstdint>

#include <sys/eventfd.h>
#include <unistd.h>

namespace orch::runtime {

class WakeSignal {
public:
  WakeSignal() : fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}
  ~WakeSignal() { ::close(fd_); }
  WakeSignal(const WakeSignal &) = delete;
  WakeSignal &operator=(const WakeSignal &) = delete;

  /// Readable from now on (it is never read: a stopping thread polls no more).
  void wake() {
    const uint64_t one = 1;
    [[maybe_unused]] const ssize_t written = ::write(fd_, &one, sizeof one);
  }
  /// To poll beside the thread's sockets.
  zmq::pollitem_t pollItem() const { return {nullptr, fd_, ZMQ_POLLIN, 0}; }

private:
  int fd_;
};

} // namespace orch::runtime
