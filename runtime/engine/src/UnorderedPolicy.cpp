// Unordered (the ablation): each grain is drawn at random from a Call's ready grains, and a
// batch mixes any parents.
#include "DispatchPolicy.h"

#include <random>

namespace orch::runtime {

namespace {

class UnorderedQueue : public ReadyQueue {
public:
  explicit UnorderedQueue(uint64_t seed) : random_(seed) {}

  void push(const QueuedGrain &grain) override {
    ++size_;
    pool_.push_back(grain);
  }

  const QueuedGrain *peek(LiveCheck isLive) override {
    while (!pool_.empty()) {
      std::uniform_int_distribution<size_t> pick(0, pool_.size() - 1);
      std::swap(pool_[pick(random_)], pool_.back());
      if (isLive(pool_.back()))
        return &pool_.back();
      pool_.pop_back();
      --size_;
    }
    return nullptr;
  }

  void pop(size_t limit, LiveCheck isLive, std::vector<QueuedGrain> &out) override {
    while (out.size() < limit && peek(isLive)) {
      out.push_back(pool_.back());
      pool_.pop_back();
      --size_;
    }
  }

  size_t bytes() const override { return size_ * sizeof(QueuedGrain); }

private:
  std::mt19937_64 random_;
  std::vector<QueuedGrain> pool_;
};

} // namespace

std::unique_ptr<DispatchPolicy> makeUnorderedPolicy() {
  return std::make_unique<QueuePolicy<UnorderedQueue>>("unordered");
}

} // namespace orch::runtime
