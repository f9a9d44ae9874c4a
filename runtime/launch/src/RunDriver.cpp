// Chooses and sizes the executor for a run, then runs the plan through the run loop.
#include "orch/runtime/launch/RunDriver.h"

#include "orch/runtime/execution/MemorySize.h"
#include "orch/runtime/execution/ThreadExecutor.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <unistd.h>

namespace orch::runtime {

namespace {

unsigned machineCores() { return std::max(1u, std::thread::hardware_concurrency()); }

std::vector<int64_t> firstDevices(int64_t count) {
  std::vector<int64_t> devices;
  for (int64_t device = 0; device < count; ++device)
    devices.push_back(device);
  return devices;
}

/// The executor, or the reason there is none.
std::variant<std::unique_ptr<BatchExecutor>, std::string>
makeExecutor(const plan::Plan &plan, const OperatorRegistry &registry, RunSettings &settings) {
  if (settings.inProcess)
    return makeThreadExecutor(registry, settings.threads, firstDevices(settings.gpuCount),
                              settings.log, settings.gpuMemory);
  const unsigned localWorkers = localWorkerCount(plan, settings);
  CoordinatorOptions coordinator = std::move(settings.coordinator);
  coordinator.localWorkers = localWorkers;
  coordinator.workerProgram = settings.workerProgram;
  coordinator.localGpuDevices = settings.gpuCount;
  coordinator.log = settings.log;
  if (coordinator.localWorkers > 0 && ::access(coordinator.workerProgram.c_str(), X_OK) != 0)
    return "local workers run " + coordinator.workerProgram +
           ", which is missing or not executable (" + std::strerror(errno) +
           "); install orch-worker beside orch, or run with --in-process";
  return makeCoordinator(std::move(coordinator));
}

} // namespace

RunSettings::RunSettings() : threads(machineCores()) {
  run.engine.valueBudgetBytes = machineMemory() / 2;
}

std::vector<std::string> notesBeforeRun(const plan::Plan &plan, const RunSettings &settings) {
  std::vector<std::string> notes;
  if (settings.inProcess)
    for (const plan::PlanCall &call : plan.calls)
      if (call.options.timeoutNanoseconds > 0) {
        // A thread cannot be stopped: said once.
        notes.push_back(
            "call '" + call.name +
            "' has a timeout, and --in-process cannot stop a batch that runs past it: its "
            "thread is abandoned (the result discarded) and replaced; worker processes (the "
            "default) are killed and replaced instead");
        break;
      }
  return notes;
}

unsigned localWorkerCount(const plan::Plan &plan, const RunSettings &settings) {
  if (settings.inProcess)
    return 0;
  if (settings.localWorkers >= 0)
    return unsigned(settings.localWorkers);
  if (!settings.coordinator.endpoint.empty())
    return 0;
  // A Call with automatic replicas may grow to every core; pinned ones use what they ask.
  int64_t replicas = 0;
  for (const plan::PlanCall &call : plan.calls)
    replicas += call.options.replicas == plan::CallOptions::kAutomaticReplicas
                    ? machineCores()
                    : call.options.replicas;
  return unsigned(std::min<int64_t>(replicas, machineCores()));
}

RunSummary drivePlan(const plan::Plan &plan, const OperatorRegistry &registry,
                     RunSettings settings) {
  if (settings.journal && settings.run.journal.dir.empty())
    settings.run.journal.dir = plan.pipelineName + ".run";
  if (!settings.journal)
    settings.run.journal.dir.clear();
  // Tesseract's OpenMP threads fight over the cores otherwise (local workers set it too).
  ::setenv("OMP_THREAD_LIMIT", "1", 0);
  auto executor = makeExecutor(plan, registry, settings);
  if (auto *problem = std::get_if<std::string>(&executor)) {
    RunSummary summary;
    summary.error = std::move(*problem);
    return summary;
  }
  return runPlan(plan, registry, *std::get<0>(executor), settings.run);
}

} // namespace orch::runtime
