// The in-process executor: operator batches on a pool of worker threads, each Call with its own
// operator instances (at most `replicas` batches of a Call at once). For tests, benchmarks and
// `orch run --in-process`.
#pragma once

#include "orch/runtime/execution/BatchExecutor.h"
#include "orch/runtime/execution/RunLoop.h"
#include "orch/runtime/operators/Operator.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace orch::runtime {

/// `gpuDevices`: the CUDA devices GPU replicas may use (see GpuPlacement.h); none on a machine
/// without GPUs. `log` receives what operators report (OperatorConfig::log).
std::unique_ptr<BatchExecutor> makeThreadExecutor(const OperatorRegistry &registry,
                                                  unsigned threads,
                                                  std::vector<int64_t> gpuDevices = {},
                                                  std::function<void(const std::string &)> log = {},
                                                  std::vector<uint64_t> gpuMemory = {});

/// runPlan with a thread executor of `threads` threads.
RunSummary runOnThreads(const plan::Plan &plan, const OperatorRegistry &registry,
                        const RunOptions &options, unsigned threads = 2);

} // namespace orch::runtime
