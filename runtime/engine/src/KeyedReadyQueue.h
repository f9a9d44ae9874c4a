// A Call's ready queue when some of its inputs are per-row values of parameters the operator
// batches by (PlanCall::batchKeys, `ocr.tesseract(image, lang: rows.lang)`): one queue of the
// policy's kind per distinct key, so that a batch holds grains of one key. Between keys, the
// batch comes from the queue whose next grain became ready first.
#pragma once

#include "DispatchPolicy.h"

#include <functional>
#include <memory>
#include <vector>

namespace orch::runtime {

class KeyedReadyQueue : public ReadyQueue {
public:
  /// `makeQueue` makes one key's queue (the policy's kind).
  explicit KeyedReadyQueue(std::function<std::unique_ptr<ReadyQueue>()> makeQueue)
      : makeQueue_(std::move(makeQueue)) {}

  /// Queues `grain` with the grains of its key (QueuedGrain::keySlot).
  void push(const QueuedGrain &grain) override;
  const QueuedGrain *peek(LiveCheck isLive) override;
  /// Up to `limit` grains, all of one key.
  void pop(size_t limit, LiveCheck isLive, std::vector<QueuedGrain> &out) override;
  size_t bytes() const override;

private:
  /// The key queue whose next live grain became ready first, or null.
  ReadyQueue *oldestFront(LiveCheck isLive);
  void recount();

  std::function<std::unique_ptr<ReadyQueue>()> makeQueue_;
  std::vector<std::unique_ptr<ReadyQueue>> byKey_;
};

} // namespace orch::runtime
