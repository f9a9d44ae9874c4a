// Resolving a batch's references (PeerFetcher.h).
#include "PeerFetcher.h"

#include "MessageSocket.h"

#include <unordered_map>

namespace orch::runtime {

void LostPeers::add(std::string worker, uint64_t batchesReceived) {
  std::lock_guard lock(mutex_);
  batchesBefore_[std::move(worker)] = batchesReceived;
}

bool LostPeers::lostSince(const std::string &worker, uint64_t arrival) const {
  std::lock_guard lock(mutex_);
  auto found = batchesBefore_.find(worker);
  return found != batchesBefore_.end() && arrival < found->second;
}

PeerFetcher::PeerFetcher(zmq::context_t &context, std::string self, KeptValues &kept,
                         std::optional<CurveKeyPair> key, std::chrono::milliseconds timeout,
                         const LostPeers *lost)
    : context_(context), self_(std::move(self)), kept_(kept), key_(std::move(key)),
      timeout_(timeout), lost_(lost) {}

std::optional<PeerFetcher::Missing>
PeerFetcher::resolve(Batch &batch, const std::vector<PeerAddress> &peers, uint64_t arrival) {
  // Positions of the references, grouped by the worker that keeps them.
  std::map<std::string, std::vector<size_t>> byOwner;
  for (size_t i = 0; i < batch.inputs.size(); ++i)
    if (batch.inputs[i].kind() == Value::Kind::Ref)
      byOwner[batch.inputs[i].asRef().owner].push_back(i);
  for (const auto &[owner, positions] : byOwner) {
    if (owner == self_) {
      for (size_t i : positions) {
        const ValueRef &ref = batch.inputs[i].asRef();
        std::optional<Value> value = kept_.find(ref.id);
        if (!value)
          return Missing{"value " + std::to_string(ref.id) + " is no longer kept by this worker",
                         ""};
        batch.inputs[i] = std::move(*value);
      }
      continue;
    }
    const PeerAddress *peer = nullptr;
    for (const PeerAddress &candidate : peers)
      if (candidate.worker == owner)
        peer = &candidate;
    if (!peer)
      return Missing{"the coordinator did not say where worker " + owner + " keeps its values", ""};
    // At most kFetchBytes a time: a batch of big values is more than one message may hold.
    for (size_t first = 0; first < positions.size();) {
      std::vector<uint64_t> ids;
      uint64_t bytes = 0;
      size_t last = first;
      for (; last < positions.size(); ++last) {
        const ValueRef &ref = batch.inputs[positions[last]].asRef();
        if (!ids.empty() && bytes + ref.bytes > kFetchBytes)
          break;
        ids.push_back(ref.id);
        bytes += ref.bytes;
      }
      auto fetched = fetch(*peer, ids, arrival);
      if (auto *problem = std::get_if<Missing>(&fetched))
        return *problem;
      std::vector<Value> &values = std::get<std::vector<Value>>(fetched);
      for (size_t k = 0; k < values.size(); ++k)
        batch.inputs[positions[first + k]] = std::move(values[k]);
      first = last;
    }
  }
  return std::nullopt;
}

zmq::socket_t &PeerFetcher::socketFor(const PeerAddress &peer) {
  auto found = sockets_.find(peer.endpoint);
  if (found != sockets_.end())
    return found->second;
  zmq::socket_t socket(context_, zmq::socket_type::dealer);
  socket.set(zmq::sockopt::linger, 0);
  socket.set(zmq::sockopt::maxmsgsize, int64_t(ProtocolLimits::kMessageBytes));
  if (key_ && !peer.key.empty()) {
    socket.set(zmq::sockopt::curve_serverkey, peer.key);
    socket.set(zmq::sockopt::curve_publickey, key_->publicKey);
    socket.set(zmq::sockopt::curve_secretkey, key_->secretKey);
  }
  socket.connect(peer.endpoint);
  return sockets_.emplace(peer.endpoint, std::move(socket)).first->second;
}

std::variant<std::vector<Value>, PeerFetcher::Missing>
PeerFetcher::fetch(const PeerAddress &peer, const std::vector<uint64_t> &ids, uint64_t arrival) {
  const std::string failed = "cannot fetch " + std::to_string(ids.size()) +
                             " kept value(s) from worker " + peer.worker + " at " + peer.endpoint +
                             ": ";
  // The owner's values are computed again elsewhere: the batch is lost, not the time limit.
  const auto lost = [&] { return lost_ && lost_->lostSince(peer.worker, arrival); };
  const Missing gone{failed + "the coordinator lost that worker", ""};
  if (lost())
    return gone;
  zmq::socket_t &socket = socketFor(peer);
  try {
    sendMessage(socket, FetchMessage{ids});
    ++requests_;
    const auto giveUp = std::chrono::steady_clock::now() + timeout_;
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          giveUp - std::chrono::steady_clock::now());
      if (left.count() <= 0)
        break;
      zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
      pollForInput(&item, 1, std::min(left, kLostPeerCheck));
      auto frames = receiveFrames(socket);
      if (!frames) {
        if (lost()) {
          sockets_.erase(peer.endpoint);
          return gone;
        }
        continue;
      }
      auto decoded = decodeMessage(frames->back().to_string_view());
      auto *message = std::get_if<Message>(&decoded);
      auto *blobs = message ? std::get_if<BlobsMessage>(message) : nullptr;
      if (!blobs) {
        sockets_.erase(peer.endpoint);
        return Missing{failed + "it answered " + (message ? messageTypeName(*message) : "garbage"),
                       peer.worker};
      }
      std::unordered_map<uint64_t, Value> byId;
      for (size_t i = 0; i < blobs->ids.size(); ++i)
        byId.emplace(blobs->ids[i], std::move(blobs->values[i]));
      std::vector<Value> values;
      for (uint64_t id : ids) {
        auto found = byId.find(id);
        if (found == byId.end())
          return Missing{failed + "it no longer keeps value " + std::to_string(id), ""};
        bytesFetched_ += approximateBytes(found->second);
        values.push_back(found->second);
      }
      valuesFetched_ += values.size();
      return values;
    }
  } catch (const zmq::error_t &error) {
    sockets_.erase(peer.endpoint);
    return Missing{failed + error.what(), peer.worker};
  }
  // A late answer must not be taken for the next fetch's: a fresh socket next time.
  sockets_.erase(peer.endpoint);
  return Missing{failed + "no answer within " + std::to_string(timeout_.count()) + " ms",
                 peer.worker};
}

} // namespace orch::runtime
