// Sending and receiving protocol messages on ZeroMQ sockets, and waiting for them: the only
// place that builds or splits frames or polls. A DEALER (or a worker's inproc PUSH) sends
// [body]; a ROUTER sees [identity, body].
#pragma once

#include "orch/runtime/cluster/Protocol.h"

#include <zmq.hpp>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace orch::runtime {

/// `message` encoded into a frame that owns the encoding (no copy of a large value's bytes
/// between the encoder and ZeroMQ).
inline zmq::message_t messageFrame(const Message &message) {
  EncodedMessage encoded = encodeMessageBuffer(message);
  const size_t size = encoded.size;
  return zmq::message_t(
      encoded.bytes.release(), size, [](void *bytes, void *) { std::free(bytes); }, nullptr);
}

/// `message` as one body frame on a DEALER or PUSH socket; its size.
inline size_t sendMessage(zmq::socket_t &socket, const Message &message) {
  zmq::message_t frame = messageFrame(message);
  const size_t size = frame.size();
  socket.send(frame, zmq::send_flags::none);
  return size;
}

/// Waits up to `timeout` for input on `items`; a signal only cuts the wait short.
inline void pollForInput(zmq::pollitem_t *items, size_t count, std::chrono::milliseconds timeout) {
  try {
    zmq::poll(items, count, timeout);
  } catch (const zmq::error_t &error) {
    if (error.num() != EINTR)
      throw;
  }
}

/// Sends [identity, body] on a ROUTER; the body's size.
inline size_t sendMessageTo(zmq::socket_t &router, const std::string &identity,
                            const Message &message) {
  zmq::message_t body = messageFrame(message);
  const size_t size = body.size();
  router.send(zmq::buffer(identity), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
  router.send(body, zmq::send_flags::dontwait);
  return size;
}

/// All frames of the next message, or nullopt when none is waiting.
inline std::optional<std::vector<zmq::message_t>> receiveFrames(zmq::socket_t &socket) {
  std::vector<zmq::message_t> frames;
  for (;;) {
    zmq::message_t frame;
    if (!socket.recv(frame, frames.empty() ? zmq::recv_flags::dontwait : zmq::recv_flags::none))
      return std::nullopt;
    const bool more = frame.more();
    frames.push_back(std::move(frame));
    if (!more)
      return frames;
  }
}

/// One event of a ZeroMQ socket monitor (zmq_socket_monitor): its kind (ZMQ_EVENT_*) and its
/// value (a connection's descriptor, or an error code), from the first of its two frames.
struct MonitorEvent {
  uint16_t event = 0;
  uint32_t value = 0;
};

inline std::optional<MonitorEvent> parseMonitorEvent(const std::vector<zmq::message_t> &frames) {
  if (frames.empty() || frames.front().size() < 6)
    return std::nullopt;
  MonitorEvent parsed;
  std::memcpy(&parsed.event, frames.front().data(), sizeof parsed.event);
  std::memcpy(&parsed.value, static_cast<const char *>(frames.front().data()) + 2,
              sizeof parsed.value);
  return parsed;
}

} // namespace orch::runtime
