// The coordinator's account of kept values (KeptValueLedger.h).
#include "KeptValueLedger.h"

namespace orch::runtime {

void KeptValueLedger::track(uint32_t w, const std::string &owner, BatchReport &report,
                            std::optional<Recipe> recipe) {
  for (GrainReport &row : report.grains) {
    if (row.value.kind() != Value::Kind::Ref)
      continue;
    const ValueRef ref = row.value.asRef();
    if (ref.owner != owner) {
      // A worker vouches only for its own values.
      report.batchError = "worker " + owner + " answered with a value of worker " + ref.owner;
      report.grains.clear();
      return;
    }
    std::shared_ptr<Dropped> dropped = dropped_;
    row.value = Value::ref(
        std::shared_ptr<const ValueRef>(new ValueRef(ref), [dropped](const ValueRef *gone) {
          {
            std::lock_guard lock(dropped->mutex);
            dropped->keys.emplace_back(gone->owner, gone->id);
          }
          delete gone;
        }));
    ++valuesKept_;
    bytesKept_ += ref.bytes;
    Record record;
    record.worker = w;
    if (recipe && !recipe->grains.empty()) {
      record.call = recipe->call;
      const size_t perGrain = recipe->inputs.size() / recipe->grains.size();
      for (size_t g = 0; g < recipe->grains.size(); ++g)
        if (recipe->grains[g].grain == row.grain) {
          record.grain = recipe->grains[g];
          record.inputs.assign(recipe->inputs.begin() + g * perGrain,
                               recipe->inputs.begin() + (g + 1) * perGrain);
        }
    }
    records_[Key(ref.owner, ref.id)] = std::move(record);
  }
}

const KeptValueLedger::Record *KeptValueLedger::resolve(Value &input) const {
  for (int hops = 0; hops < 64 && input.kind() == Value::Kind::Ref; ++hops) {
    auto found = records_.find(Key(input.asRef().owner, input.asRef().id));
    if (found == records_.end())
      return nullptr;
    if (found->second.state != Record::State::Replaced)
      return &found->second;
    input = found->second.replacement;
  }
  return nullptr;
}

std::vector<KeptValueLedger::Key> KeptValueLedger::lose(uint32_t w) {
  std::vector<Key> lost;
  for (auto &[key, record] : records_)
    if (record.worker == w && record.state == Record::State::Held) {
      if (record.call == kNoIndex) {
        // Without a recipe (a stale batch's value, which the engine never took) nothing can
        // run again.
        record.state = Record::State::Failed;
        record.failure = "its producing grain is not known";
        continue;
      }
      record.state = Record::State::Recomputing;
      lost.push_back(key);
    }
  return lost;
}

std::optional<Batch> KeptValueLedger::recomputation(const Key &key, uint64_t batchId) {
  auto found = records_.find(key);
  if (found == records_.end())
    return std::nullopt;
  Record &record = found->second;
  record.state = Record::State::Recomputing;
  Batch batch;
  batch.id = batchId;
  batch.call = record.call;
  batch.grains = {record.grain};
  batch.inputsPerGrain = static_cast<uint32_t>(record.inputs.size());
  batch.inputs = record.inputs;
  return batch;
}

bool KeptValueLedger::recomputed(const Key &key, BatchReport &report) {
  auto found = records_.find(key);
  if (found == records_.end())
    return false; // nobody needs it any more
  std::optional<std::string> why = report.batchError;
  if (!why && (report.grains.size() != 1 || report.grains[0].kind != RowResultKind::Value))
    why = report.grains.empty() ? "no result" : report.grains[0].message;
  if (why)
    return recomputeFailed(key, *why);
  found->second.state = Record::State::Replaced;
  found->second.replacement = std::move(report.grains[0].value);
  ++valuesRecomputed_;
  return false;
}

bool KeptValueLedger::recomputeFailed(const Key &key, const std::string &why) {
  auto found = records_.find(key);
  if (found == records_.end())
    return false;
  if (++found->second.attempts < kRecomputeAttempts)
    return true;
  found->second.state = Record::State::Failed;
  found->second.failure = why;
  return false;
}

std::vector<KeptValueLedger::Key> KeptValueLedger::takeDropped() {
  std::vector<Key> all;
  for (;;) {
    std::vector<Key> keys;
    {
      std::lock_guard lock(dropped_->mutex);
      keys.swap(dropped_->keys);
    }
    if (keys.empty())
      return all;
    for (Key &key : keys) {
      // A record's recipe and replacement may hold references too: they come back here.
      records_.erase(key);
      all.push_back(std::move(key));
    }
  }
}

} // namespace orch::runtime
