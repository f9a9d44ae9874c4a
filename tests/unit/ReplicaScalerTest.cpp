// The rules of automatic replicas without a run: the bottleneck grows into idle cores (a model
// at most doubling, never past the capacity), takes a replica from a Call that leaves one idle when
// no core is, pinned Calls never change, hysteresis keeps a replica that just changed, locality
// adds one replica per worker while cores are idle and moves one where none are, and GPUs
// bound GPU Calls.
#include "orch/runtime/execution/ReplicaScaler.h"

#include <gtest/gtest.h>

namespace orch::runtime {
namespace {

ReplicaScalerCall automaticCall(std::string name, uint32_t replicas = 1) {
  ReplicaScalerCall call;
  call.name = std::move(name);
  call.replicas = replicas;
  return call;
}

/// One Call's window of one second: `busy` replicas running on average, input waiting
/// `waiting` of the time.
CallActivity window(double busy, double waiting, uint64_t ready = 10) {
  CallActivity activity;
  activity.runningSeconds = busy;
  activity.waitingSeconds = waiting;
  activity.readyGrains = ready;
  // Minutes of work left: a start-up time never stands in the way unless a test says so.
  activity.grainsDone = 10;
  activity.pendingGrains = 10000;
  return activity;
}

TEST(ReplicaScalerTest, TheBottleneckGrowsIntoIdleCoresAndAModelAtMostDoubles) {
  ReplicaScaler scaler({automaticCall("render"), automaticCall("score")});
  const ReplicaCapacity cores{8, 0, 1};
  std::vector<ReplicaDecision> decided =
      scaler.decide(1, 1, {window(1, 1, 40), window(0.2, 0)}, cores);
  ASSERT_EQ(decided.size(), 1u);
  EXPECT_EQ(decided[0].call, 0u);
  EXPECT_EQ(decided[0].replicas, 7u) << "6.8 idle cores hold 6 more";
  EXPECT_NE(decided[0].why.find("busy 100 % of 1 replica"), std::string::npos) << decided[0].why;
  EXPECT_NE(decided[0].why.find("40 grains ready"), std::string::npos) << decided[0].why;
  EXPECT_NE(decided[0].why.find("6.8 of 8.0 cores idle"), std::string::npos) << decided[0].why;
  scaler.applied(0, 7, 1);
  decided = scaler.decide(2, 1, {window(7, 1), window(0.8, 0)}, cores);
  EXPECT_TRUE(decided.empty()) << "0.2 cores idle, and no Call leaves a replica idle";
  // No more replicas than ready grains could use.
  ReplicaScaler few({automaticCall("render")});
  decided = few.decide(1, 1, {window(1, 1, 2)}, cores);
  ASSERT_EQ(decided.size(), 1u);
  EXPECT_EQ(decided[0].replicas, 3u);

  // A model (a start-up time) at most doubles: its new replicas prove busy before it loads more.
  ReplicaScalerCall model = automaticCall("model");
  model.startupSeconds = 0.2;
  ReplicaScaler models({model});
  decided = models.decide(1, 1, {window(1, 1)}, cores);
  ASSERT_EQ(decided.size(), 1u);
  EXPECT_EQ(decided[0].replicas, 2u);
  models.applied(0, 2, 1);
  decided = models.decide(2, 1, {window(2, 1)}, cores);
  ASSERT_EQ(decided.size(), 1u);
  EXPECT_EQ(decided[0].replicas, 4u);
  models.applied(0, 4, 2);
  decided = models.decide(3, 1, {window(4, 1)}, cores);
  ASSERT_EQ(decided.size(), 1u);
  EXPECT_EQ(decided[0].replicas, 8u) << "4 idle cores, and 8 is the most";
}

TEST(ReplicaScalerTest, NothingGrowsWithoutWaitingInputOrWithBusyCores) {
  ReplicaScaler scaler({automaticCall("a"), automaticCall("b")});
  EXPECT_TRUE(scaler.decide(1, 1, {window(1, 0.4), window(0.1, 0)}, {4, 0, 1}).empty())
      << "input waited less than half the window";
  EXPECT_TRUE(scaler.decide(2, 1, {window(0.5, 1), window(0.1, 0)}, {4, 0, 1}).empty())
      << "its one replica was busy half the time: something else holds it back";
  EXPECT_TRUE(scaler.decide(3, 1, {window(1, 1), window(1, 1)}, {2, 0, 1}).empty())
      << "both cores busy, and neither can give a replica";
}

TEST(ReplicaScalerTest, APinnedCallNeverChanges) {
  ReplicaScalerCall pinned = automaticCall("pinned", 2);
  pinned.automatic = false;
  ReplicaScaler scaler({pinned, automaticCall("auto", 3)});
  // The pinned Call is the bottleneck, cores are idle: it still keeps its 2.
  EXPECT_TRUE(scaler.decide(10, 1, {window(2, 1), window(0.1, 0)}, {8, 0, 1}).empty());
}

TEST(ReplicaScalerTest, WithNoIdleCoreTheBottleneckTakesAReplicaAnotherCallLeavesIdle) {
  ReplicaScaler scaler({automaticCall("render"), automaticCall("score", 3)});
  // 2 cores, both busy: render saturated on 1, score 1 busy of 3 (2 idle replicas).
  std::vector<ReplicaDecision> decided =
      scaler.decide(10, 1, {window(1, 1), window(1, 0)}, {2, 0, 1});
  ASSERT_EQ(decided.size(), 2u);
  EXPECT_EQ(decided[0].call, 1u);
  EXPECT_EQ(decided[0].replicas, 2u);
  EXPECT_NE(decided[0].why.find("a replica for 'render'"), std::string::npos) << decided[0].why;
  EXPECT_EQ(decided[1].call, 0u);
  EXPECT_EQ(decided[1].replicas, 2u);
  EXPECT_NE(decided[1].why.find("a replica from 'score'"), std::string::npos) << decided[1].why;
}

TEST(ReplicaScalerTest, HysteresisKeepsAReplicaThatJustChanged) {
  ReplicaScalerCall model = automaticCall("model", 2);
  model.startupSeconds = 2; // a model load: it gives a replica away only after 20 s
  ReplicaScaler scaler({automaticCall("render"), model});
  scaler.applied(1, 3, 0);
  const std::vector<CallActivity> activity = {window(1, 1), window(1, 0)};
  EXPECT_TRUE(scaler.decide(5, 1, activity, {2, 0, 1}).empty()) << "5 s < 10 x its start-up";
  EXPECT_TRUE(scaler.decide(19, 1, activity, {2, 0, 1}).empty());
  EXPECT_EQ(scaler.decide(20, 1, activity, {2, 0, 1}).size(), 2u);

  // A Call that just grew waits for its new replicas to start before it grows again.
  ReplicaScalerCall slow = automaticCall("slow");
  slow.startupSeconds = 3;
  ReplicaScaler growing({slow});
  growing.applied(0, 2, 10);
  EXPECT_TRUE(growing.decide(15, 1, {window(2, 1)}, {8, 0, 1}).empty()) << "6 s to settle";
  EXPECT_EQ(growing.decide(16, 1, {window(2, 1)}, {8, 0, 1}).size(), 1u);
}

TEST(ReplicaScalerTest, LocalityAddsAReplicaWhereCoresAreIdleAndMovesOneWhereNot) {
  ReplicaScaler scaler({automaticCall("render", 2), automaticCall("score")});
  CallActivity wanting = window(0.4, 0);
  wanting.locality = LocalityWanted{"30 batches found their inputs kept on worker local-1", true};
  // 2 of 4 cores idle: a second replica, there.
  std::vector<ReplicaDecision> decided = scaler.decide(1, 1, {window(1.5, 0), wanting}, {4, 0, 2});
  ASSERT_EQ(decided.size(), 1u);
  EXPECT_EQ(decided[0].call, 1u);
  EXPECT_EQ(decided[0].replicas, 2u);
  EXPECT_FALSE(decided[0].move);
  EXPECT_EQ(decided[0].why, wanting.locality->why);
  scaler.applied(1, 2, 1);
  // One replica per worker is what locality adds; after that (and 2 s) one moves.
  EXPECT_TRUE(scaler.decide(2, 1, {window(1.5, 0), wanting}, {4, 0, 2}).empty())
      << "too soon after the last change";
  decided = scaler.decide(3, 1, {window(1.5, 0), wanting}, {4, 0, 2});
  ASSERT_EQ(decided.size(), 1u);
  EXPECT_TRUE(decided[0].move);
  EXPECT_EQ(decided[0].replicas, 2u);

  // No core idle (0.1 of 2): its one replica moves to its inputs rather than crowd the cores.
  ReplicaScaler busy({automaticCall("render"), automaticCall("score")});
  CallActivity busyAndWanting = window(0.9, 0);
  busyAndWanting.locality = wanting.locality;
  decided = busy.decide(10, 1, {window(1, 0), busyAndWanting}, {2, 0, 2});
  ASSERT_EQ(decided.size(), 1u);
  EXPECT_TRUE(decided[0].move);
  EXPECT_EQ(decided[0].replicas, 1u);
  busy.moved(1, 10);
  EXPECT_TRUE(busy.decide(11, 1, {window(1, 0), busyAndWanting}, {2, 0, 2}).empty())
      << "a move waits 2 s (and 4 x the start-up) after the last change";
  busyAndWanting.locality->dominant = false;
  EXPECT_TRUE(busy.decide(20, 1, {window(1, 0), busyAndWanting}, {2, 0, 2}).empty())
      << "most inputs were where it ran: a move would not help";
}

TEST(ReplicaScalerTest, AModelGrowsOnlyWhileItsBacklogOutlastsItsStart) {
  ReplicaScalerCall model = automaticCall("model");
  model.startupSeconds = 2;
  ReplicaScaler scaler({model});
  // 20 grains done in the window at 50 ms each: 30 pending take 1.5 s < 2 x 2 s.
  CallActivity ending = window(1, 1, 30);
  ending.grainsDone = 20;
  ending.pendingGrains = 30;
  EXPECT_TRUE(scaler.decide(10, 1, {ending}, {4, 0, 1}).empty()) << "done before it loads";
  CallActivity lasting = ending;
  lasting.pendingGrains = 100; // 5 s of work
  EXPECT_EQ(scaler.decide(11, 1, {lasting}, {4, 0, 1}).size(), 1u);
}

TEST(ReplicaScalerTest, WhatTheWorkersOfferBoundsACallWithMemory) {
  constexpr uint64_t kGiB = uint64_t(1) << 30;
  ReplicaScalerCall model = automaticCall("model");
  model.memoryBytes = 4 * kGiB;
  ReplicaScalerCall other = automaticCall("other", 2);
  other.memoryBytes = 2 * kGiB;
  ReplicaScaler scaler({model, other});
  // 16 GiB offered, 4 promised to the other Call: 3 replicas of 4 GiB at most.
  std::vector<ReplicaDecision> decided =
      scaler.decide(1, 1, {window(1, 1), window(0.1, 0)}, {16, 0, 1, 16 * kGiB});
  ASSERT_EQ(decided.size(), 1u);
  EXPECT_EQ(decided[0].replicas, 3u) << "not the 14 the idle cores would hold";
  scaler.applied(0, 3, 1);
  EXPECT_TRUE(scaler.decide(3, 1, {window(3, 1), window(0.1, 0)}, {16, 0, 1, 16 * kGiB}).empty());
}

TEST(ReplicaScalerTest, GpuMemoryBoundsAGpuCallBeyondItsShares) {
  // Quarter-GPU replicas of 30 GB on one 80 GB GPU: the shares would hold four, the memory two.
  constexpr uint64_t GB = 1000000000;
  ReplicaScalerCall embed = automaticCall("embed");
  embed.gpus = 0.25;
  embed.gpuMemoryBytes = 30 * GB;
  ReplicaScaler scaler({embed});
  std::vector<ReplicaDecision> decided =
      scaler.decide(1, 1, {window(1, 1)}, {16, 1, 1, 0, 80 * GB});
  ASSERT_EQ(decided.size(), 1u);
  EXPECT_EQ(decided[0].replicas, 2u);
  // Without a figure for the GPUs' memory, the shares alone: four.
  ReplicaScaler unknown({embed});
  decided = unknown.decide(1, 1, {window(1, 1)}, {16, 1, 1, 0, 0});
  ASSERT_EQ(decided.size(), 1u);
  EXPECT_EQ(decided[0].replicas, 4u);
}

TEST(ReplicaScalerTest, GpusBoundAGpuCall) {
  ReplicaScalerCall embed = automaticCall("embed");
  embed.gpus = 1;
  ReplicaScaler scaler({embed});
  std::vector<ReplicaDecision> decided = scaler.decide(1, 1, {window(1, 1)}, {16, 2, 1});
  ASSERT_EQ(decided.size(), 1u);
  EXPECT_EQ(decided[0].replicas, 2u);
  scaler.applied(0, 2, 1);
  EXPECT_TRUE(scaler.decide(3, 1, {window(2, 1)}, {16, 2, 1}).empty()) << "two GPUs, two replicas";
}

} // namespace
} // namespace orch::runtime
