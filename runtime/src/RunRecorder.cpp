// RunRecorder: appends records and completes them as batches and roots finish.
#include "orch/runtime/RunRecorder.h"

namespace orch::runtime {

void RunRecorder::batchDispatched(const Batch &batch, double now) {
  BatchRecord record;
  record.id = batch.id;
  record.call = batch.call;
  record.grains = static_cast<uint32_t>(batch.grains.size());
  for (const BatchGrain &grain : batch.grains)
    record.mixed |= grain.lineage.root != batch.grains.front().lineage.root;
  record.dispatched = now;
  batchIndex_[batch.id] = batches_.size();
  batches_.push_back(std::move(record));
}

void RunRecorder::batchFinished(uint64_t id, double now, double busy, const std::string &place,
                                const std::string &outcome) {
  auto found = batchIndex_.find(id);
  if (found == batchIndex_.end())
    return;
  BatchRecord &record = batches_[found->second];
  if (record.finished >= 0)
    return;
  record.finished = now;
  record.busy = busy;
  record.place = place;
  record.outcome = outcome;
}

void RunRecorder::rootAdmitted(uint64_t admission, double now) {
  rootIndex_[admission] = roots_.size();
  RootRecord record;
  record.admission = admission;
  record.admitted = now;
  roots_.push_back(record);
}

void RunRecorder::rootFinished(const RootResult &root, double now) {
  auto found = rootIndex_.find(root.admission);
  if (found == rootIndex_.end()) {
    // A row that failed at its source finishes as it is admitted.
    rootAdmitted(root.admission, now);
    found = rootIndex_.find(root.admission);
  }
  RootRecord &record = roots_[found->second];
  record.source = root.source;
  record.sourceRow = root.sourceRow;
  record.finished = now;
  record.status = root.status;
}

} // namespace orch::runtime
