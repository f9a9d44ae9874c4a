// Who runs the engine's batches: worker threads in this process, or worker processes over
// ZeroMQ. The run loop (RunLoop.h) talks to the engine on one side and to an executor on the
// other, so every executor gets the same admission, dispatch, commit and output logic.
#pragma once

#include "orch/plan/Plan.h"
#include "orch/runtime/engine/EngineTypes.h"
#include "orch/runtime/execution/ReplicaScaler.h"

#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace orch::runtime {

using SteadyClock = std::chrono::steady_clock;

/// A worker that joined the run: its name, host, the name of the key it authenticated with
/// ("" without CURVE), when it joined and, if it was lost, when and why.
struct WorkerIdentity {
  std::string name;
  std::string host;
  std::string key;
  std::chrono::steady_clock::time_point joined;
  std::optional<std::chrono::steady_clock::time_point> lost;
  std::string lostReason;
};

struct ExecutorEvent {
  enum class Kind {
    /// A report came back (it may still be stale for the engine).
    Finished,
    /// The batch will never report: its worker was lost. The engine re-queues it.
    Lost,
    /// The batch began to run at `startedAt` (its Call's timeout counts from here, not from
    /// dispatch: a batch waiting behind another one on its replica is not running yet).
    Started,
  };
  Kind kind = Kind::Finished;
  uint32_t call = kNoIndex;
  BatchReport report;
  /// Lost and Started: the batch; Lost: why.
  uint64_t batchId = 0;
  std::string reason;
  /// Lost: its worker was stopped for another batch's timeout (it is not to blame).
  bool bystander = false;
  /// Lost: it ran alone (Batch::alone) on a worker whose process died of a signal: its
  /// operator's crash, narrowed down like one (BatchLoss::Crash).
  bool crash = false;
  SteadyClock::time_point startedAt;
  /// Finished: seconds spent inside the operator, and where ("thread 2", "local-1/replica 4").
  double seconds = 0;
  std::string place;
};

class BatchExecutor {
public:
  virtual ~BatchExecutor() = default;
  /// Prepares to run `plan`'s Calls, whose batches carry `inputLabels[call]`. A message when it
  /// cannot (no worker can ever start, a bad endpoint).
  virtual std::optional<std::string>
  start(const plan::Plan &plan, const std::vector<std::vector<std::string>> &inputLabels) = 0;
  /// Waits until the replicas that start before any row (declared operators' processes) are
  /// ready: at least one of each such Call. The first start failure, or a message when `stop`
  /// was set meanwhile; nullopt when the run may begin.
  virtual std::optional<std::string> awaitStarted(const std::atomic<bool> *stop) {
    (void)stop;
    return std::nullopt;
  }
  /// Whether a batch of `call` could be handed over right now.
  virtual bool canRun(uint32_t call) const = 0;
  /// How many batches of `call` it runs at once now (its replicas x their depth); 0: not said.
  /// The byte budget keeps room for the inputs of those a Call that gives bytes back may send.
  virtual uint32_t batchSlots(uint32_t call) const {
    (void)call;
    return 0;
  }
  /// Whether the inputs of `call`'s batches are copied while they run (sent to another process)
  /// rather than shared with the engine: then they count in the byte budget a second time.
  virtual bool copiesInputs(uint32_t call) const {
    (void)call;
    return true;
  }
  virtual void submit(Batch batch) = 0;
  /// Batches handed over and not yet finished or lost.
  virtual size_t inFlight() const = 0;
  /// Waits until something happened or `deadline` passed.
  virtual std::vector<ExecutorEvent> wait(SteadyClock::time_point deadline) = 0;
  /// The run loop is busy for long (writing a root's two million rows): what must not wait
  /// for it (a coordinator's heartbeats, the messages its workers send) is done now; what
  /// happened comes out of the next wait(). Cheap when called often.
  virtual void keepAlive() {}
  /// `batchId` ran past its Call's timeout: stop what runs it (its worker process is killed
  /// and replaced; a thread that cannot be killed is abandoned and replaced) so that the
  /// replica serves the next batch. The batch itself never reports; other batches stopped with
  /// it come back as Lost events.
  virtual void abandon(uint64_t batchId, const std::string &why) = 0;
  /// Where `batchId` runs now, as batch places read ("local-1/replica 0"); "" when unknown.
  virtual std::string placeOf(uint64_t batchId) const {
    (void)batchId;
    return {};
  }
  /// Shuts down (the run is over or interrupted); batches still running are abandoned.
  virtual void stop() = 0;
  /// Automatic replicas (ReplicaScaler.h). What replicas may use now.
  virtual ReplicaCapacity replicaCapacity() const { return {}; }
  /// From now on `call` runs `count` replicas: a new one starts on first use (where its inputs
  /// are kept, in a distributed run); one goes only while it is idle. The count it runs now,
  /// or nullopt from an executor that does not change replica counts.
  virtual std::optional<uint32_t> setReplicas(uint32_t call, uint32_t count) {
    (void)call;
    (void)count;
    return std::nullopt;
  }
  /// The replicas `call` has now (one that could not start is gone), or nullopt from an
  /// executor that does not change replica counts.
  virtual std::optional<uint32_t> replicaCount(uint32_t call) const {
    (void)call;
    return std::nullopt;
  }
  /// Why `call` should have a replica where its inputs are kept: the batches that fetched
  /// their inputs from another worker since the last ask (nullopt: none to speak of).
  virtual std::optional<LocalityWanted> localityWanted(uint32_t call) {
    (void)call;
    return std::nullopt;
  }
  /// Moves a replica of `call` to the worker its inputs were kept on (the last localityWanted):
  /// the new one is placed there and the old one drains once it is ready. False if it cannot.
  virtual bool moveReplicaToInputs(uint32_t call) {
    (void)call;
    return false;
  }
  /// Seconds an instance of `call` took to start (its process and model), when known.
  virtual double startupSeconds(uint32_t call) const {
    (void)call;
    return 0;
  }
  /// Counters and notes for the run's summary ("4 workers, 2 lost, 1 replaced").
  virtual std::string describe() const { return {}; }
  /// Named counts for the run's metrics ("bytes_through_coordinator": ...), none by default.
  virtual std::vector<std::pair<std::string, uint64_t>> counters() const { return {}; }
  /// The workers that joined, in the order they joined (none for in-process runs).
  virtual std::vector<WorkerIdentity> workers() const { return {}; }
};

} // namespace orch::runtime
