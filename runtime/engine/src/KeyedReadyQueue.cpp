// Per-key ready queues for Calls batched by a per-row value (KeyedReadyQueue.h).
#include "KeyedReadyQueue.h"

namespace orch::runtime {

void KeyedReadyQueue::push(const QueuedGrain &grain) {
  while (byKey_.size() <= grain.keySlot)
    byKey_.push_back(makeQueue_());
  byKey_[grain.keySlot]->push(grain);
  ++size_;
}

ReadyQueue *KeyedReadyQueue::oldestFront(LiveCheck isLive) {
  ReadyQueue *oldest = nullptr;
  uint64_t oldestTicket = UINT64_MAX;
  for (const std::unique_ptr<ReadyQueue> &queue : byKey_)
    if (const QueuedGrain *front = queue->peek(isLive); front && front->ticket < oldestTicket) {
      oldest = queue.get();
      oldestTicket = front->ticket;
    }
  // Peeking dropped stale entries of the key queues.
  recount();
  return oldest;
}

const QueuedGrain *KeyedReadyQueue::peek(LiveCheck isLive) {
  ReadyQueue *oldest = oldestFront(isLive);
  return oldest ? oldest->peek(isLive) : nullptr;
}

void KeyedReadyQueue::pop(size_t limit, LiveCheck isLive, std::vector<QueuedGrain> &out) {
  if (ReadyQueue *oldest = oldestFront(isLive))
    oldest->pop(limit, isLive, out);
  recount();
}

size_t KeyedReadyQueue::bytes() const {
  size_t total = byKey_.capacity() * sizeof(std::unique_ptr<ReadyQueue>);
  for (const std::unique_ptr<ReadyQueue> &queue : byKey_)
    total += queue->bytes();
  return total;
}

void KeyedReadyQueue::recount() {
  size_ = 0;
  for (const std::unique_ptr<ReadyQueue> &queue : byKey_)
    size_ += queue->size();
}

} // namespace orch::runtime
