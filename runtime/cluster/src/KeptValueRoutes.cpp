// Routing of batches that read kept values (KeptValueRoutes.h).
#include "KeptValueRoutes.h"

namespace orch::runtime {

void KeptValueRoutes::start(const plan::Plan &plan, uint64_t threshold) {
  keepOver_.assign(plan.calls.size(), 0);
  if (threshold == 0)
    return;
  std::vector<bool> keepable(plan.calls.size(), true), invoked(plan.calls.size(), false);
  for (const plan::PlanNode &node : plan.nodes) {
    if (node.kind != plan::NodeKind::Invoke || node.index >= plan.calls.size())
      continue;
    invoked[node.index] = true;
    bool onlyCalls = node.sinks.empty();
    for (uint32_t consumer : node.consumers)
      onlyCalls = onlyCalls && plan.nodes[consumer].kind == plan::NodeKind::Invoke;
    keepable[node.index] = keepable[node.index] && onlyCalls;
  }
  // A `checkpoint: true` Call's results come to the coordinator, which keeps them in the run
  // journal whatever their size.
  for (size_t c = 0; c < plan.calls.size(); ++c)
    if (invoked[c] && keepable[c] &&
        plan.calls[c].options.checkpoint != plan::CheckpointPolicy::Always)
      keepOver_[c] = threshold;
}

void KeptValueRoutes::route(Batch batch) {
  Waiting waiting{std::move(batch), std::nullopt};
  if (!sendOrWait(waiting)) {
    waiting_.push_back(std::move(waiting));
    ++waitingBatches_;
  }
}

void KeptValueRoutes::retryWaiting() {
  if (waiting_.empty())
    return;
  std::deque<Waiting> still;
  while (!waiting_.empty()) {
    Waiting waiting = std::move(waiting_.front());
    waiting_.pop_front();
    const bool engineBatch = !waiting.recomputes;
    if (sendOrWait(waiting)) {
      if (engineBatch)
        --waitingBatches_;
    } else {
      still.push_back(std::move(waiting));
    }
  }
  waiting_.swap(still);
}

bool KeptValueRoutes::sendOrWait(Waiting &waiting) {
  if (waiting.relaysPending > 0)
    return false;
  Batch &batch = waiting.batch;
  std::map<uint32_t, uint64_t> bytesByOwner;
  std::map<uint32_t, std::vector<uint64_t>> idsByOwner;
  for (Value &input : batch.inputs) {
    if (input.kind() != Value::Kind::Ref)
      continue;
    const KeptValueLedger::Record *record = ledger_.resolve(input);
    if (!record)
      continue;
    if (record->state == KeptValueLedger::Record::State::Recomputing)
      return false;
    if (record->state == KeptValueLedger::Record::State::Failed) {
      const std::string why =
          "an input kept by worker " + input.asRef().owner +
          " was lost with it and could not be computed again: " + record->failure;
      if (waiting.recomputes)
        recomputeFailed(*waiting.recomputes, why);
      else
        target_.endWithError(batch, why);
      return true;
    }
    bytesByOwner[record->worker] += input.asRef().bytes;
    idsByOwner[record->worker].push_back(input.asRef().id);
  }
  uint32_t preferred = kNoIndex;
  uint64_t most = 0;
  for (const auto &[w, bytes] : bytesByOwner)
    if (bytes > most) {
      preferred = w;
      most = bytes;
    }
  const uint32_t replica = target_.pickReplica(batch.call, preferred, batch.alone);
  if (replica == kNoIndex)
    return false;
  const uint32_t worker = target_.workerOfReplica(replica);
  if (relayUnreachable(waiting, worker, idsByOwner))
    return false;
  std::vector<uint32_t> peers;
  for (const auto &[w, bytes] : bytesByOwner)
    if (w != worker) {
      peers.push_back(w);
      fetchedFromPeers_ += idsByOwner[w].size();
    }
  target_.send(replica, std::move(batch), std::move(peers), waiting.recomputes);
  return true;
}

bool KeptValueRoutes::relayUnreachable(
    Waiting &waiting, uint32_t reader,
    const std::map<uint32_t, std::vector<uint64_t>> &idsByOwner) {
  for (const auto &[owner, ids] : idsByOwner) {
    if (!unreachable_.count({reader, owner}))
      continue;
    target_.askForValues(owner, ids);
    relays_[owner].push_back(waiting.batch.id);
    ++waiting.relaysPending;
  }
  return waiting.relaysPending > 0;
}

bool KeptValueRoutes::markUnreachable(uint32_t reader, uint32_t owner) {
  return unreachable_.insert({reader, owner}).second;
}

void KeptValueRoutes::relayed(uint32_t owner, const std::string &ownerName,
                              const std::vector<uint64_t> &ids, const std::vector<Value> &values) {
  std::deque<uint64_t> &asked = relays_[owner];
  if (asked.empty())
    return;
  const uint64_t batchId = asked.front();
  asked.pop_front();
  for (Waiting &waiting : waiting_) {
    if (waiting.batch.id != batchId)
      continue;
    for (Value &input : waiting.batch.inputs) {
      if (input.kind() != Value::Kind::Ref || input.asRef().owner != ownerName)
        continue;
      for (size_t i = 0; i < ids.size() && i < values.size(); ++i)
        if (ids[i] == input.asRef().id) {
          input = values[i];
          ++valuesRelayed_;
          break;
        }
    }
    if (waiting.relaysPending > 0)
      --waiting.relaysPending;
    return;
  }
}

std::vector<KeptValueRoutes::Key> KeptValueRoutes::workerLost(uint32_t w) {
  std::vector<Key> lostValues = ledger_.lose(w);
  // Relays it will never answer: the batches that wait for them look again (its values are
  // being computed again now).
  for (uint64_t batchId : relays_[w])
    for (Waiting &waiting : waiting_)
      if (waiting.batch.id == batchId && waiting.relaysPending > 0)
        --waiting.relaysPending;
  relays_.erase(w);
  std::erase_if(unreachable_, [w](const std::pair<uint32_t, uint32_t> &pair) {
    return pair.first == w || pair.second == w;
  });
  return lostValues;
}

void KeptValueRoutes::recompute(const std::vector<Key> &keys) {
  for (const Key &key : keys)
    recompute(key);
}

void KeptValueRoutes::recomputed(const Key &key, BatchReport &report) {
  if (ledger_.recomputed(key, report))
    recompute(key);
}

void KeptValueRoutes::recompute(const Key &key) {
  std::optional<Batch> batch = ledger_.recomputation(key, nextRecomputeBatch_++);
  if (!batch)
    return;
  Waiting waiting{std::move(*batch), key};
  if (!sendOrWait(waiting))
    waiting_.push_back(std::move(waiting));
}

void KeptValueRoutes::recomputeFailed(const Key &key, const std::string &why) {
  if (ledger_.recomputeFailed(key, why))
    recompute(key);
  else
    target_.log("a value kept by worker " + key.first + " could not be computed again: " + why);
}

} // namespace orch::runtime
