// Probe-first: FIFO across parents, except that each parent's first child goes ahead of
// everything queued, so that a parent that poisons itself on its first child suppresses its
// siblings before they run.
#include "FifoPolicy.h"

namespace orch::runtime {

namespace {

class ProbeFirstQueue : public FifoQueue {
public:
  void push(const QueuedGrain &grain) override {
    if (grain.firstChild)
      pushFront(grain);
    else
      FifoQueue::push(grain);
  }
};

} // namespace

std::unique_ptr<DispatchPolicy> makeProbeFirstPolicy() {
  return std::make_unique<QueuePolicy<ProbeFirstQueue>>("probe-first");
}

} // namespace orch::runtime
