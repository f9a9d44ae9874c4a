// Where batches that read kept values go (docs/runtime.md, "Value locality"), without a socket:
// a batch is sent to a replica on the worker that keeps most of its referenced bytes, told which
// other workers keep the rest; it waits while an input is being computed again, or while the
// owners that its worker cannot reach pass their values on through the coordinator; it ends with
// an error when an input is lost for good. Lost kept values are computed again from their
// recipes as batches of their own. The coordinator owns the sockets and replicas and carries out
// what the routes decide (RouteTarget); ReplicaPlacement is the same kind of room beside it.
#pragma once

#include "KeptValueLedger.h"

#include "orch/plan/Plan.h"
#include "orch/runtime/engine/EngineTypes.h"

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace orch::runtime {

/// What the routes ask of the coordinator.
class RouteTarget {
public:
  virtual ~RouteTarget() = default;
  /// A replica of `call` with room for one more batch, preferably on worker `preferred`
  /// (kNoIndex: any); kNoIndex when none has room. `alone`: on a worker with no other batch
  /// in flight, which then takes no other until it ends (Batch::alone).
  virtual uint32_t pickReplica(uint32_t call, uint32_t preferred, bool alone) = 0;
  virtual uint32_t workerOfReplica(uint32_t replica) const = 0;
  /// Send `batch` to `replica`; the workers in `peers` keep some of its inputs. `recomputes`:
  /// the batch computes that kept value again (it is not the engine's).
  virtual void send(uint32_t replica, Batch batch, std::vector<uint32_t> peers,
                    std::optional<KeptValueLedger::Key> recomputes) = 0;
  /// Ask worker `owner` for the values `ids` it keeps (a relay: they come back as blobs).
  virtual void askForValues(uint32_t owner, std::vector<uint64_t> ids) = 0;
  /// End the engine's `batch` with a batch error, unsent.
  virtual void endWithError(const Batch &batch, std::string why) = 0;
  virtual void log(const std::string &line) = 0;
};

class KeptValueRoutes {
public:
  using Key = KeptValueLedger::Key;

  explicit KeptValueRoutes(RouteTarget &target) : target_(target) {}

  /// For `plan`: a Call's results of at least `threshold` bytes may stay on their worker when
  /// only other Calls read them (not a sink, an expression, a filter or a gather, which the
  /// coordinator evaluates itself); 0 keeps none.
  void start(const plan::Plan &plan, uint64_t threshold);
  /// Results of `call` of at least this many bytes stay on their worker (0: none).
  uint64_t keepOver(uint32_t call) const { return keepOver_[call]; }

  /// Routes one of the engine's batches: sent now, or kept waiting.
  void route(Batch batch);
  /// Tries the batches that wait again, in order.
  void retryWaiting();
  /// The engine's batches waiting to be sent.
  size_t waitingBatches() const { return waitingBatches_; }

  /// Worker `reader` cannot reach worker `owner`'s peer socket: its values are relayed from
  /// now on. False when that was known already.
  bool markUnreachable(uint32_t reader, uint32_t owner);
  /// Worker `owner` (named `ownerName`) answered the oldest relay asked of it: `values[i]` is
  /// the value `ids[i]`, and replaces the references to it in the batch that waits.
  void relayed(uint32_t owner, const std::string &ownerName, const std::vector<uint64_t> &ids,
               const std::vector<Value> &values);

  /// Worker `w` is lost: its relays are given up, and the values it kept are to be computed
  /// again (Recomputing from now on: batches that read them wait); their keys, for recompute()
  /// once the replicas have moved.
  std::vector<Key> workerLost(uint32_t w);
  /// Computes lost kept values again from their recipes, upstream first (a recipe that reads
  /// another lost value waits for it).
  void recompute(const std::vector<Key> &keys);
  /// A recomputation of `key` answered `report` (already tracked by the ledger).
  void recomputed(const Key &key, BatchReport &report);

  /// Whether a batch id is one of the routes' recomputations (not the engine's).
  static bool isRecomputation(uint64_t batchId) { return batchId >= kFirstRecomputeBatch; }

  KeptValueLedger &ledger() { return ledger_; }
  const KeptValueLedger &ledger() const { return ledger_; }
  uint64_t fetchedFromPeers() const { return fetchedFromPeers_; }
  uint64_t valuesRelayed() const { return valuesRelayed_; }

private:
  /// A batch that waits for a value being computed again, for relays, or (a recomputation)
  /// for a replica.
  struct Waiting {
    Batch batch;
    std::optional<Key> recomputes;
    /// Relays asked of owners that the chosen worker cannot reach, not yet answered.
    uint32_t relaysPending = 0;
  };
  static constexpr uint64_t kFirstRecomputeBatch = uint64_t(1) << 62;

  /// Sends `waiting` or ends it; false when it must wait.
  bool sendOrWait(Waiting &waiting);
  /// Asks the owners that `reader` cannot reach for `waiting`'s inputs; true when it asked.
  bool relayUnreachable(Waiting &waiting, uint32_t reader,
                        const std::map<uint32_t, std::vector<uint64_t>> &idsByOwner);
  void recompute(const Key &key);
  void recomputeFailed(const Key &key, const std::string &why);

  RouteTarget &target_;
  KeptValueLedger ledger_;
  std::vector<uint64_t> keepOver_;
  std::deque<Waiting> waiting_;
  size_t waitingBatches_ = 0;
  uint64_t nextRecomputeBatch_ = kFirstRecomputeBatch;
  /// (reader, owner): the reader cannot reach the owner's peer socket.
  std::set<std::pair<uint32_t, uint32_t>> unreachable_;
  /// Per owner: the batches whose relays it was asked for, in the order asked.
  std::map<uint32_t, std::deque<uint64_t>> relays_;
  uint64_t fetchedFromPeers_ = 0, valuesRelayed_ = 0;
};

} // namespace orch::runtime
