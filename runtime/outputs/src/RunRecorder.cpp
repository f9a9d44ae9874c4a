// RunRecorder: appends records and completes them as batches and roots finish.
#include "orch/runtime/outputs/RunRecorder.h"

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

std::string describeSourceRow(const Value &row) {
  if (row.kind() != Value::Kind::Record)
    return {};
  for (const char *name : {"path", "id", "key", "name", "url"})
    if (const Value *field = row.field(name)) {
      if (field->kind() == Value::Kind::String)
        return std::string(name) == "path" || std::string(name) == "url"
                   ? field->asString()
                   : std::string(name) + " " + field->asString();
      if (field->kind() == Value::Kind::Int)
        return std::string(name) + " " + field->str();
    }
  return {};
}

void RunRecorder::rootAdmitted(uint64_t admission, double now, std::string label) {
  if (!label.empty())
    labels_[admission] = std::move(label);
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
  record.unfinished = stoppedByTheRun(root);
  auto label = labels_.find(root.admission);
  for (const SkippedMember &skipped : root.skippedMembers) {
    if (++skippedMemberCount_ > kKeptSkippedMembers || skipped.cause >= root.failures.size())
      continue;
    skippedMembers_.push_back(SkippedMemberRecord{
        root.source, root.sourceRow, label != labels_.end() ? label->second : std::string(),
        skipped.path, root.failures[skipped.cause]});
  }
  if (root.status == RootStatus::Failed) {
    if (label != labels_.end())
      record.label = std::move(label->second);
    if (const Failure *cause = rootCause(root))
      record.cause = *cause;
  }
  if (label != labels_.end())
    labels_.erase(label);
}

} // namespace orch::runtime
