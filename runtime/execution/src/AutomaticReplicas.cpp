// Measures, asks the scaler, applies, keeps the account (see AutomaticReplicas.h).
#include "AutomaticReplicas.h"
#include "orch/runtime/execution/GpuPlacement.h"

#include <algorithm>

namespace orch::runtime {

AutomaticReplicas::AutomaticReplicas(const plan::Plan &plan, std::vector<CallSummary> &calls)
    : summary_(calls), waiting_(plan.calls.size(), false), window_(plan.calls.size()),
      sealedAtWindowStart_(plan.calls.size(), 0) {
  std::vector<ReplicaScalerCall> scaled;
  bool anyAutomatic = false;
  for (uint32_t c = 0; c < plan.calls.size(); ++c) {
    const plan::CallOptions &options = plan.calls[c].options;
    // A concurrent Call (in_flight > 1) waits on a service, not on cores: its one replica
    // keeps `in_flight` requests open, and more replicas would only split its rate limits.
    const bool automatic =
        options.replicas == plan::CallOptions::kAutomaticReplicas && options.inFlight <= 1;
    anyAutomatic = anyAutomatic || automatic;
    const uint32_t replicas = uint32_t(std::max<int64_t>(1, options.replicas));
    const bool onGpus = plan.calls[c].gpu && options.gpus > 0;
    scaled.push_back(ReplicaScalerCall{
        plan.calls[c].name, automatic, replicas, options.cpus, onGpus ? options.gpus : 0, 0,
        uint64_t(std::max<int64_t>(0, options.memoryBytes)),
        onGpus ? gpuMemoryPerReplica(options.gpus, options.gpuMemoryBytes) : 0});
    summary_[c].replicas = replicas;
    summary_[c].automaticReplicas = automatic;
  }
  if (anyAutomatic)
    scaler_.emplace(std::move(scaled));
}

void AutomaticReplicas::started(uint64_t batchId, double at) {
  auto found = batches_.find(batchId);
  if (found != batches_.end() && found->second.startedAt < 0)
    found->second.startedAt = at;
}

void AutomaticReplicas::ended(uint64_t batchId, double at) {
  auto found = batches_.find(batchId);
  if (found == batches_.end())
    return;
  const Batch &batch = found->second;
  if (batch.startedAt >= 0)
    window_[batch.call].runningSeconds +=
        std::max(0.0, at - std::max(batch.startedAt, windowStart_));
  batches_.erase(found);
}

void AutomaticReplicas::sample(const LineageEngine &engine, BatchExecutor &executor, double now) {
  if (last_ < 0)
    last_ = windowStart_ = now;
  const double lasted = std::max(0.0, now - last_);
  last_ = now;
  for (uint32_t c = 0; c < summary_.size(); ++c) {
    CallSummary &call = summary_[c];
    const uint32_t replicas =
        call.replicaChanges.empty() ? uint32_t(call.replicas) : call.replicaChanges.back().replicas;
    call.replicaSeconds += replicas * lasted;
    if (waiting_[c])
      window_[c].waitingSeconds += lasted;
    const CallLoad &load = engine.callLoad(c);
    waiting_[c] = load.ready > 0 && !load.heldBackNow;
  }
  if (scaler_ && now - windowStart_ >= ReplicaScaler::kWindowSeconds)
    decide(engine, executor, now);
}

void AutomaticReplicas::decide(const LineageEngine &engine, BatchExecutor &executor, double now) {
  ReplicaScaler &scaler = *scaler_;
  if (!startupKnown_) {
    // Declared operators start before the first row: their start-up time is known by now.
    startupKnown_ = true;
    for (uint32_t c = 0; c < summary_.size(); ++c)
      scaler.setStartupSeconds(c, executor.startupSeconds(c));
  }
  // A replica that could not start is gone: the count follows the executor's.
  for (uint32_t c = 0; c < summary_.size(); ++c) {
    const std::optional<uint32_t> real = executor.replicaCount(c);
    if (!scaler.call(c).automatic || !real || *real == scaler.call(c).replicas)
      continue;
    summary_[c].replicaChanges.push_back(CallSummary::ReplicaChange{
        now, *real, "a replica could not start (the log says why)", false});
    scaler.applied(c, *real, now);
  }
  // Batches still running count up to now; the next window counts them from now.
  for (const auto &[id, batch] : batches_)
    if (batch.startedAt >= 0)
      window_[batch.call].runningSeconds += now - std::max(batch.startedAt, windowStart_);
  for (uint32_t c = 0; c < summary_.size(); ++c) {
    const CallLoad &load = engine.callLoad(c);
    window_[c].readyGrains = load.ready;
    window_[c].pendingGrains = load.waiting + load.ready + load.inFlight;
    window_[c].grainsDone = load.sealed - sealedAtWindowStart_[c];
    sealedAtWindowStart_[c] = load.sealed;
    window_[c].locality =
        scaler.call(c).automatic ? executor.localityWanted(c) : std::optional<LocalityWanted>();
  }
  const std::vector<ReplicaDecision> decisions =
      scaler.decide(now, now - windowStart_, window_, executor.replicaCapacity());
  for (size_t d = 0; d < decisions.size(); ++d) {
    const ReplicaDecision &decision = decisions[d];
    if (decision.move) {
      if (executor.moveReplicaToInputs(decision.call)) {
        scaler.moved(decision.call, now);
        summary_[decision.call].replicaChanges.push_back(CallSummary::ReplicaChange{
            now, scaler.call(decision.call).replicas, decision.why, true});
      }
      continue;
    }
    const uint32_t before = scaler.call(decision.call).replicas;
    const std::optional<uint32_t> running = executor.setReplicas(decision.call, decision.replicas);
    if (!running) {
      // This executor keeps its counts: nothing more to decide in this run.
      scaler_.reset();
      break;
    }
    scaler.applied(decision.call, *running, now);
    if (*running != before) {
      CallSummary &call = summary_[decision.call];
      call.replicaChanges.push_back(CallSummary::ReplicaChange{now, *running, decision.why, false});
      call.replicas = std::max<int64_t>(call.replicas, *running);
    } else if (decision.replicas < before) {
      // A shrink refused (no idle replica right now) cancels the growth it was for.
      break;
    }
  }
  windowStart_ = now;
  for (CallActivity &activity : window_)
    activity = CallActivity{};
}

} // namespace orch::runtime
