// Parent-bound (the baseline): a batch takes grains of one parent only; parents are served in
// the order their first grain became ready.
#include "DispatchPolicy.h"

#include <deque>
#include <unordered_map>

namespace orch::runtime {

namespace {

class ParentBoundQueue : public ReadyQueue {
public:
  void push(const QueuedGrain &grain) override {
    ++size_;
    std::deque<QueuedGrain> &grains = byParent_[grain.parent.index];
    if (grains.empty())
      parents_.push_back(grain.parent);
    grains.push_back(grain);
  }

  const QueuedGrain *peek(LiveCheck isLive) override {
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

  void pop(size_t limit, LiveCheck isLive, std::vector<QueuedGrain> &out) override {
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
  }

  size_t bytes() const override {
    return size_ * sizeof(QueuedGrain) + parents_.size() * sizeof(EntityId) +
           byParent_.size() * (sizeof(uint32_t) + sizeof(std::deque<QueuedGrain>));
  }

private:
  // Parents in the order their first grain became ready.
  std::deque<EntityId> parents_;
  std::unordered_map<uint32_t, std::deque<QueuedGrain>> byParent_;
};

} // namespace

std::unique_ptr<DispatchPolicy> makeParentBoundPolicy() {
  return std::make_unique<QueuePolicy<ParentBoundQueue>>("parent-bound");
}

} // namespace orch::runtime
