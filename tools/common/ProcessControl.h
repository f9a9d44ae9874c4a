// What `orch run` and `orch-worker` do alike as processes: stop cleanly on the first SIGINT or
// SIGTERM, find and restart their own program, log a line, build the standard operator registry.
#pragma once

#include "orch/runtime/operators/Operator.h"

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace orch::tools {

/// A process stopped by a second SIGINT or SIGTERM exits with this code (128 + SIGINT).
inline constexpr int kExitInterrupted = 130;

/// Set by the first SIGINT or SIGTERM once installStopHandlers ran.
extern std::atomic<bool> stopRequested;

/// SIGINT and SIGTERM set stopRequested (the caller stops cleanly: workers are stopped, nothing
/// orphaned); a second one exits at once with `exitCode`.
void installStopHandlers(int exitCode);

/// The absolute path of this program (/proc/self/exe), or `fallback` when it cannot be read.
std::string thisProgram(const std::string &fallback);

/// `name` in the directory of this program (orch runs the orch-worker installed beside it).
std::string siblingProgram(const std::string &name);

/// "orch: LINE" on stderr, in one write (safe from any thread).
void logLine(const std::string &line);

/// Executes this program again with the same arguments (a worker whose replica may be stuck in
/// an operator cannot be cleaned up in place). Returns only if that fails.
void restartThisProcess();

/// Raises this process's soft limit on open files towards its hard limit, to at most `ceiling`.
void raiseFileDescriptorLimit(uint64_t ceiling);

/// The standard library's operators and the test operators, as every Orch process has them.
runtime::OperatorRegistry standardRegistry();

/// Devices 0 .. count-1 of this machine.
std::vector<int64_t> allDevices(int64_t count);

} // namespace orch::tools
