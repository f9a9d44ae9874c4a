// Which CUDA device each GPU replica gets: the placement rule, the split of a machine's devices
// between local workers, and the in-process executor handing each replica its device.
#include "RuntimeFixture.h"

#include "orch/runtime/execution/GpuPlacement.h"
#include "orch/runtime/execution/ThreadExecutor.h"

#include <gtest/gtest.h>

#include <mutex>
#include <set>

namespace orch::runtime {
namespace {

std::vector<int64_t> placeAll(std::vector<int64_t> devices, const std::vector<double> &shares) {
  GpuPlacer placer(std::move(devices));
  std::vector<int64_t> placed;
  for (double share : shares)
    placed.push_back(placer.place(share));
  return placed;
}

TEST(GpuPlacementTest, WholeGpuReplicasTakeEmptyDevices) {
  EXPECT_EQ(placeAll({0, 1}, {1, 1}), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(placeAll({4, 6}, {1, 1}), (std::vector<int64_t>{4, 6}))
      << "the worker's own device indexes";
  // Two GPUs each: a replica reserves two devices and gets the first.
  EXPECT_EQ(placeAll({0, 1, 2, 3}, {2, 2}), (std::vector<int64_t>{0, 2}));
}

TEST(GpuPlacementTest, FractionalReplicasShareADeviceUntilItIsFull) {
  EXPECT_EQ(placeAll({0, 1}, {0.5, 0.5, 0.5, 0.5}), (std::vector<int64_t>{0, 0, 1, 1}));
  EXPECT_EQ(placeAll({0}, {0.25, 0.25, 0.25, 0.25}), (std::vector<int64_t>{0, 0, 0, 0}));
  EXPECT_EQ(placeAll({0, 1, 2}, {1.0 / 3, 1.0 / 3, 1.0 / 3, 1.0 / 3}),
            (std::vector<int64_t>{0, 0, 0, 1}))
      << "3 x 1/3 is one whole device";
}

TEST(GpuPlacementTest, MixedSharesNeverPutMoreThanOneGpuOnADevice) {
  // Before: device = ordinal x share with one counter, so the whole-GPU replicas after four
  // quarter-GPU ones landed on devices 0 and 1 while 2 and 3 idled.
  EXPECT_EQ(placeAll({0, 1, 2, 3}, {0.25, 0.25, 0.25, 0.25, 1, 1}),
            (std::vector<int64_t>{0, 0, 0, 0, 1, 2}));
  // Shares that do not divide one: 0.4 + 0.4 fit, a third 0.4 goes to the next device.
  GpuPlacer placer({0, 1});
  EXPECT_EQ(placer.place(0.4), 0);
  EXPECT_EQ(placer.place(0.4), 0);
  EXPECT_EQ(placer.place(0.4), 1);
  EXPECT_NEAR(placer.load()[0], 0.8, 1e-9) << "not 1.2";
  EXPECT_EQ(placer.place(1), 1) << "no empty device left: the least loaded one is shared";
  EXPECT_NEAR(placer.load()[1], 1.4, 1e-9);
  // A whole-GPU replica after a fraction skips the partly used device.
  EXPECT_EQ(placeAll({0, 1}, {0.5, 1}), (std::vector<int64_t>{0, 1}));
}

TEST(GpuPlacementTest, GpuMemoryIsPlacedWithTheShares) {
  constexpr uint64_t GB = 1000000000;
  // Two 80 GB devices, quarter-GPU replicas of 30 GB: by shares four fit on a device, by memory
  // two.
  GpuPlacer placer({0, 1}, {80 * GB, 80 * GB});
  EXPECT_EQ(placer.place(0.25, 30 * GB), 0);
  EXPECT_EQ(placer.place(0.25, 30 * GB), 0);
  EXPECT_EQ(placer.place(0.25, 30 * GB), 1) << "a third would promise 90 GB of device 0's 80";
  EXPECT_EQ(placer.place(0.25, 30 * GB), 1);
  EXPECT_EQ(placer.memoryPromised(), (std::vector<uint64_t>{60 * GB, 60 * GB}));
  EXPECT_EQ(placer.place(0.25, 30 * GB), 0) << "none has room: the most memory left (a tie)";
  // Devices of different sizes: a 60 GB replica skips the 40 GB one, a 20 GB one takes it.
  GpuPlacer mixed({0, 1}, {40 * GB, 141 * GB});
  EXPECT_EQ(mixed.place(0.5, 60 * GB), 1);
  EXPECT_EQ(mixed.place(0.5, 20 * GB), 0);
  EXPECT_EQ(mixed.place(0.5, 30 * GB), 1) << "device 0 has 20 GB left";
  // Whole GPUs: empty devices that hold the memory.
  GpuPlacer whole({0, 1, 2}, {40 * GB, 141 * GB, 141 * GB});
  EXPECT_EQ(whole.place(1, 100 * GB), 1);
  EXPECT_EQ(whole.place(1, 100 * GB), 2);
  EXPECT_EQ(whole.place(1, 10 * GB), 0);
  // A device whose memory is not known (0), or a replica without `gpu_memory`: the shares alone.
  GpuPlacer unknown({0, 1}, {0, 80 * GB});
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(unknown.place(0.25, 30 * GB), 0);
  EXPECT_EQ(unknown.place(0.25, 30 * GB), 1);
  GpuPlacer noFigure({0, 1}, {80 * GB, 80 * GB});
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(noFigure.place(0.25), 0);
  // A replica of two GPUs takes its memory on each of them.
  GpuPlacer pair({0, 1, 2}, {80 * GB, 80 * GB, 80 * GB});
  EXPECT_EQ(pair.place(2, 70 * GB), 0);
  EXPECT_EQ(pair.memoryPromised(), (std::vector<uint64_t>{70 * GB, 70 * GB, 0}));
  EXPECT_EQ(pair.place(0.5, 40 * GB), 2) << "devices 0 and 1 have 10 GB left";
}

TEST(GpuPlacementTest, AReleasedReplicasShareAndMemoryGoToTheNext) {
  // A replica that leaves a worker (moved, retired) frees its device for the next one: without
  // that, a third 60 GB replica would join the one left on device 0 while device 1 stood empty.
  constexpr uint64_t GB = 1000000000;
  GpuPlacer placer({0, 1}, {80 * GB, 80 * GB});
  EXPECT_EQ(placer.place(0.5, 60 * GB), 0);
  EXPECT_EQ(placer.place(0.5, 60 * GB), 1);
  placer.release(1, 0.5, 60 * GB);
  EXPECT_EQ(placer.memoryPromised(), (std::vector<uint64_t>{60 * GB, 0}));
  EXPECT_NEAR(placer.load()[1], 0, 1e-9);
  EXPECT_EQ(placer.place(0.5, 60 * GB), 1);
  // Releasing what was never placed changes nothing; a whole-GPU pair frees both devices.
  placer.release(0, 1, 5 * GB);
  EXPECT_EQ(placer.memoryPromised(), (std::vector<uint64_t>{60 * GB, 60 * GB}));
  GpuPlacer pair({0, 1}, {80 * GB, 80 * GB});
  EXPECT_EQ(pair.place(2, 10 * GB), 0);
  pair.release(0, 2, 10 * GB);
  EXPECT_EQ(pair.place(1), 0);
  EXPECT_EQ(pair.place(1), 1);
}

TEST(GpuPlacementTest, NoDevicesOrNoRequestMeansNoDevice) {
  EXPECT_EQ(placeAll({}, {1}), (std::vector<int64_t>{-1}));
  EXPECT_EQ(placeAll({0}, {0}), (std::vector<int64_t>{-1}));
}

TEST(GpuPlacementTest, LocalWorkersSplitTheMachinesDevices) {
  EXPECT_EQ(devicesOfLocalWorker(4, 0, 2), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(devicesOfLocalWorker(4, 1, 2), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(devicesOfLocalWorker(2, 0, 4), (std::vector<int64_t>{0}));
  EXPECT_EQ(devicesOfLocalWorker(2, 3, 4), (std::vector<int64_t>{})) << "more workers than GPUs";
  EXPECT_EQ(devicesOfLocalWorker(0, 0, 1), (std::vector<int64_t>{}));
}

class GpuReplicaTest : public orch::testing::RuntimeFixture {};

TEST_F(GpuReplicaTest, TheInProcessExecutorGivesEachGpuReplicaItsDevice) {
  // A Call of a sleeping operator (so that the four replicas run at once), marked as a GPU Call
  // asking for half a GPU per replica; its implementation records the device of every replica that
  // runs a batch.
  plan::Plan plan = compile(R"(
pipeline gpus;
source rows = lines("$DIR/in.txt") as Doc;
call work = test.sleep(ms: 2.0) { batch: 1, replicas: 4 };
sink jsonl(path: "$DIR/out.jsonl", record: { line: work(rows) });
)");
  writeFile(
      "in.txt", std::string(200, 'x') + "\n" + [] {
        std::string lines;
        for (int i = 0; i < 199; ++i)
          lines += "row " + std::to_string(i) + "\n";
        return lines;
      }());
  for (plan::PlanCall &call : plan.calls)
    if (call.name == "work") {
      call.gpu = true;
      call.options.gpus = 0.5;
    }
  std::mutex mutex;
  std::multiset<int64_t> devices;
  OperatorRegistry registry = registry_;
  registry.addTransform("test.sleep", [&](const OperatorConfig &config) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      devices.insert(config.gpuDevice());
    }
    return (*registry_.transform("test.sleep"))(config);
  });
  std::unique_ptr<BatchExecutor> executor = makeThreadExecutor(registry, 4, {3, 7});
  RunSummary summary = runPlan(plan, registry, *executor, RunOptions{});
  ASSERT_TRUE(summary.started) << summary.error.value_or("");
  EXPECT_EQ(summary.written, 200u);
  // Each replica's instance is created once, by the thread that first runs it.
  ASSERT_EQ(devices.size(), 4u) << "every replica ran";
  EXPECT_EQ(devices.count(3), 2u) << "two half-GPU replicas on the first device";
  EXPECT_EQ(devices.count(7), 2u) << "two on the second";

  // With `gpu_memory` and the devices' memory (a 16 GB and an 80 GB device), quarter-GPU
  // replicas of 12 GB go one to the small device and three to the large one.
  constexpr uint64_t GB = 1000000000;
  for (plan::PlanCall &call : plan.calls)
    if (call.name == "work") {
      call.options.gpus = 0.25;
      call.options.gpuMemoryBytes = int64_t(12 * GB);
    }
  devices.clear();
  std::filesystem::remove(dir_ / "out.jsonl");
  executor = makeThreadExecutor(registry, 4, {3, 7}, {}, {16 * GB, 80 * GB});
  summary = runPlan(plan, registry, *executor, RunOptions{});
  ASSERT_TRUE(summary.started) << summary.error.value_or("");
  EXPECT_EQ(summary.written, 200u);
  ASSERT_EQ(devices.size(), 4u);
  EXPECT_EQ(devices.count(3), 1u) << "16 GB hold one 12 GB replica";
  EXPECT_EQ(devices.count(7), 3u);
}

} // namespace
} // namespace orch::runtime
