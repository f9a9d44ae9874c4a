// The run driver (RunDriver.h): a run's defaults, and the choice and sizing of its executor.
#include "CompileExample.h"

#include "orch/runtime/execution/MemorySize.h"
#include "orch/runtime/launch/RunDriver.h"
#include "orch/runtime/operators/TestOperators.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <thread>
#include <unistd.h>

namespace orch::runtime {
namespace {

plan::Plan twoCalls() {
  std::string error;
  std::optional<plan::Plan> plan = testing::compileText(R"(
pipeline driven;
source rows = jsonl("in.jsonl") as Doc;
a = test.identity(rows.id) { replicas: 3 };
b = test.identity(a);
sink jsonl(path: "out.jsonl", record: { id: b });
)",
                                                        &error);
  EXPECT_TRUE(plan) << error;
  return plan ? *plan : plan::Plan();
}

TEST(RunDriverTest, ARunHasAByteBudgetOfHalfTheMachineUnlessSet) {
  RunSettings settings;
  EXPECT_EQ(settings.run.engine.valueBudgetBytes, machineMemory() / 2);
  EXPECT_GT(settings.run.engine.valueBudgetBytes, 0u);
  EXPECT_TRUE(settings.journal);
  EXPECT_GE(settings.threads, 1u);
}

TEST(RunDriverTest, LocalWorkersFollowTheReplicasUpToTheCoresAndNoneForAListeningRun) {
  const plan::Plan plan = twoCalls();
  RunSettings settings;
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  EXPECT_EQ(localWorkerCount(plan, settings), std::min(4u, cores)) << "3 + 1 replicas";
  settings.localWorkers = 5;
  EXPECT_EQ(localWorkerCount(plan, settings), 5u) << "asked for";
  settings.localWorkers = -1;
  settings.coordinator.endpoint = "tcp://127.0.0.1:7700";
  EXPECT_EQ(localWorkerCount(plan, settings), 0u) << "workers connect to the endpoint";
  settings.inProcess = true;
  EXPECT_EQ(localWorkerCount(plan, settings), 0u) << "threads";
}

TEST(RunDriverTest, AListeningRunStartsNoLocalWorkers) {
  const plan::Plan plan = twoCalls();
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("orch-driver-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  RunSettings settings;
  settings.journal = false;
  settings.coordinator.endpoint = "ipc://" + (dir / "driver.sock").string();
  // Local workers would need this program; a listening run must not look for it.
  settings.workerProgram = "/nonexistent/orch-worker";
  std::atomic<bool> stop{true};
  settings.run.stopRequested = &stop;
  OperatorRegistry registry;
  registerTestOperators(registry, std::make_shared<TestOperatorLog>(false));
  const RunSummary summary = drivePlan(plan, registry, settings);
  ASSERT_TRUE(summary.error);
  EXPECT_EQ(summary.error->find("local workers run"), std::string::npos) << *summary.error;
  settings.coordinator.endpoint.clear();
  const RunSummary local = drivePlan(plan, registry, settings);
  ASSERT_TRUE(local.error);
  EXPECT_NE(local.error->find("local workers run /nonexistent/orch-worker"), std::string::npos)
      << *local.error;
  std::filesystem::remove_all(dir);
}

} // namespace
} // namespace orch::runtime
