// FIFO across parents (the default): grains leave in the order they became ready, and a batch
// takes the next `batch` of them whatever their parents.
#include "FifoPolicy.h"

namespace orch::runtime {

void FifoQueue::push(const QueuedGrain &grain) {
  ++size_;
  grains_.push_back(grain);
}

void FifoQueue::pushFront(const QueuedGrain &grain) {
  ++size_;
  grains_.push_front(grain);
}

const QueuedGrain *FifoQueue::peek(LiveCheck isLive) {
  while (!grains_.empty() && !isLive(grains_.front())) {
    grains_.pop_front();
    --size_;
  }
  return grains_.empty() ? nullptr : &grains_.front();
}

void FifoQueue::pop(size_t limit, LiveCheck isLive, std::vector<QueuedGrain> &out) {
  while (out.size() < limit && peek(isLive)) {
    out.push_back(grains_.front());
    grains_.pop_front();
    --size_;
  }
}

size_t FifoQueue::bytes() const { return size_ * sizeof(QueuedGrain); }

std::unique_ptr<DispatchPolicy> makeFifoPolicy() {
  return std::make_unique<QueuePolicy<FifoQueue>>("fifo");
}

} // namespace orch::runtime
