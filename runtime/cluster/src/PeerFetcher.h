// Brings a batch's referenced inputs to the worker that runs it (docs/runtime.md, "Value
// locality"): its own kept values from its store, other workers' with a `fetch` on their peer
// sockets (one DEALER per peer, kept for the replica's next batches). Used on a replica's
// thread only.
#pragma once

#include "KeptValues.h"

#include "orch/runtime/cluster/CurveKeys.h"
#include "orch/runtime/cluster/Protocol.h"

#include <zmq.hpp>

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace orch::runtime {

/// The workers the coordinator said it lost (`lost` messages), each with the number of batches
/// this worker had received by then: a fetch for one of those batches from a lost worker ends
/// at once. A batch received later names a worker of that name that joined again (the
/// coordinator never sends a lost worker's references). Written by the worker's main thread,
/// read by its replicas' threads.
class LostPeers {
public:
  void add(std::string worker, uint64_t batchesReceived);
  /// Whether `worker` was lost after the batch received as number `arrival` (from 0).
  bool lostSince(const std::string &worker, uint64_t arrival) const;

private:
  mutable std::mutex mutex_;
  std::map<std::string, uint64_t> batchesBefore_;
};

class PeerFetcher {
public:
  /// `self`: this worker's name (references it owns are read from `kept`); `key`: this
  /// worker's CURVE pair, when peers use CURVE; `timeout`: how long a peer may take to answer;
  /// `lost`: the owners not to wait for (none when null).
  PeerFetcher(zmq::context_t &context, std::string self, KeptValues &kept,
              std::optional<CurveKeyPair> key, std::chrono::milliseconds timeout,
              const LostPeers *lost = nullptr);

  /// Why a batch's inputs could not be brought here: the batch cannot run here and is reported
  /// lost; `unreachable` names the owner whose peer socket did not answer ("" when a value is
  /// gone instead), so that the coordinator relays that owner's values to this worker.
  struct Missing {
    std::string message;
    std::string unreachable;
  };

  /// Replaces every reference among `batch`'s inputs by its value, or says why it could not.
  /// `arrival`: the batch's number among those this worker received (LostPeers).
  std::optional<Missing> resolve(Batch &batch, const std::vector<PeerAddress> &peers,
                                 uint64_t arrival = 0);

  /// The most bytes of values one fetch asks for (a value larger than that alone).
  static constexpr uint64_t kFetchBytes = 64 << 20;
  /// How often a fetch waiting for its answer looks whether its owner was lost.
  static constexpr std::chrono::milliseconds kLostPeerCheck{50};

  /// Values and bytes fetched from other workers so far.
  uint64_t valuesFetched() const { return valuesFetched_; }
  uint64_t bytesFetched() const { return bytesFetched_; }
  /// `fetch` messages sent so far.
  uint64_t requests() const { return requests_; }

private:
  /// The values of `ids` from `peer`, in that order, or why not.
  std::variant<std::vector<Value>, Missing>
  fetch(const PeerAddress &peer, const std::vector<uint64_t> &ids, uint64_t arrival);
  zmq::socket_t &socketFor(const PeerAddress &peer);

  zmq::context_t &context_;
  std::string self_;
  KeptValues &kept_;
  std::optional<CurveKeyPair> key_;
  std::chrono::milliseconds timeout_;
  const LostPeers *lost_;
  std::map<std::string, zmq::socket_t> sockets_;
  uint64_t valuesFetched_ = 0, bytesFetched_ = 0, requests_ = 0;
};

} // namespace orch::runtime
