// Where each Call replica lives in a distributed run: the coordinator's placement rules without
// sockets or clocks, so that they are unit tested. Replicas go to the live worker with the
// fewest replicas per CPU it offers; GPU Calls prefer workers with GPUs and Calls that require a
// GPU wait for one; a Call's `memory` (per replica) prefers workers with that much memory left
// of what they offer (a hint: when none has, the rules above decide); a newcomer takes idle
// replicas from the busiest workers; batches go to the replica of their Call with the fewest in
// flight, up to `depth` each.
#pragma once

#include "orch/plan/Plan.h"
#include "orch/runtime/engine/EngineTypes.h"

#include <cstdint>
#include <deque>
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
  /// `memoryBytes`: what it offers replicas (0: not said, any hint fits).
  uint32_t addWorker(double cpus, bool hasGpus, uint64_t memoryBytes = 0);
  /// The `memory` hints of the replicas on `worker`, summed.
  uint64_t memoryPromised(uint32_t worker) const { return workers_[worker].memoryPromised; }
  /// The worker is gone: its replicas have no worker and nothing queued.
  void removeWorker(uint32_t worker);

  /// Puts every replica without a worker on a live worker; the moves made. A replica of a Call
  /// that requires a GPU stays unplaced while no live worker has one (`waitingForGpu` is set to
  /// such a Call).
  std::vector<Move> place(uint32_t *waitingForGpu = nullptr);
  /// Moves idle replicas from the busiest workers to `newcomer` until the load is even.
  std::vector<Move> rebalance(uint32_t newcomer);

  /// Whether a batch of `call` could be sent now, and the replica it would go to (kNoIndex).
  bool canRun(uint32_t call, uint32_t depth) const { return pick(call, depth) != kNoIndex; }
  /// The replica of `call` with room (fewer than `depth` batches queued) and the fewest
  /// queued; one on `preferredWorker` when that has room (the batch's inputs are kept there).
  uint32_t pick(uint32_t call, uint32_t depth, uint32_t preferredWorker = kNoIndex) const;

  Replica &replica(uint32_t r) { return replicas_[r]; }
  const Replica &replica(uint32_t r) const { return replicas_[r]; }
  size_t replicaCount() const { return replicas_.size(); }
  const std::vector<uint32_t> &replicasOn(uint32_t worker) const {
    return workers_[worker].replicas;
  }

private:
  struct Worker {
    double cpus = 1;
    bool hasGpus = false;
    bool alive = true;
    std::vector<uint32_t> replicas;
    uint64_t memory = 0;
    uint64_t memoryPromised = 0;
  };
  uint64_t memoryHint(uint32_t replica) const;
  /// `worker` has room for `replica`'s memory hint.
  bool hasRoomFor(uint32_t worker, uint32_t replica) const;
  void assign(uint32_t replica, uint32_t worker);
  const plan::Plan &plan_;
  std::vector<Replica> replicas_;
  std::vector<std::vector<uint32_t>> replicasOfCall_;
  std::vector<Worker> workers_;
};

} // namespace orch::runtime
