// ZAP answers and connection bookkeeping for the coordinator's ROUTER (ConnectionGuard.h).
#include "ConnectionGuard.h"

#include "MessageSocket.h"

#include <zmq.h>

#include <algorithm>
#include <cstring>
#include <dirent.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <vector>

namespace orch::runtime {
namespace {

using Clock = std::chrono::steady_clock;

/// How long a connection that broke the protocol stays open for its error answer.
constexpr std::chrono::milliseconds kViolationGrace{100};

/// File descriptors this process may still open.
size_t freeFileDescriptors() {
  struct rlimit limit {};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY)
    return 1u << 20;
  size_t open = 0;
  if (DIR *fds = ::opendir("/proc/self/fd")) {
    while (::readdir(fds))
      ++open;
    ::closedir(fds);
  }
  return limit.rlim_cur > open ? size_t(limit.rlim_cur - open) : 0;
}

std::string z85(const uint8_t *key) {
  char text[41] = {};
  ::zmq_z85_encode(text, key, 32);
  return text;
}

} // namespace

ConnectionGuard::ConnectionGuard(zmq::context_t &context, zmq::socket_t &router,
                                 std::optional<AuthorizedKeys> keys, ConnectionLimits limits,
                                 std::function<void(const std::string &)> log)
    : context_(context), keys_(std::move(keys)), limits_(limits), log_(std::move(log)),
      monitorEndpoint_("inproc://orch-connections-" + std::to_string(uintptr_t(this))),
      authentication_(context_, zmq::socket_type::rep), monitor_(context_, zmq::socket_type::pair) {
  if (limits_.maxConnections == 0)
    limits_.maxConnections = std::max<size_t>(8, freeFileDescriptors() / 2);
  authentication_.set(zmq::sockopt::linger, 0);
  monitor_.set(zmq::sockopt::linger, 0);
  // ZeroMQ asks the handler bound at this address about every CURVE peer of the context.
  if (keys_)
    authentication_.bind("inproc://zeromq.zap.01");
  if (::zmq_socket_monitor(
          router.handle(), monitorEndpoint_.c_str(),
          ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
              ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) != 0)
    throw zmq::error_t();
  monitor_.connect(monitorEndpoint_);
  thread_ = std::thread([this] { run(); });
}

ConnectionGuard::~ConnectionGuard() {
  stopping_ = true;
  wake_.wake();
  thread_.join();
}

void ConnectionGuard::run() {
  while (!stopping_.load()) {
    zmq::pollitem_t items[] = {{monitor_.handle(), 0, ZMQ_POLLIN, 0},
                               wake_.pollItem(),
                               {authentication_.handle(), 0, ZMQ_POLLIN, 0}};
    pollForInput(items, keys_ ? 3 : 2, std::chrono::milliseconds(20));
    if (items[0].revents & ZMQ_POLLIN)
      readMonitorEvent();
    if (keys_ && (items[2].revents & ZMQ_POLLIN))
      answerAuthentication();
    closeLate();
  }
}

void ConnectionGuard::answerAuthentication() {
  std::vector<zmq::message_t> request;
  for (;;) {
    zmq::message_t frame;
    if (!authentication_.recv(frame, zmq::recv_flags::none))
      return;
    const bool more = frame.more();
    request.push_back(std::move(frame));
    if (!more)
      break;
  }
  // version, request id, domain, address, routing id, mechanism, credentials...
  std::string status = "400", text = "not an authorized key", user;
  const std::string address = request.size() > 3 ? request[3].to_string() : "";
  if (request.size() == 7 && request[5].to_string() == "CURVE" && request[6].size() == 32) {
    const std::string key = z85(request[6].data<uint8_t>());
    std::unique_lock lock(mutex_);
    auto found = keys_->find(key);
    if (found != keys_->end()) {
      status = "200";
      text = "OK";
      user = found->second;
    } else {
      const uint64_t refused = ++counts_.refusedKeys;
      lock.unlock();
      logProblem(refused, "refused a peer at " + address + ": its key " + key +
                              " is not in the authorized keys");
    }
  } else {
    text = "only CURVE peers are admitted";
  }
  const std::string version = "1.0";
  const std::string requestId = request.size() > 1 ? request[1].to_string() : "";
  const std::string *reply[] = {&version, &requestId, &status, &text, &user};
  for (const std::string *frame : reply)
    authentication_.send(zmq::buffer(*frame), zmq::send_flags::sndmore);
  authentication_.send(zmq::message_t(), zmq::send_flags::none);
}

void ConnectionGuard::readMonitorEvent() {
  while (auto frames = receiveFrames(monitor_)) {
    const std::optional<MonitorEvent> parsed = parseMonitorEvent(*frames);
    if (!parsed)
      continue;
    const uint16_t event = parsed->event;
    const int fd = static_cast<int>(parsed->value);
    if (event == ZMQ_EVENT_ACCEPTED) {
      accepted(fd);
    } else if (event == ZMQ_EVENT_DISCONNECTED) {
      std::lock_guard lock(mutex_);
      connections_.erase(fd);
    } else if (event != ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) {
      // A refused key fails its handshake too: the authentication handler counted it already
      // (refusedKeys), so only the handshakes that broke otherwise count here.
      std::lock_guard lock(mutex_);
      ++counts_.failedHandshakes;
    }
  }
}

void ConnectionGuard::accepted(int fd) {
  const std::optional<SocketId> id = socketOn(fd);
  if (!id)
    return; // closed (and perhaps reused) before this event was read
  std::lock_guard lock(mutex_);
  auto existing = connections_.find(fd);
  if (existing != connections_.end() && existing->second.id == *id)
    return;
  connections_[fd] = Connection{*id, Clock::now(), false};
  if (connections_.size() > limits_.maxConnections) {
    // Past the peers' share of file descriptors: the newcomer goes.
    connections_[fd].closing = true;
    if (shutDown(fd, *id))
      ++counts_.closedCrowded;
    return;
  }
  // Too many waiting to say hello: the one that waited longest goes, so that a flood of
  // connections cannot keep a real worker (which says hello at once) out.
  size_t waiting = 0;
  auto oldest = connections_.end();
  for (auto it = connections_.begin(); it != connections_.end(); ++it) {
    if (it->second.closing || joined_.count(it->second.id))
      continue;
    ++waiting;
    if (oldest == connections_.end() || it->second.since < oldest->second.since)
      oldest = it;
  }
  if (waiting > limits_.maxWaiting) {
    oldest->second.closing = true;
    if (shutDown(oldest->first, oldest->second.id))
      ++counts_.closedCrowded;
  }
}

void ConnectionGuard::closeLate() {
  const Clock::time_point now = Clock::now();
  std::lock_guard lock(mutex_);
  for (auto &[fd, connection] : connections_)
    if (!connection.closing && !joined_.count(connection.id) &&
        now - connection.since > limits_.helloDeadline) {
      // Marked, so that it is closed once; its disconnect event removes it.
      connection.closing = true;
      if (shutDown(fd, connection.id))
        ++counts_.closedLate;
    }
  while (!violations_.empty() && violations_.front().closeAt <= now) {
    const Violation violation = violations_.front();
    violations_.pop_front();
    if (shutDown(violation.fd, violation.id))
      ++counts_.closedViolations;
  }
}

std::optional<ConnectionGuard::SocketId> ConnectionGuard::socketOn(int fd) {
  struct stat info {};
  if (fd < 0 || ::fstat(fd, &info) != 0 || !S_ISSOCK(info.st_mode))
    return std::nullopt;
  return SocketId{info.st_dev, info.st_ino};
}

bool ConnectionGuard::shutDown(int fd, SocketId id) {
  return socketOn(fd) == id && ::shutdown(fd, SHUT_RDWR) == 0;
}

void ConnectionGuard::joined(int fd) {
  // By socket, not descriptor: the monitor's events may lag behind, and descriptors are reused.
  if (const std::optional<SocketId> id = socketOn(fd)) {
    std::lock_guard lock(mutex_);
    joined_.insert(*id);
  }
}

void ConnectionGuard::disconnect(int fd) {
  if (const std::optional<SocketId> id = socketOn(fd)) {
    std::lock_guard lock(mutex_);
    violations_.push_back({fd, *id, Clock::now() + kViolationGrace});
  }
}

void ConnectionGuard::admit(AuthorizedKeys keys) {
  std::lock_guard lock(mutex_);
  if (keys_)
    keys_ = std::move(keys);
}

ConnectionGuardCounts ConnectionGuard::counts() const {
  std::lock_guard lock(mutex_);
  return counts_;
}

void ConnectionGuard::logProblem(uint64_t count, const std::string &line) {
  if (log_ && (count <= 5 || count % 1000 == 0))
    log_(line + (count > 5 ? " (" + std::to_string(count) + " so far)" : ""));
}

} // namespace orch::runtime
