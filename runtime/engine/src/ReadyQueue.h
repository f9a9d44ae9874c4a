// One Call's queue of fresh ready grains, in one of the orders the engine's policies allow:
// FIFO across parents (the default), unordered (a random pick, the ablation), or parent-bound
// (a batch only takes grains of one parent, the baseline). Entries go stale when a barrier seals
// a queued grain; the caller's liveness check drops them lazily instead of searching the queue.
#pragma once

#include <cstdint>
#include <deque>
#include <random>
#include <unordered_map>
#include <vector>

#include "orch/runtime/engine/EngineTypes.h"

namespace orch::runtime {

struct QueuedGrain {
  NodeId node;
  EntityId entity;
  /// The grain's ready ticket when queued; a grain whose ticket has moved on is stale here.
  uint64_t ticket = 0;
  /// The admission index of the grain's root, for priority between Calls.
  uint64_t admission = 0;
  /// The grain's direct parent entity (none for a root), for parent-bound batching.
  EntityId parent;
};

class ReadyQueue {
public:
  ReadyQueue(ReadyOrder order, BatchingScope scope, uint64_t seed);

  void push(const QueuedGrain &grain);
  /// Ahead of everything queued (FIFO cross-parent order; elsewhere the same as push).
  void pushFront(const QueuedGrain &grain);

  /// The next live grain (after dropping stale entries at the front), or nullptr.
  template <typename IsLive> const QueuedGrain *peek(IsLive &&isLive);

  /// Moves up to `limit` live grains into `out`.
  template <typename IsLive> void pop(size_t limit, IsLive &&isLive, std::vector<QueuedGrain> &out);

  /// Entries held, stale ones included.
  size_t size() const { return size_; }
  size_t bytes() const;

private:
  ReadyOrder order_;
  BatchingScope scope_;
  std::mt19937_64 random_;
  size_t size_ = 0;
  // CrossParent + Fifo.
  std::deque<QueuedGrain> fifo_;
  // CrossParent + Unordered.
  std::vector<QueuedGrain> pool_;
  // ParentBound: parents in the order their first grain became ready.
  std::deque<EntityId> parents_;
  std::unordered_map<uint32_t, std::deque<QueuedGrain>> byParent_;
};

template <typename IsLive> const QueuedGrain *ReadyQueue::peek(IsLive &&isLive) {
  if (scope_ == BatchingScope::ParentBound) {
    while (!parents_.empty()) {
      std::deque<QueuedGrain> &grains = byParent_[parents_.front().index];
      while (!grains.empty() && !isLive(grains.front())) {
        grains.pop_front();
        --size_;
      }
      if (!grains.empty())
        return &grains.front();
      byParent_.erase(parents_.front().index);
      parents_.pop_front();
    }
    return nullptr;
  }
  if (order_ == ReadyOrder::Fifo) {
    while (!fifo_.empty() && !isLive(fifo_.front())) {
      fifo_.pop_front();
      --size_;
    }
    return fifo_.empty() ? nullptr : &fifo_.front();
  }
  while (!pool_.empty()) {
    std::uniform_int_distribution<size_t> pick(0, pool_.size() - 1);
    size_t index = pick(random_);
    std::swap(pool_[index], pool_.back());
    if (isLive(pool_.back()))
      return &pool_.back();
    pool_.pop_back();
    --size_;
  }
  return nullptr;
}

template <typename IsLive>
void ReadyQueue::pop(size_t limit, IsLive &&isLive, std::vector<QueuedGrain> &out) {
  if (scope_ == BatchingScope::ParentBound) {
    if (!peek(isLive))
      return;
    std::deque<QueuedGrain> &grains = byParent_[parents_.front().index];
    while (out.size() < limit && !grains.empty()) {
      if (isLive(grains.front()))
        out.push_back(grains.front());
      grains.pop_front();
      --size_;
    }
    if (grains.empty()) {
      byParent_.erase(parents_.front().index);
      parents_.pop_front();
    }
    return;
  }
  while (out.size() < limit) {
    const QueuedGrain *next = peek(isLive);
    if (!next)
      return;
    out.push_back(*next);
    if (order_ == ReadyOrder::Fifo)
      fifo_.pop_front();
    else
      pool_.pop_back();
    --size_;
  }
}

} // namespace orch::runtime
