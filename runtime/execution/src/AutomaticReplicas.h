// The run loop's side of automatic replicas: it measures each Call's running batches and
// waiting input between windows, asks the ReplicaScaler what to change, has the executor do it,
// and keeps the account (replica-seconds, every change and why) in the run's summary.
#pragma once

#include "orch/plan/Plan.h"
#include "orch/runtime/engine/LineageEngine.h"
#include "orch/runtime/execution/BatchExecutor.h"
#include "orch/runtime/execution/ReplicaScaler.h"
#include "orch/runtime/execution/RunLoop.h"

#include <optional>
#include <unordered_map>
#include <vector>

namespace orch::runtime {

class AutomaticReplicas {
public:
  /// `calls` is the summary's, filled with each Call's first count.
  AutomaticReplicas(const plan::Plan &plan, std::vector<CallSummary> &calls);

  void dispatched(uint64_t batchId, uint32_t call) { batches_[batchId] = Batch{call, -1}; }
  /// The batch began to run `at` seconds into the run.
  void started(uint64_t batchId, double at);
  /// The batch finished, was lost or abandoned, `at` seconds into the run.
  void ended(uint64_t batchId, double at);

  /// Called after each dispatch: what ran and waited since the last call; at the end of a
  /// window, the scaler's changes go to `executor`.
  void sample(const LineageEngine &engine, BatchExecutor &executor, double now);

private:
  struct Batch {
    uint32_t call;
    /// Seconds into the run when it began to run (not yet: negative).
    double startedAt;
  };
  void decide(const LineageEngine &engine, BatchExecutor &executor, double now);

  std::vector<CallSummary> &summary_;
  std::optional<ReplicaScaler> scaler_;
  std::unordered_map<uint64_t, Batch> batches_;
  std::vector<bool> waiting_;
  std::vector<CallActivity> window_;
  /// Each Call's sealed grains when the window began.
  std::vector<uint64_t> sealedAtWindowStart_;
  /// Seconds into the run at the last sample (none yet: negative).
  double last_ = -1;
  double windowStart_ = 0;
  bool startupKnown_ = false;
};

} // namespace orch::runtime
