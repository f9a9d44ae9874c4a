// Where each Call replica lives in a distributed run: the coordinator's placement rules without
// sockets or clocks, so that they are unit tested. Replicas go to the live worker with the
// fewest replicas per CPU it offers (those of the same Call count twice: they spread); GPU Calls
// prefer workers with a GPU left (a worker's GPUs count: replicas' `gpus` add up, and their
// `gpu_memory` within the memory of the worker's GPUs when both are said) and Calls that
// require a GPU wait for one; a Call's `memory` (per replica) prefers workers with that much memory
// left of what they offer (a hint: when none has, the rules above decide); a replica added for its
// inputs (automatic replicas) goes where its Call's inputs were kept most often without a replica
// of it; a newcomer takes idle replicas from the busiest workers, and is handed busy ones when
// none is idle; batches go to the replica of their Call with the fewest in flight, up to `depth`
// each.
#pragma once

#include "orch/plan/Plan.h"
#include "orch/runtime/engine/EngineTypes.h"

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <vector>

namespace orch::runtime {

class ReplicaPlacement {
public:
  struct Replica {
    uint32_t call = kNoIndex;
    uint32_t worker = kNoIndex;
    /// Batches sent to it and not yet answered, in order: a replica runs them one after the
    /// other, so the front one is running and the next starts when its result arrives.
    std::deque<uint64_t> queued;
    /// Taken away (automatic replicas): never placed again.
    bool retired = false;
    /// Takes batches: false while its operator's process starts on a new worker (a declared
    /// operator's model loads), so that no batch's time limit counts the start.
    bool ready = true;
    /// Being moved away (automatic replicas): no new batch goes to it; it is retired once its
    /// queue is empty.
    bool draining = false;
    /// Handed over to a newcomer (handOverBusy): a successor there takes its place; it serves
    /// until the coordinator drains it (once the successor started), and no longer counts as
    /// its worker's.
    bool handedOver = false;
    /// Its number among its Call's replicas, for people ("local-1/replica 1" of a Call with
    /// two): the lowest one free when it was added; a moved replica's successor keeps it.
    uint32_t number = 0;
    /// When it was last sent a batch (queue()'s count; 0: never): between replicas as free,
    /// the one sent a batch longest ago takes the next.
    uint64_t lastQueued = 0;
  };
  /// Replica `replica` now lives on `worker` (the coordinator sends it an INIT), and no longer
  /// on `from` (which is told to release it), if it lived anywhere.
  struct Move {
    uint32_t replica;
    uint32_t worker;
    uint32_t from = kNoIndex;
  };

  /// `replicas` of each of `plan`'s Calls (at least one each).
  explicit ReplicaPlacement(const plan::Plan &plan);

  /// A worker joined; its index (workers are numbered in the order they join, as the
  /// coordinator numbers them).
  /// `memoryBytes`: what it offers replicas (0: not said, any hint fits); `gpuMemoryBytes`: its
  /// GPUs' memory, summed (0: not said, any `gpu_memory` fits), and its largest GPU's (0: the
  /// sum: one GPU).
  uint32_t addWorker(double cpus, bool hasGpus, uint64_t memoryBytes = 0, uint32_t gpus = 0,
                     uint64_t gpuMemoryBytes = 0, uint64_t largestGpuMemoryBytes = 0);
  /// The `gpu_memory` of the GPU replicas on `worker`, summed.
  uint64_t gpuMemoryPromised(uint32_t worker) const { return workers_[worker].gpuMemoryPromised; }
  /// The `memory` hints of the replicas on `worker`, summed.
  uint64_t memoryPromised(uint32_t worker) const { return workers_[worker].memoryPromised; }
  /// The worker is gone: its replicas have no worker and nothing queued; those being moved
  /// away (draining, or handed over: a successor takes their place) are retired.
  void removeWorker(uint32_t worker);

  /// Puts every replica without a worker on a live worker; the moves made. A replica of a Call
  /// that requires a GPU stays unplaced while no live worker has one (`waitingForGpu` is set to
  /// such a Call).
  std::vector<Move> place(uint32_t *waitingForGpu = nullptr);
  /// Moves idle replicas from the busiest workers to `newcomer` until the load is even.
  std::vector<Move> rebalance(uint32_t newcomer);
  /// After rebalance, while moving a replica from the busiest worker to `newcomer` evens them
  /// out, one of its replicas is handed over, busy or not (not a successor still starting).
  /// Both are measured in replicas per CPU of Calls with work (a batch queued on one of their
  /// replicas; with equal CPUs: while the counts differ by two or more), so a newcomer that
  /// took idle replicas of finished Calls still takes a share of the bottleneck's. Its successor
  /// (the same Call and number) is placed on `newcomer` (the Move to send); the replica it replaces
  /// (`leaving`) finishes what it queued and is to be drained once the successor started.
  struct HandOver {
    Move successor;
    uint32_t leaving;
  };
  std::vector<HandOver> handOverBusy(uint32_t newcomer);
  /// Whether live `worker` hosts no replica of a Call with work (it stays: not leaving): one
  /// that joined while the value budget held every Call back had nothing to be handed then,
  /// and is offered a share again (the coordinator asks every second).
  bool idleOfWork(uint32_t worker) const;
  /// A successor that will not start (its worker was lost, or it failed to start): it is
  /// retired, and the replica it was to replace stays (no longer handed over).
  void abandonSuccessor(uint32_t successor, uint32_t leaving);

  /// Automatic replicas: one more replica of `call`, without a worker until place().
  /// `number`: the successor of a moved replica keeps its number (kNoIndex: the lowest free).
  uint32_t addReplica(uint32_t call, uint32_t number = kNoIndex);
  /// Takes away an idle replica of `call` (none queued), from the busiest worker; the worker it
  /// leaves (to release it), or nullopt when every replica is busy or it is the last one.
  std::optional<Move> retireReplica(uint32_t call);
  /// Takes `replica` out of service: no new batch goes to it, and once its queue is empty it is
  /// retired; the Move to release it when that is now.
  std::optional<Move> drain(uint32_t replica);
  /// A draining replica whose queue emptied is retired now: the Move to release it.
  std::optional<Move> retireIfDrained(uint32_t replica);
  /// Replicas of `call` not taken away and not draining.
  uint32_t replicasOf(uint32_t call) const;
  /// A batch of `call` went to `worker`; its inputs were kept mostly on `inputsOn` (kNoIndex:
  /// none kept). One whose inputs were on a worker without a replica of its Call counts there:
  /// a new replica of it goes there first.
  void noteBatchSent(uint32_t call, uint32_t inputsOn, uint32_t worker);
  /// Where `call`'s inputs were kept, without a replica of it, for at least a fifth of its
  /// batches (and 4) since the last ask: that worker, those batches, and whether they were at
  /// least twice those whose inputs were kept where they ran (then moving a replica there helps;
  /// else the inputs are spread and only another replica would). The counts restart.
  /// Or (`feeds`) where batches of a Call it feeds ran, without a replica of it, and fetched
  /// their inputs from another worker (at least 4 since the last ask): a replica of it there
  /// would make them where they are read.
  struct LocalityWish {
    uint32_t worker;
    uint64_t batches;
    bool dominant;
    bool feeds;
  };
  std::optional<LocalityWish> takeLocalityWish(uint32_t call);
  /// Whether a replica of `call` lives on `worker`.
  bool hosts(uint32_t worker, uint32_t call) const;
  /// Live workers, their CPUs and GPUs, summed.
  double liveCpus() const;
  uint32_t liveGpus() const;
  /// The memory live workers offer replicas, summed; 0 when one of them did not say.
  uint64_t liveMemory() const;
  /// The memory of live workers' GPUs, summed; 0 when one with GPUs did not say.
  uint64_t liveGpuMemory() const;
  uint32_t liveWorkers() const;

  /// Batch `batch` was sent to `replica`: it queues there.
  void queue(uint32_t replica, uint64_t batch);
  /// Whether a batch of `call` could be sent now, and the replica it would go to (kNoIndex).
  bool canRun(uint32_t call, uint32_t depth) const { return pick(call, depth) != kNoIndex; }
  /// The replica of `call` with room (fewer than `depth` batches queued) and the fewest
  /// queued (then: on the worker with the fewest queued per CPU; then: sent a batch longest
  /// ago, so that one batch at a time takes turns between replicas and workers); one on
  /// `preferredWorker` when that has room (the batch's inputs are kept there),
  /// or when no other is idle (then it queues one past the depth rather than send the inputs
  /// across). Only replicas on workers `allowed` takes, when given.
  uint32_t pick(uint32_t call, uint32_t depth, uint32_t preferredWorker = kNoIndex,
                const std::function<bool(uint32_t worker)> &allowed = {}) const;

  Replica &replica(uint32_t r) { return replicas_[r]; }
  const Replica &replica(uint32_t r) const { return replicas_[r]; }
  size_t replicaCount() const { return replicas_.size(); }
  const std::vector<uint32_t> &replicasOn(uint32_t worker) const {
    return workers_[worker].replicas;
  }

private:
  /// Per Call, whether a batch is queued on one of its replicas (it has work).
  std::vector<bool> callsWithWork() const;
  /// Replicas on `worker` that stay (not draining, not handed over) of Calls with work.
  size_t workingReplicas(uint32_t worker, const std::vector<bool> &callHasWork) const;
  struct Worker {
    double cpus = 1;
    bool hasGpus = false;
    bool alive = true;
    std::vector<uint32_t> replicas;
    uint64_t memory = 0;
    uint64_t memoryPromised = 0;
    /// Its GPUs, and the `gpus` of the GPU replicas on it.
    uint32_t gpus = 0;
    double gpusPromised = 0;
    /// Its GPUs' memory (0: not said), and the `gpu_memory` of the GPU replicas on it.
    uint64_t gpuMemory = 0;
    uint64_t gpuMemoryPromised = 0;
    /// Its largest GPU's memory: a replica's `gpu_memory` must fit one device.
    uint64_t largestGpuMemory = 0;
  };
  double gpuShare(uint32_t replica) const;
  /// A GPU replica's `gpu_memory` on each device it uses, summed (0 for others).
  uint64_t gpuMemoryHint(uint32_t replica) const;
  /// Batches queued on `worker`'s replicas, per CPU.
  double queuedPerCpu(uint32_t worker) const;
  /// `worker` has a GPU's worth left for `replica` (a GPU Call).
  bool hasGpuRoomFor(uint32_t worker, uint32_t replica) const;
  void unassign(uint32_t replica);
  Move retire(uint32_t replica);
  uint64_t memoryHint(uint32_t replica) const;
  /// `worker` has room for `replica`'s memory hint.
  bool hasRoomFor(uint32_t worker, uint32_t replica) const;
  void assign(uint32_t replica, uint32_t worker);
  const plan::Plan &plan_;
  std::vector<Replica> replicas_;
  std::vector<std::vector<uint32_t>> replicasOfCall_;
  std::vector<Worker> workers_;
  /// Per Call: the Calls whose results it reads directly, and that only Calls read (their
  /// values may stay on the worker that made them): a replica prefers a worker that hosts one
  /// of theirs without one of its own, so that a render -> model chain starts side by side.
  std::vector<std::vector<uint32_t>> feeders_;
  /// Per Call: per worker without a replica of it, batches that found their inputs kept there
  /// (until one is placed there); and batches sent, and those, since the last locality ask.
  std::vector<std::map<uint32_t, uint64_t>> inputsOn_;
  struct SinceAsked {
    uint64_t batches = 0;
    /// Batches that ran where their inputs were kept.
    uint64_t local = 0;
    std::map<uint32_t, uint64_t> elsewhere;
    /// Per worker without a replica of this Call: batches of Calls it feeds that ran there and
    /// fetched their inputs from another worker.
    std::map<uint32_t, uint64_t> feeding;
  };
  std::vector<SinceAsked> sinceAsked_;
  /// Batches queued so far (Replica::lastQueued).
  uint64_t batchesQueued_ = 0;
};

} // namespace orch::runtime
