// Automatic replicas: how many operator instances each Call without `replicas` runs, decided
// from where the time goes, without sockets or clocks so that the rules are unit tested.
//
// Every window (half a second) the run loop reports, per Call, how many of its batches ran on
// average (its busy replicas) and how long ready input waited for a free replica. Then:
//  - the bottleneck is the automatic Call whose input waited longest, at least half the
//    window, while its replicas were busy (three quarters of the time or more);
//  - it grows when cores are idle (the capacity, less every Call's busy replicas, is at least a
//    quarter of its `cpus`): by as many replicas as the idle cores hold (at least one, at most
//    its ready grains), up to the capacity's cores (and GPUs) per replica; a Call with a
//    start-up time (a model) at most doubles each time; a Call with `memory` grows only while
//    the replicas' `memory`, summed over all Calls, fits what the workers offer;
//  - otherwise it takes one from another automatic Call that left a whole replica idle;
//  - a Call that asked the executor for locality (its inputs are kept on a worker without a
//    replica of it) gets one there while half a core is idle, up to one per worker; without
//    idle cores, where most of its inputs were kept there, one of its replicas moves there
//    instead (the new one takes over once started); a Call whose consumers ran on a worker
//    without a replica of it (and fetched their inputs) gets one there, idle cores or not (its
//    work is shared, not added);
//  - a Call with a start-up time (a model load) grows or moves only while its backlog (its
//    pending grains at its speed in the window) takes at least twice that time;
//  - hysteresis: a Call grows again only once its last new replica had time to start (a window,
//    and twice its start-up time), moves one only when its last change is older than two
//    seconds and four times its start-up time, and gives one away only when its last change is
//    older than five seconds and ten times its start-up time (a model load is not paid back and
//    forth).
// `replicas: N` pins a Call: it is never changed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace orch::runtime {

/// What replicas may use at once: cores (threads, or the live workers' CPUs) and GPUs; and the
/// workers there are (one replica of a Call per worker is what locality may ask for).
struct ReplicaCapacity {
  double cpus = 1;
  double gpus = 0;
  uint32_t workers = 1;
  /// Memory replicas may be promised (Calls' `memory`), 0 when not known.
  uint64_t memoryBytes = 0;
  /// GPU memory GPU replicas may be promised (Calls' `gpu_memory`), 0 when not known.
  uint64_t gpuMemoryBytes = 0;
};

/// Why a Call should have a replica where its inputs are kept, and whether those were most of
/// its inputs (then moving one of its replicas there helps; else only another replica would).
struct LocalityWanted {
  std::string why;
  bool dominant = false;
  /// Rather: the Calls it feeds ran where it has no replica, and fetched their inputs. A
  /// replica of it there does no more work in all (its work is shared), so it needs no idle
  /// core.
  bool feeds = false;
};

/// One Call over one window.
struct CallActivity {
  /// Seconds of its batches running, summed (2 replicas busy for the whole window: 2 windows).
  double runningSeconds = 0;
  /// Seconds during which ready input waited for a free replica (not for the byte budget).
  double waitingSeconds = 0;
  /// Grains ready now.
  uint64_t readyGrains = 0;
  /// Grains of it that exist and are not done (waiting for inputs, ready or running), and
  /// those it finished in the window: with runningSeconds, how long its backlog takes.
  uint64_t pendingGrains = 0;
  uint64_t grainsDone = 0;
  /// The executor's reason to put a replica where this Call's inputs are kept.
  std::optional<LocalityWanted> locality;
};

struct ReplicaScalerCall {
  std::string name;
  bool automatic = true;
  uint32_t replicas = 1;
  double cpus = 1;
  double gpus = 0;
  /// Seconds an instance takes to start (a model load), when known.
  double startupSeconds = 0;
  /// Its `memory` per replica (0: none said).
  uint64_t memoryBytes = 0;
  /// Its `gpu_memory` per replica, on every device it uses (0: none said, or a CPU Call).
  uint64_t gpuMemoryBytes = 0;
};

struct ReplicaDecision {
  uint32_t call = 0;
  uint32_t replicas = 0;
  std::string why;
  /// Not a new count: one replica moves to where the Call's inputs are kept.
  bool move = false;
};

class ReplicaScaler {
public:
  static constexpr double kWindowSeconds = 0.5;

  explicit ReplicaScaler(std::vector<ReplicaScalerCall> calls);

  /// The changes to ask for after a window of `windowSeconds` ending at `now` (seconds since the
  /// run began): at most one Call grows, and one may give a replica for it. The caller applies
  /// them (applied()) in order; a shrink the executor refuses cancels the growth paired with
  /// it (it comes right after it).
  std::vector<ReplicaDecision> decide(double now, double windowSeconds,
                                      const std::vector<CallActivity> &activity,
                                      const ReplicaCapacity &capacity);
  /// The executor now runs `replicas` of `call` (what it did with a decision).
  void applied(uint32_t call, uint32_t replicas, double now);
  /// The executor moved a replica of `call` (a move decision).
  void moved(uint32_t call, double now) { state_[call].lastChange = now; }
  void setStartupSeconds(uint32_t call, double seconds) { calls_[call].startupSeconds = seconds; }

  const ReplicaScalerCall &call(uint32_t c) const { return calls_[c]; }

private:
  struct State {
    double lastChange = -1e9;
  };
  uint32_t mostReplicas(uint32_t c, const ReplicaCapacity &capacity) const;
  bool settledAfterGrowth(uint32_t c, double now) const;
  bool mayGiveAway(uint32_t c, double now) const;
  bool mayMove(uint32_t c, double now) const;
  /// Its backlog outlasts twice its start-up time (always, without a start-up time).
  bool worthStarting(uint32_t c, const CallActivity &activity) const;
  std::optional<uint32_t> donor(uint32_t bottleneck, double now, double windowSeconds,
                                const std::vector<CallActivity> &activity) const;
  std::vector<ReplicaScalerCall> calls_;
  std::vector<State> state_;
};

} // namespace orch::runtime
