// The rules of automatic replicas (see ReplicaScaler.h).
#include "orch/runtime/execution/ReplicaScaler.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace orch::runtime {
namespace {

constexpr double kWaitingShare = 0.5;
constexpr double kBusyShare = 0.75;
constexpr double kGiveAwayAfterSeconds = 5;
constexpr double kMoveAfterSeconds = 2;
/// The bottleneck grows when this share of its `cpus` is idle: a saturated Call given more
/// concurrency takes the idle part of a core, and the operating system shares the rest.
constexpr double kIdleToGrow = 0.25;
/// A replica for locality alone needs half a core idle: it must not crowd the bottleneck.
constexpr double kIdleForLocality = 0.5;

std::string percent(double share) { return std::to_string(int(std::lround(100 * share))) + " %"; }

std::string oneDecimal(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", value);
  return text;
}

std::string replicasText(uint32_t count) {
  return std::to_string(count) + (count == 1 ? " replica" : " replicas");
}

} // namespace

ReplicaScaler::ReplicaScaler(std::vector<ReplicaScalerCall> calls)
    : calls_(std::move(calls)), state_(calls_.size()) {}

uint32_t ReplicaScaler::mostReplicas(uint32_t c, const ReplicaCapacity &capacity) const {
  const ReplicaScalerCall &call = calls_[c];
  double most = std::floor(capacity.cpus / std::max(call.cpus, 1e-9) + 1e-9);
  if (call.gpus > 0 && capacity.gpus > 0)
    most = std::min(most, std::floor(capacity.gpus / call.gpus + 1e-9));
  // Memory (and GPU memory) the other Calls' replicas were promised bounds this one's.
  auto byMemory = [&](uint64_t ReplicaScalerCall::*need, uint64_t capacityBytes) {
    if (call.*need == 0 || capacityBytes == 0)
      return;
    double promised = 0;
    for (uint32_t other = 0; other < calls_.size(); ++other)
      if (other != c)
        promised += double(calls_[other].replicas) * double(calls_[other].*need);
    most = std::min(most, std::floor((double(capacityBytes) - promised) / double(call.*need)));
  };
  byMemory(&ReplicaScalerCall::memoryBytes, capacity.memoryBytes);
  byMemory(&ReplicaScalerCall::gpuMemoryBytes, capacity.gpuMemoryBytes);
  return uint32_t(std::max(1.0, most));
}

bool ReplicaScaler::settledAfterGrowth(uint32_t c, double now) const {
  return now - state_[c].lastChange >=
         std::max(kWindowSeconds, 2 * calls_[c].startupSeconds) - 1e-9;
}

bool ReplicaScaler::mayGiveAway(uint32_t c, double now) const {
  return now - state_[c].lastChange >=
         std::max(kGiveAwayAfterSeconds, 10 * calls_[c].startupSeconds) - 1e-9;
}

bool ReplicaScaler::worthStarting(uint32_t c, const CallActivity &activity) const {
  const ReplicaScalerCall &call = calls_[c];
  if (call.startupSeconds <= 0)
    return true;
  if (activity.grainsDone == 0)
    return false;
  // Seconds of work per grain at the speed of the window, shared by its replicas.
  const double perGrain = activity.runningSeconds / double(activity.grainsDone);
  return double(activity.pendingGrains) * perGrain / call.replicas >= 2 * call.startupSeconds;
}

bool ReplicaScaler::mayMove(uint32_t c, double now) const {
  return now - state_[c].lastChange >=
         std::max(kMoveAfterSeconds, 4 * calls_[c].startupSeconds) - 1e-9;
}

std::optional<uint32_t> ReplicaScaler::donor(uint32_t bottleneck, double now, double windowSeconds,
                                             const std::vector<CallActivity> &activity) const {
  std::optional<uint32_t> best;
  double mostIdle = 0;
  for (uint32_t c = 0; c < calls_.size(); ++c) {
    const ReplicaScalerCall &call = calls_[c];
    if (c == bottleneck || !call.automatic || call.replicas < 2 || !mayGiveAway(c, now))
      continue;
    const double idle = call.replicas - activity[c].runningSeconds / windowSeconds;
    if (idle >= 1 && idle > mostIdle) {
      mostIdle = idle;
      best = c;
    }
  }
  return best;
}

std::vector<ReplicaDecision> ReplicaScaler::decide(double now, double windowSeconds,
                                                   const std::vector<CallActivity> &activity,
                                                   const ReplicaCapacity &capacity) {
  std::vector<ReplicaDecision> decisions;
  if (windowSeconds <= 0 || activity.size() != calls_.size())
    return decisions;
  double busyCpus = 0;
  for (uint32_t c = 0; c < calls_.size(); ++c)
    busyCpus += activity[c].runningSeconds / windowSeconds * calls_[c].cpus;
  const double idleCpus = capacity.cpus - busyCpus;

  std::optional<uint32_t> bottleneck;
  for (uint32_t c = 0; c < calls_.size(); ++c) {
    const ReplicaScalerCall &call = calls_[c];
    const double waiting = activity[c].waitingSeconds / windowSeconds;
    const double busy = activity[c].runningSeconds / windowSeconds;
    if (!call.automatic || waiting < kWaitingShare || busy < kBusyShare * call.replicas ||
        call.replicas >= mostReplicas(c, capacity) || !settledAfterGrowth(c, now) ||
        !worthStarting(c, activity[c]))
      continue;
    if (!bottleneck || waiting > activity[*bottleneck].waitingSeconds / windowSeconds)
      bottleneck = c;
  }
  if (bottleneck) {
    const uint32_t c = *bottleneck;
    const ReplicaScalerCall &call = calls_[c];
    std::string why = "busy " +
                      percent(activity[c].runningSeconds / windowSeconds / call.replicas) + " of " +
                      replicasText(call.replicas) + ", input waiting " +
                      percent(activity[c].waitingSeconds / windowSeconds) + " of the time (" +
                      std::to_string(activity[c].readyGrains) + " grains ready)";
    if (idleCpus >= kIdleToGrow * call.cpus) {
      // As many as the idle cores hold (and its ready grains could use), within what the
      // capacity allows one Call; one with a start-up time at most doubles (the new ones must
      // prove busy before it loads more).
      uint64_t more = uint64_t(std::floor(idleCpus / call.cpus));
      more = std::min<uint64_t>(more, std::max<uint64_t>(1, activity[c].readyGrains));
      if (call.startupSeconds > 0)
        more = std::min<uint64_t>(more, call.replicas);
      more = std::max<uint64_t>(1, std::min<uint64_t>(more, mostReplicas(c, capacity)));
      decisions.push_back(
          ReplicaDecision{c, std::min(call.replicas + uint32_t(more), mostReplicas(c, capacity)),
                          why + "; " + oneDecimal(std::max(0.0, idleCpus)) + " of " +
                              oneDecimal(capacity.cpus) + " cores idle"});
      return decisions;
    }
    if (std::optional<uint32_t> from = donor(c, now, windowSeconds, activity)) {
      const ReplicaScalerCall &giver = calls_[*from];
      decisions.push_back(ReplicaDecision{
          *from, giver.replicas - 1,
          "a replica for '" + call.name + "', the bottleneck: busy " +
              percent(activity[*from].runningSeconds / windowSeconds / giver.replicas) + " of " +
              replicasText(giver.replicas)});
      decisions.push_back(
          ReplicaDecision{c, call.replicas + 1, why + "; a replica from '" + giver.name + "'"});
      return decisions;
    }
  }
  for (uint32_t c = 0; c < calls_.size(); ++c) {
    const ReplicaScalerCall &call = calls_[c];
    if (!call.automatic || !activity[c].locality || !worthStarting(c, activity[c]))
      continue;
    const LocalityWanted &wanted = *activity[c].locality;
    if ((wanted.feeds || idleCpus >= kIdleForLocality * call.cpus) &&
        call.replicas < std::min(capacity.workers, mostReplicas(c, capacity)) &&
        settledAfterGrowth(c, now)) {
      decisions.push_back(ReplicaDecision{c, call.replicas + 1, wanted.why, false});
      return decisions;
    }
    if (wanted.dominant && mayMove(c, now)) {
      decisions.push_back(ReplicaDecision{c, call.replicas, wanted.why, true});
      return decisions;
    }
  }
  return decisions;
}

void ReplicaScaler::applied(uint32_t call, uint32_t replicas, double now) {
  if (calls_[call].replicas == replicas)
    return;
  calls_[call].replicas = replicas;
  state_[call].lastChange = now;
}

} // namespace orch::runtime
