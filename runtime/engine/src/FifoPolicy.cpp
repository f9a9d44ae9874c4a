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

namespace {

class FifoPolicy : public DispatchPolicy {
public:
  const char *name() const override { return "fifo"; }
  std::unique_ptr<ReadyQueue> makeQueue(uint64_t) const override {
    return std::make_unique<FifoQueue>();
  }
};

} // namespace

std::unique_ptr<DispatchPolicy> makeFifoPolicy() { return std::make_unique<FifoPolicy>(); }

} // namespace orch::runtime
