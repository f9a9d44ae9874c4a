// The coordinator's placement rules (see ReplicaPlacement.h).
#include "orch/runtime/cluster/ReplicaPlacement.h"
#include "orch/runtime/execution/GpuPlacement.h"

#include <algorithm>
#include <cstdint>

namespace orch::runtime {

ReplicaPlacement::ReplicaPlacement(const plan::Plan &plan)
    : plan_(plan), replicasOfCall_(plan.calls.size()), feeders_(plan.calls.size()),
      inputsOn_(plan.calls.size()), sinceAsked_(plan.calls.size()) {
  for (const plan::PlanNode &node : plan.nodes) {
    if (node.kind != plan::NodeKind::Invoke || node.index >= plan.calls.size())
      continue;
    for (uint32_t input : node.inputs) {
      const plan::PlanNode &feeder = plan.nodes[input];
      if (feeder.kind != plan::NodeKind::Invoke || feeder.index >= plan.calls.size() ||
          !feeder.sinks.empty())
        continue;
      bool onlyCalls = true;
      for (uint32_t consumer : feeder.consumers)
        onlyCalls = onlyCalls && plan.nodes[consumer].kind == plan::NodeKind::Invoke;
      std::vector<uint32_t> &feeders = feeders_[node.index];
      if (onlyCalls && feeder.index != node.index &&
          std::find(feeders.begin(), feeders.end(), feeder.index) == feeders.end())
        feeders.push_back(feeder.index);
    }
  }
  for (uint32_t c = 0; c < plan.calls.size(); ++c)
    for (int64_t r = 0; r < std::max<int64_t>(1, plan.calls[c].options.replicas); ++r) {
      replicasOfCall_[c].push_back(static_cast<uint32_t>(replicas_.size()));
      replicas_.push_back(Replica{c, kNoIndex, {}, false, true, false, false, uint32_t(r)});
    }
}

uint32_t ReplicaPlacement::addWorker(double cpus, bool hasGpus, uint64_t memoryBytes, uint32_t gpus,
                                     uint64_t gpuMemoryBytes, uint64_t largestGpuMemoryBytes) {
  workers_.push_back(
      Worker{cpus > 0 ? cpus : 1,
             hasGpus,
             true,
             {},
             memoryBytes,
             0,
             hasGpus ? std::max(1u, gpus) : 0,
             0,
             hasGpus ? gpuMemoryBytes : 0,
             0,
             hasGpus && gpuMemoryBytes > 0
                 ? (largestGpuMemoryBytes > 0 ? largestGpuMemoryBytes : gpuMemoryBytes)
                 : 0});
  return static_cast<uint32_t>(workers_.size() - 1);
}

double ReplicaPlacement::gpuShare(uint32_t replica) const {
  const plan::PlanCall &call = plan_.calls[replicas_[replica].call];
  return call.gpu && call.options.gpus > 0 ? call.options.gpus : 0;
}

uint64_t ReplicaPlacement::gpuMemoryHint(uint32_t replica) const {
  const plan::PlanCall &call = plan_.calls[replicas_[replica].call];
  return call.gpu ? gpuMemoryPerReplica(call.options.gpus, call.options.gpuMemoryBytes) : 0;
}

bool ReplicaPlacement::hasGpuRoomFor(uint32_t w, uint32_t replica) const {
  const Worker &worker = workers_[w];
  if (worker.gpus == 0 || worker.gpusPromised + gpuShare(replica) > worker.gpus + 1e-9)
    return false;
  if (worker.gpuMemory == 0)
    return true;
  // Memory is counted per worker, summed over its GPUs: it must also fit one device.
  const uint64_t wanted = gpuMemoryHint(replica);
  const uint64_t perDevice =
      uint64_t(std::max<int64_t>(0, plan_.calls[replicas_[replica].call].options.gpuMemoryBytes));
  return worker.gpuMemoryPromised <= worker.gpuMemory &&
         wanted <= worker.gpuMemory - worker.gpuMemoryPromised &&
         perDevice <= worker.largestGpuMemory;
}

bool ReplicaPlacement::hosts(uint32_t worker, uint32_t call) const {
  for (uint32_t r : workers_[worker].replicas)
    if (replicas_[r].call == call)
      return true;
  return false;
}

double ReplicaPlacement::liveCpus() const {
  double cpus = 0;
  for (const Worker &worker : workers_)
    cpus += worker.alive ? worker.cpus : 0;
  return cpus;
}

uint32_t ReplicaPlacement::liveGpus() const {
  uint32_t gpus = 0;
  for (const Worker &worker : workers_)
    gpus += worker.alive ? worker.gpus : 0;
  return gpus;
}

uint64_t ReplicaPlacement::liveGpuMemory() const {
  uint64_t memory = 0;
  for (const Worker &worker : workers_) {
    if (!worker.alive || worker.gpus == 0)
      continue;
    if (worker.gpuMemory == 0)
      return 0;
    memory = worker.gpuMemory > UINT64_MAX - memory ? UINT64_MAX : memory + worker.gpuMemory;
  }
  return memory;
}

uint64_t ReplicaPlacement::liveMemory() const {
  uint64_t memory = 0;
  for (const Worker &worker : workers_) {
    if (!worker.alive)
      continue;
    if (worker.memory == 0)
      return 0;
    memory += worker.memory;
  }
  return memory;
}

uint32_t ReplicaPlacement::liveWorkers() const {
  return uint32_t(std::count_if(workers_.begin(), workers_.end(),
                                [](const Worker &worker) { return worker.alive; }));
}

uint32_t ReplicaPlacement::replicasOf(uint32_t call) const {
  return uint32_t(std::count_if(replicasOfCall_[call].begin(), replicasOfCall_[call].end(),
                                [&](uint32_t r) { return !replicas_[r].draining; }));
}

uint32_t ReplicaPlacement::addReplica(uint32_t call, uint32_t number) {
  if (number == kNoIndex) {
    // The lowest number none of the Call's replicas holds.
    number = 0;
    auto taken = [&](uint32_t n) {
      return std::any_of(replicasOfCall_[call].begin(), replicasOfCall_[call].end(),
                         [&](uint32_t r) { return replicas_[r].number == n; });
    };
    while (taken(number))
      ++number;
  }
  const uint32_t r = uint32_t(replicas_.size());
  replicas_.push_back(Replica{call, kNoIndex, {}, false, true, false, false, number});
  replicasOfCall_[call].push_back(r);
  return r;
}

std::optional<ReplicaPlacement::Move> ReplicaPlacement::retireReplica(uint32_t call) {
  std::vector<uint32_t> &ofCall = replicasOfCall_[call];
  if (replicasOf(call) <= 1)
    return std::nullopt;
  auto load = [&](uint32_t r) {
    const uint32_t w = replicas_[r].worker;
    // One without a worker goes first: nothing to release.
    return w == kNoIndex ? 1e300 : double(workers_[w].replicas.size()) / workers_[w].cpus;
  };
  uint32_t chosen = kNoIndex;
  for (uint32_t r : ofCall)
    if (replicas_[r].queued.empty() && !replicas_[r].draining &&
        (chosen == kNoIndex || load(r) > load(chosen)))
      chosen = r;
  if (chosen == kNoIndex)
    return std::nullopt;
  return retire(chosen);
}

ReplicaPlacement::Move ReplicaPlacement::retire(uint32_t replica) {
  const uint32_t from = replicas_[replica].worker;
  std::erase(replicasOfCall_[replicas_[replica].call], replica);
  if (from != kNoIndex)
    unassign(replica);
  replicas_[replica].retired = true;
  replicas_[replica].draining = false;
  return Move{replica, kNoIndex, from};
}

std::optional<ReplicaPlacement::Move> ReplicaPlacement::drain(uint32_t replica) {
  replicas_[replica].draining = true;
  return retireIfDrained(replica);
}

std::optional<ReplicaPlacement::Move> ReplicaPlacement::retireIfDrained(uint32_t replica) {
  if (!replicas_[replica].draining || !replicas_[replica].queued.empty())
    return std::nullopt;
  return retire(replica);
}

void ReplicaPlacement::noteBatchSent(uint32_t call, uint32_t inputsOn, uint32_t worker) {
  ++sinceAsked_[call].batches;
  if (inputsOn != kNoIndex && inputsOn == worker)
    ++sinceAsked_[call].local;
  if (inputsOn == kNoIndex || inputsOn == worker)
    return;
  // The inputs crossed: a Call that feeds this one and has no replica where it ran would make
  // them there (a replica of it there needs no more work in all, only a share of it).
  for (uint32_t feeder : feeders_[call])
    if (!hosts(worker, feeder)) {
      ++inputsOn_[feeder][worker];
      ++sinceAsked_[feeder].feeding[worker];
    }
  if (hosts(inputsOn, call))
    return;
  ++inputsOn_[call][inputsOn];
  ++sinceAsked_[call].elsewhere[inputsOn];
}

std::optional<ReplicaPlacement::LocalityWish> ReplicaPlacement::takeLocalityWish(uint32_t call) {
  SinceAsked asked = std::move(sinceAsked_[call]);
  sinceAsked_[call] = SinceAsked{};
  std::optional<LocalityWish> wish;
  for (const auto &[worker, batches] : asked.elsewhere)
    if (workers_[worker].alive && !hosts(worker, call) && batches >= 4 &&
        5 * batches >= asked.batches && (!wish || batches > wish->batches))
      wish = LocalityWish{worker, batches, batches >= 2 * asked.local, false};
  if (wish)
    return wish;
  for (const auto &[worker, batches] : asked.feeding)
    if (workers_[worker].alive && !hosts(worker, call) && batches >= 4 &&
        (!wish || batches > wish->batches))
      wish = LocalityWish{worker, batches, false, true};
  return wish;
}

void ReplicaPlacement::unassign(uint32_t replica) {
  Worker &worker = workers_[replicas_[replica].worker];
  std::erase(worker.replicas, replica);
  worker.memoryPromised -= memoryHint(replica);
  worker.gpusPromised = std::max(0.0, worker.gpusPromised - gpuShare(replica));
  worker.gpuMemoryPromised -= std::min(worker.gpuMemoryPromised, gpuMemoryHint(replica));
  replicas_[replica].worker = kNoIndex;
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
  workers_[w].gpusPromised += gpuShare(replica);
  const uint64_t hint = gpuMemoryHint(replica);
  uint64_t &promised = workers_[w].gpuMemoryPromised;
  promised = hint > UINT64_MAX - promised ? UINT64_MAX : promised + hint;
}

void ReplicaPlacement::removeWorker(uint32_t w) {
  Worker &worker = workers_[w];
  worker.alive = false;
  for (uint32_t r : worker.replicas) {
    replicas_[r].worker = kNoIndex;
    replicas_[r].queued.clear();
    // One being moved away is not placed again: its successor takes its place.
    if (replicas_[r].draining || replicas_[r].handedOver)
      retire(r);
  }
  worker.replicas.clear();
  worker.memoryPromised = 0;
  worker.gpusPromised = 0;
  worker.gpuMemoryPromised = 0;
}

std::vector<ReplicaPlacement::Move> ReplicaPlacement::place(uint32_t *waitingForGpu) {
  std::vector<Move> moves;
  for (uint32_t r = 0; r < replicas_.size(); ++r) {
    if (replicas_[r].worker != kNoIndex || replicas_[r].retired)
      continue;
    const uint32_t c = replicas_[r].call;
    const plan::PlanCall &call = plan_.calls[c];
    const bool wantsGpu = call.gpu && call.options.gpus > 0;
    auto load = [&](uint32_t w) { return double(workers_[w].replicas.size()) / workers_[w].cpus; };
    // Batches that found their inputs on a worker without a replica of their Call.
    auto inputsThere = [&](uint32_t w) -> uint64_t {
      auto found = inputsOn_[c].find(w);
      return found == inputsOn_[c].end() || hosts(w, c) ? 0 : found->second;
    };
    // A replica of the same Call counts twice: a Call's replicas spread over the workers, each
    // on cores of its own, unless that would crowd one worker.
    auto sameCall = [&](uint32_t w) {
      return double(std::count_if(workers_[w].replicas.begin(), workers_[w].replicas.end(),
                                  [&](uint32_t other) { return replicas_[other].call == c; })) /
             workers_[w].cpus;
    };
    // Half a replica's worth towards a worker where a feeding Call has more replicas than
    // this one: the results it reads would be made there.
    auto fedThere = [&](uint32_t w) {
      for (uint32_t feeder : feeders_[c]) {
        int64_t balance = 0;
        for (uint32_t other : workers_[w].replicas)
          balance += replicas_[other].call == feeder ? 1 : replicas_[other].call == c ? -1 : 0;
        if (balance > 0)
          return 0.5 / workers_[w].cpus;
      }
      return 0.0;
    };
    auto better = [&](uint32_t a, uint32_t b) {
      const bool gpuRoomA = wantsGpu && hasGpuRoomFor(a, r);
      const bool gpuRoomB = wantsGpu && hasGpuRoomFor(b, r);
      if (gpuRoomA != gpuRoomB)
        return gpuRoomA;
      const bool gpuA = wantsGpu && workers_[a].hasGpus;
      const bool gpuB = wantsGpu && workers_[b].hasGpus;
      if (gpuA != gpuB)
        return gpuA;
      const bool roomA = hasRoomFor(a, r), roomB = hasRoomFor(b, r);
      if (roomA != roomB)
        return roomA;
      if (inputsThere(a) != inputsThere(b))
        return inputsThere(a) > inputsThere(b);
      return load(a) + sameCall(a) - fedThere(a) < load(b) + sameCall(b) - fedThere(b);
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
    inputsOn_[c].erase(best);
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
      return replicas_[r].queued.empty() && hasRoomFor(newcomer, r) &&
             (gpuShare(r) == 0 || hasGpuRoomFor(newcomer, r));
    });
    if (idle == hosted.end())
      return moves;
    const uint32_t r = *idle;
    unassign(r);
    assign(r, newcomer);
    moves.push_back(Move{r, newcomer, busiest});
  }
}

std::vector<ReplicaPlacement::HandOver> ReplicaPlacement::handOverBusy(uint32_t newcomer) {
  std::vector<HandOver> handed;
  if (!workers_[newcomer].alive)
    return handed;
  // Only replicas of Calls with work count: a Call that is done, or waits for its inputs,
  // loads no one. A replacement that rebalance gave the idle replicas of finished Calls would
  // otherwise count as even with the worker that runs every replica of the bottleneck, and take
  // no batch for the rest of the run.
  const std::vector<bool> callHasWork = callsWithWork();
  auto working = [&](uint32_t w) { return workingReplicas(w, callHasWork); };
  for (;;) {
    // Working replicas per CPU (place()'s measure); a hand-over only while it evens them out:
    // with equal CPUs, while the counts differ by two or more.
    auto perCpu = [&](uint32_t w, double more) {
      return (double(working(w)) + more) / std::max(workers_[w].cpus, 1e-9);
    };
    uint32_t busiest = kNoIndex;
    for (uint32_t w = 0; w < workers_.size(); ++w)
      if (workers_[w].alive && w != newcomer &&
          (busiest == kNoIndex || perCpu(w, 0) > perCpu(busiest, 0)))
        busiest = w;
    if (busiest == kNoIndex || working(busiest) == 0 || perCpu(busiest, -1) < perCpu(newcomer, 1))
      return handed;
    const std::vector<uint32_t> &hosted = workers_[busiest].replicas;
    auto chosen = std::find_if(hosted.begin(), hosted.end(), [&](uint32_t r) {
      const plan::PlanCall &call = plan_.calls[replicas_[r].call];
      // A successor still starting is not handed on (the replica it replaces would never
      // drain); nor is one that is going.
      return replicas_[r].ready && !replicas_[r].draining && !replicas_[r].handedOver &&
             callHasWork[replicas_[r].call] && hasRoomFor(newcomer, r) &&
             (!call.options.requireGpu || hasGpuRoomFor(newcomer, r));
    });
    if (chosen == hosted.end())
      return handed;
    const uint32_t leaving = *chosen;
    replicas_[leaving].handedOver = true;
    const uint32_t successor = addReplica(replicas_[leaving].call, replicas_[leaving].number);
    assign(successor, newcomer);
    handed.push_back(HandOver{Move{successor, newcomer}, leaving});
  }
}

std::vector<bool> ReplicaPlacement::callsWithWork() const {
  std::vector<bool> callHasWork(plan_.calls.size(), false);
  for (const Replica &replica : replicas_)
    if (!replica.retired && !replica.queued.empty())
      callHasWork[replica.call] = true;
  return callHasWork;
}

size_t ReplicaPlacement::workingReplicas(uint32_t worker,
                                         const std::vector<bool> &callHasWork) const {
  const std::vector<uint32_t> &hosted = workers_[worker].replicas;
  return size_t(std::count_if(hosted.begin(), hosted.end(), [&](uint32_t r) {
    return !replicas_[r].draining && !replicas_[r].handedOver && callHasWork[replicas_[r].call];
  }));
}

bool ReplicaPlacement::idleOfWork(uint32_t worker) const {
  return workers_[worker].alive && workingReplicas(worker, callsWithWork()) == 0;
}

void ReplicaPlacement::abandonSuccessor(uint32_t successor, uint32_t leaving) {
  if (!replicas_[successor].retired)
    retire(successor);
  replicas_[leaving].handedOver = false;
}

double ReplicaPlacement::queuedPerCpu(uint32_t worker) const {
  size_t queued = 0;
  for (uint32_t r : workers_[worker].replicas)
    queued += replicas_[r].queued.size();
  return double(queued) / std::max(workers_[worker].cpus, 1e-9);
}

void ReplicaPlacement::queue(uint32_t replica, uint64_t batch) {
  replicas_[replica].queued.push_back(batch);
  replicas_[replica].lastQueued = ++batchesQueued_;
}

uint32_t ReplicaPlacement::pick(uint32_t call, uint32_t depth, uint32_t preferredWorker,
                                const std::function<bool(uint32_t worker)> &allowed) const {
  uint32_t best = kNoIndex;
  bool bestPreferred = false;
  for (uint32_t r : replicasOfCall_[call]) {
    if (replicas_[r].worker == kNoIndex || !replicas_[r].ready || replicas_[r].draining ||
        replicas_[r].queued.size() >= depth || (allowed && !allowed(replicas_[r].worker)))
      continue;
    const bool preferred = replicas_[r].worker == preferredWorker;
    const size_t queued = replicas_[r].queued.size();
    // Between replicas as free, the less busy worker's (a replacement that took idle replicas
    // would otherwise wait behind the first one's); between those, the one sent a batch longest
    // ago (when the value budget lets one batch out at a time, every replica is idle each time).
    auto lessBusy = [&] {
      if (queued != replicas_[best].queued.size())
        return queued < replicas_[best].queued.size();
      const double here = queuedPerCpu(replicas_[r].worker);
      const double there = queuedPerCpu(replicas_[best].worker);
      if (here != there)
        return here < there;
      return replicas_[r].lastQueued < replicas_[best].lastQueued;
    };
    if (best == kNoIndex || (preferred && !bestPreferred) ||
        (preferred == bestPreferred && lessBusy())) {
      best = r;
      bestPreferred = preferred;
    }
  }
  if (preferredWorker == kNoIndex || bestPreferred ||
      (best != kNoIndex && replicas_[best].queued.empty()))
    return best;
  // The replica where the inputs are is full, and no other is idle: the batch waits behind it
  // there (one more than the depth at most: a slot elsewhere let the batch be made) rather than
  // fetch its inputs across; a replica elsewhere takes the next batch when it runs dry.
  for (uint32_t r : replicasOfCall_[call])
    if (replicas_[r].worker == preferredWorker && replicas_[r].ready && !replicas_[r].draining &&
        replicas_[r].queued.size() <= depth && (!allowed || allowed(preferredWorker)))
      return r;
  return best;
}

} // namespace orch::runtime
