// The FIFO queue, shared by the FIFO policy and probe-first (which puts first children ahead).
#pragma once

#include "DispatchPolicy.h"

#include <deque>

namespace orch::runtime {

class FifoQueue : public ReadyQueue {
public:
  void push(const QueuedGrain &grain) override;
  /// Ahead of everything queued.
  void pushFront(const QueuedGrain &grain);
  const QueuedGrain *peek(LiveCheck isLive) override;
  void pop(size_t limit, LiveCheck isLive, std::vector<QueuedGrain> &out) override;
  size_t bytes() const override;

private:
  std::deque<QueuedGrain> grains_;
};

} // namespace orch::runtime
