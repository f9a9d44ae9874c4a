// The coordinator's placement rules (see ReplicaPlacement.h).
#include "orch/runtime/cluster/ReplicaPlacement.h"

#include <algorithm>

namespace orch::runtime {

ReplicaPlacement::ReplicaPlacement(const plan::Plan &plan)
    : plan_(plan), replicasOfCall_(plan.calls.size()) {
  for (uint32_t c = 0; c < plan.calls.size(); ++c)
    for (int64_t r = 0; r < std::max<int64_t>(1, plan.calls[c].options.replicas); ++r) {
      replicasOfCall_[c].push_back(static_cast<uint32_t>(replicas_.size()));
      replicas_.push_back(Replica{c, kNoIndex, {}});
    }
}

uint32_t ReplicaPlacement::addWorker(double cpus, bool hasGpus, uint64_t memoryBytes) {
  workers_.push_back(Worker{cpus > 0 ? cpus : 1, hasGpus, true, {}, memoryBytes, 0});
  return static_cast<uint32_t>(workers_.size() - 1);
}

uint64_t ReplicaPlacement::memoryHint(uint32_t replica) const {
  return uint64_t(std::max<int64_t>(0, plan_.calls[replicas_[replica].call].options.memoryBytes));
}

bool ReplicaPlacement::hasRoomFor(uint32_t w, uint32_t replica) const {
  const Worker &worker = workers_[w];
  return worker.memory == 0 || worker.memoryPromised + memoryHint(replica) <= worker.memory;
}

void ReplicaPlacement::assign(uint32_t replica, uint32_t w) {
  replicas_[replica].worker = w;
  workers_[w].replicas.push_back(replica);
  workers_[w].memoryPromised += memoryHint(replica);
}

void ReplicaPlacement::removeWorker(uint32_t w) {
  Worker &worker = workers_[w];
  worker.alive = false;
  for (uint32_t r : worker.replicas) {
    replicas_[r].worker = kNoIndex;
    replicas_[r].queued.clear();
  }
  worker.replicas.clear();
  worker.memoryPromised = 0;
}

std::vector<ReplicaPlacement::Move> ReplicaPlacement::place(uint32_t *waitingForGpu) {
  std::vector<Move> moves;
  for (uint32_t r = 0; r < replicas_.size(); ++r) {
    if (replicas_[r].worker != kNoIndex)
      continue;
    const plan::PlanCall &call = plan_.calls[replicas_[r].call];
    const bool wantsGpu = call.gpu && call.options.gpus > 0;
    auto load = [&](uint32_t w) { return double(workers_[w].replicas.size()) / workers_[w].cpus; };
    auto better = [&](uint32_t a, uint32_t b) {
      const bool gpuA = wantsGpu && workers_[a].hasGpus;
      const bool gpuB = wantsGpu && workers_[b].hasGpus;
      if (gpuA != gpuB)
        return gpuA;
      const bool roomA = hasRoomFor(a, r), roomB = hasRoomFor(b, r);
      if (roomA != roomB)
        return roomA;
      return load(a) < load(b);
    };
    uint32_t best = kNoIndex;
    for (uint32_t w = 0; w < workers_.size(); ++w) {
      if (!workers_[w].alive || (call.options.requireGpu && !workers_[w].hasGpus))
        continue;
      if (best == kNoIndex || better(w, best))
        best = w;
    }
    if (best == kNoIndex) {
      if (waitingForGpu && call.options.requireGpu)
        *waitingForGpu = replicas_[r].call;
      continue;
    }
    assign(r, best);
    moves.push_back(Move{r, best});
  }
  return moves;
}

std::vector<ReplicaPlacement::Move> ReplicaPlacement::rebalance(uint32_t newcomer) {
  std::vector<Move> moves;
  for (;;) {
    uint32_t busiest = kNoIndex;
    for (uint32_t w = 0; w < workers_.size(); ++w)
      if (workers_[w].alive && w != newcomer &&
          (busiest == kNoIndex || workers_[w].replicas.size() > workers_[busiest].replicas.size()))
        busiest = w;
    if (busiest == kNoIndex ||
        workers_[busiest].replicas.size() < workers_[newcomer].replicas.size() + 2)
      return moves;
    std::vector<uint32_t> &hosted = workers_[busiest].replicas;
    auto idle = std::find_if(hosted.begin(), hosted.end(), [&](uint32_t r) {
      return replicas_[r].queued.empty() && hasRoomFor(newcomer, r);
    });
    if (idle == hosted.end())
      return moves;
    const uint32_t r = *idle;
    hosted.erase(idle);
    workers_[busiest].memoryPromised -= memoryHint(r);
    assign(r, newcomer);
    moves.push_back(Move{r, newcomer, busiest});
  }
}

uint32_t ReplicaPlacement::pick(uint32_t call, uint32_t depth, uint32_t preferredWorker) const {
  uint32_t best = kNoIndex;
  bool bestPreferred = false;
  for (uint32_t r : replicasOfCall_[call]) {
    if (replicas_[r].worker == kNoIndex || replicas_[r].queued.size() >= depth)
      continue;
    const bool preferred = replicas_[r].worker == preferredWorker;
    if (best == kNoIndex || (preferred && !bestPreferred) ||
        (preferred == bestPreferred &&
         replicas_[r].queued.size() < replicas_[best].queued.size())) {
      best = r;
      bestPreferred = preferred;
    }
  }
  return best;
}

} // namespace orch::runtime
