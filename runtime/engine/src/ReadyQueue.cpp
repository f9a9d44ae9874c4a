// ReadyQueue: insertion and accounting; the liveness-aware pops are templates in the header.
#include "ReadyQueue.h"

namespace orch::runtime {

ReadyQueue::ReadyQueue(ReadyOrder order, BatchingScope scope, uint64_t seed)
    : order_(order), scope_(scope), random_(seed) {}

void ReadyQueue::push(const QueuedGrain &grain) {
  ++size_;
  if (scope_ == BatchingScope::ParentBound) {
    std::deque<QueuedGrain> &grains = byParent_[grain.parent.index];
    if (grains.empty())
      parents_.push_back(grain.parent);
    grains.push_back(grain);
    return;
  }
  if (order_ == ReadyOrder::Fifo)
    fifo_.push_back(grain);
  else
    pool_.push_back(grain);
}

void ReadyQueue::pushFront(const QueuedGrain &grain) {
  if (scope_ != BatchingScope::CrossParent || order_ != ReadyOrder::Fifo) {
    push(grain);
    return;
  }
  ++size_;
  fifo_.push_front(grain);
}

size_t ReadyQueue::bytes() const {
  return size_ * sizeof(QueuedGrain) + parents_.size() * sizeof(EntityId) +
         byParent_.size() * (sizeof(uint32_t) + sizeof(std::deque<QueuedGrain>));
}

} // namespace orch::runtime
