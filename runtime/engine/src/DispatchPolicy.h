// Dispatch policies: in which order a Call's ready grains leave its queue, which grains one
// batch may mix, and which Call's batch goes first. One implementation per file:
// FifoPolicy.cpp (FIFO across parents, the default), UnorderedPolicy.cpp (a random pick, the
// ablation), ParentBoundPolicy.cpp (one parent per batch, the baseline) and ProbeFirstPolicy.cpp
// (each parent's first child ahead of its siblings). A new policy is a new file and a line in
// makeDispatchPolicy. Queue entries go stale when a barrier seals a queued grain; the engine's
// liveness check drops them lazily instead of searching the queue.
#pragma once

#include "orch/runtime/engine/EngineTypes.h"

#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

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
  /// The grain belongs to its parent's first child (ordinal 0), for probe-first.
  bool firstChild = false;
  /// Calls batched by a per-row value: which of the Call's keys it has (KeyedReadyQueue).
  uint32_t keySlot = 0;
};

/// Whether a queued grain is still ready (a reference to the engine's check, not owned).
class LiveCheck {
public:
  template <typename F>
  requires(!std::is_same_v<std::decay_t<F>, LiveCheck>) LiveCheck(const F &check)
      : check_(&check), call_([](const void *erased, const QueuedGrain &grain) {
          return (*static_cast<const F *>(erased))(grain);
        }) {}
  bool operator()(const QueuedGrain &grain) const { return call_(check_, grain); }

private:
  const void *check_;
  bool (*call_)(const void *, const QueuedGrain &);
};

/// One Call's queue of fresh ready grains, in its policy's order.
class ReadyQueue {
public:
  virtual ~ReadyQueue() = default;
  virtual void push(const QueuedGrain &grain) = 0;
  /// The next live grain (after dropping stale entries ahead of it), or nullptr.
  virtual const QueuedGrain *peek(LiveCheck isLive) = 0;
  /// Moves up to `limit` live grains that may share one batch into `out`.
  virtual void pop(size_t limit, LiveCheck isLive, std::vector<QueuedGrain> &out) = 0;
  /// Entries held, stale ones included.
  size_t size() const { return size_; }
  virtual size_t bytes() const = 0;

protected:
  size_t size_ = 0;
};

/// A Call's dispatch lanes, in priority order (None: nothing to dispatch).
enum class Lane : uint8_t { Retry, Fresh, Deferred, None };

/// What the byte budget says of a Call's next batch, best first: it fits (or gives bytes back);
/// over the budget with nothing in flight, a Call not measured yet, then one that adds bytes;
/// held back.
enum class BudgetRank : uint8_t { Fits, Unmeasured, Grows, HeldBack };

/// A Call with a batch to dispatch, as the policy compares them.
struct CallCandidate {
  CallId call;
  BudgetRank rank = BudgetRank::HeldBack;
  Lane lane = Lane::None;
  /// The admission index of the root of the grain (or pending batch) at its lane's front.
  uint64_t admission = UINT64_MAX;
};

class DispatchPolicy {
public:
  virtual ~DispatchPolicy() = default;
  /// "fifo", "unordered", "parent-bound", "probe-first".
  virtual const char *name() const = 0;
  /// A Call's queue (`seed` for policies that draw at random).
  virtual std::unique_ptr<ReadyQueue> makeQueue(uint64_t seed) const = 0;
  /// Whether `a`'s batch is dispatched before `b`'s. By default: what fits the byte budget
  /// first, then retries before fresh work before deferred recovery, then the oldest admission
  /// (the oldest source row finishes first), then the later Call in the program (a row's pages
  /// are consumed before more of them are made).
  virtual bool before(const CallCandidate &a, const CallCandidate &b) const;
};

/// A policy that chooses only its queue (a Queue, or a Queue(seed) when it draws at random) and
/// keeps the default order between Calls.
template <typename Queue> class QueuePolicy : public DispatchPolicy {
public:
  explicit QueuePolicy(const char *name) : name_(name) {}
  const char *name() const override { return name_; }
  std::unique_ptr<ReadyQueue> makeQueue(uint64_t seed) const override {
    if constexpr (std::is_constructible_v<Queue, uint64_t>)
      return std::make_unique<Queue>(seed);
    else
      return std::make_unique<Queue>();
  }

private:
  const char *name_;
};

std::unique_ptr<DispatchPolicy> makeFifoPolicy();
std::unique_ptr<DispatchPolicy> makeUnorderedPolicy();
std::unique_ptr<DispatchPolicy> makeParentBoundPolicy();
std::unique_ptr<DispatchPolicy> makeProbeFirstPolicy();

/// The policy `options` choose: parent-bound batching, else the unordered ready order, else
/// probe-first, else FIFO across parents.
std::unique_ptr<DispatchPolicy> makeDispatchPolicy(const EngineOptions &options);

} // namespace orch::runtime
