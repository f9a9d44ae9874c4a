// A whole run in one call, beside driver/CompileDriver (source to plan): the settings of a run
// with their defaults (the byte budget included), the choice of executor (threads of this
// process, worker processes on this machine, or workers that connect to --listen) and the number
// of local workers. `orch run` parses its flags into RunSettings; a program that embeds the
// runtime fills the same struct and gets the same defaults.
#pragma once

#include "orch/runtime/cluster/Coordinator.h"
#include "orch/runtime/execution/RunLoop.h"

#include <functional>
#include <string>
#include <vector>

namespace orch::runtime {

struct RunSettings {
  /// The engine (policies, admission, the byte budget: half the machine's memory unless set),
  /// the hang guard, the run journal and the caller's hooks (progress, rows, errors journal).
  RunOptions run;
  /// Keep a run journal in `run.journal.dir`, or "<pipeline>.run" when that is empty.
  bool journal = true;
  /// Run operator batches on `threads` threads of this process instead of worker processes.
  bool inProcess = false;
  unsigned threads;
  /// Worker processes started on this machine: -1 sizes them from the cores and the Calls'
  /// replicas, or none when `coordinator.endpoint` is set (workers connect there).
  int localWorkers = -1;
  /// The worker program for local workers (orch-worker); required when there are any.
  std::string workerProgram;
  /// Usable CUDA devices on this machine (given to GPU replicas here or split between local
  /// workers; remote workers bring their own).
  int64_t gpuCount = 0;
  /// Their memory in bytes, by device index (0 or missing: not known).
  std::vector<uint64_t> gpuMemory;
  /// Where workers connect, their keys, liveness, pipelining and value locality (the fields
  /// about local workers are filled from the ones above).
  CoordinatorOptions coordinator;
  std::function<void(const std::string &)> log;

  RunSettings();
};

/// What the user should know before `plan` runs with `settings` (a timeout that threads cannot
/// enforce); printed before the run begins.
std::vector<std::string> notesBeforeRun(const plan::Plan &plan, const RunSettings &settings);

/// Local worker processes for `plan`: `settings.localWorkers`, or one per replica of every Call
/// up to the machine's cores (none with an endpoint to listen on).
unsigned localWorkerCount(const plan::Plan &plan, const RunSettings &settings);

/// Runs `plan` with the executor `settings` choose. A run that cannot start (no worker program,
/// a bad endpoint, an unwritable sink) returns `started == false` and the reason in `error`.
RunSummary drivePlan(const plan::Plan &plan, const OperatorRegistry &registry,
                     RunSettings settings);

} // namespace orch::runtime
