// A worker's peer socket (PeerServer.h).
#include "PeerServer.h"

#include "MessageSocket.h"

#include <pthread.h>
#include <zmq.h>

namespace orch::runtime {
namespace {

/// A fetch names ids only: nothing bigger is read from a peer.
constexpr int64_t kLargestRequest = 1 << 20;

} // namespace

PeerServer::PeerServer(KeptValues &values, const std::string &endpoint,
                       std::optional<CurveKeyPair> key,
                       std::function<void(const std::string &)> log)
    : values_(values), log_(std::move(log)), context_(1),
      router_(context_, zmq::socket_type::router) {
  router_.set(zmq::sockopt::linger, 0);
  router_.set(zmq::sockopt::maxmsgsize, kLargestRequest);
  std::optional<AuthorizedKeys> admitted;
  if (key) {
    admitted = AuthorizedKeys{};
    router_.set(zmq::sockopt::curve_server, 1);
    router_.set(zmq::sockopt::curve_secretkey, key->secretKey);
    router_.set(zmq::sockopt::zap_domain, "orch-peers");
  }
  guard_ = std::make_unique<ConnectionGuard>(context_, router_, std::move(admitted),
                                             ConnectionLimits{}, log_);
  router_.bind(endpoint);
  bound_ = router_.get(zmq::sockopt::last_endpoint);
  thread_ = std::thread([this] { run(); });
}

PeerServer::~PeerServer() {
  stopping_ = true;
  wake_.wake();
  thread_.join();
  guard_.reset();
  router_.close();
}

void PeerServer::admit(const std::vector<std::string> &publicKeys) {
  AuthorizedKeys keys;
  for (const std::string &key : publicKeys)
    keys[key] = "peer";
  guard_->admit(std::move(keys));
}

void PeerServer::run() {
  ::pthread_setname_np(::pthread_self(), "orch-peers");
  while (!stopping_.load()) {
    zmq::pollitem_t items[] = {{router_.handle(), 0, ZMQ_POLLIN, 0}, wake_.pollItem()};
    pollForInput(items, 2, std::chrono::milliseconds(100));
    while (auto frames = receiveFrames(router_))
      serve(*frames);
  }
}

void PeerServer::serve(std::vector<zmq::message_t> &frames) {
  const std::string identity = frames.front().to_string();
  const int fd = ::zmq_msg_get(frames.back().handle(), ZMQ_SRCFD);
  if (frames.size() != 2) {
    guard_->disconnect(fd);
    return;
  }
  auto decoded = decodeMessage(frames.back().to_string_view());
  auto *message = std::get_if<Message>(&decoded);
  auto *fetch = message ? std::get_if<FetchMessage>(message) : nullptr;
  if (!fetch) {
    try {
      sendMessageTo(router_, identity,
                    ErrorMessage{message ? std::string("a peer socket answers only fetch")
                                         : "malformed message: " + std::get<std::string>(decoded)});
    } catch (const zmq::error_t &) {
    }
    guard_->disconnect(fd);
    return;
  }
  guard_->joined(fd);
  const BlobsMessage blobs = values_.findAll(fetch->ids);
  uint64_t bytes = 0;
  for (const Value &value : blobs.values)
    bytes += approximateBytes(value);
  try {
    sendMessageTo(router_, identity, blobs);
    valuesServed_ += blobs.ids.size();
    bytesServed_ += bytes;
  } catch (const zmq::error_t &) {
    // The fetcher went away; it asks again or reports its batch lost.
  }
}

} // namespace orch::runtime
