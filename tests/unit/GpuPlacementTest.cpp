// Which CUDA device each GPU replica gets: the placement rule, the split of a machine's devices
// between local workers, and the in-process executor handing each replica its device.
#include "RuntimeFixture.h"

#include "orch/runtime/GpuPlacement.h"
#include "orch/runtime/LocalRunner.h"

#include <gtest/gtest.h>

#include <mutex>
#include <set>

namespace orch::runtime {
namespace {

TEST(GpuPlacementTest, WholeGpuReplicasTakeTheDevicesRoundRobin) {
  const std::vector<int64_t> devices = {0, 1};
  EXPECT_EQ(gpuDeviceForReplica(devices, 1, 0), 0);
  EXPECT_EQ(gpuDeviceForReplica(devices, 1, 1), 1);
  EXPECT_EQ(gpuDeviceForReplica(devices, 1, 2), 0);
  EXPECT_EQ(gpuDeviceForReplica({4, 6}, 1, 1), 6) << "the worker's own device indexes";
  // Two GPUs each: replicas start on every other device.
  EXPECT_EQ(gpuDeviceForReplica({0, 1, 2, 3}, 2, 1), 2);
}

TEST(GpuPlacementTest, FractionalReplicasShareADeviceUntilItIsFull) {
  const std::vector<int64_t> devices = {0, 1};
  std::vector<int64_t> placed;
  for (uint32_t ordinal = 0; ordinal < 6; ++ordinal)
    placed.push_back(gpuDeviceForReplica(devices, 0.5, ordinal));
  EXPECT_EQ(placed, (std::vector<int64_t>{0, 0, 1, 1, 0, 0}));
  placed.clear();
  for (uint32_t ordinal = 0; ordinal < 4; ++ordinal)
    placed.push_back(gpuDeviceForReplica({0}, 0.25, ordinal));
  EXPECT_EQ(placed, (std::vector<int64_t>{0, 0, 0, 0}));
  EXPECT_EQ(gpuDeviceForReplica({0, 1, 2}, 1.0 / 3, 3), 1) << "3 x 1/3 is one whole device";
}

TEST(GpuPlacementTest, NoDevicesOrNoRequestMeansNoDevice) {
  EXPECT_EQ(gpuDeviceForReplica({}, 1, 0), -1);
  EXPECT_EQ(gpuDeviceForReplica({0}, 0, 0), -1);
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
}

} // namespace
} // namespace orch::runtime
