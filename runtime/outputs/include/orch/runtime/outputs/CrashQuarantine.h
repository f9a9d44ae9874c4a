// The crash quarantine (docs/outputs.md): a source row on which a run crashed (a fatal signal,
// not an exception: a native library's bug on a poison input, a stack overflow) is written down
// beside the run journal as the process dies, and the resumed run fails that row ("crashed an
// earlier run") instead of crashing on it again, so that one poison row cannot stop a run for
// good. The row is the crashing thread's RowInProgress (engine/RowInProgress.h): the row a
// source was reading, the engine was computing or a sink was writing, or the one row of an
// in-process operator's batch (or the item the operator said it was on).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace orch::runtime {

/// While it lives, a fatal signal (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) on a thread that
/// works on one source row appends that row to the file at `path`; the process then dies of
/// the signal as it would have. It handles stack overflows of the thread that creates it. At
/// most one watches at a time (a second watches nothing).
class CrashWitness {
public:
  explicit CrashWitness(const std::string &path);
  ~CrashWitness();
  CrashWitness(const CrashWitness &) = delete;
  CrashWitness &operator=(const CrashWitness &) = delete;

  /// Whether it watches (the file could be opened, no other witness was there).
  bool watching() const { return watching_; }

private:
  bool watching_ = false;
  void *alternateStack_ = nullptr;
};

/// A row a run crashed on, as the witness wrote it down.
struct CrashedRow {
  uint32_t source = 0;
  uint64_t row = 0;
  int signal = 0;
  /// "reading", "computing", "writing" or "running" (an operator on it).
  std::string activity;
};

/// The rows of a witness's file (lines that are not the witness's are ignored).
std::vector<CrashedRow> readCrashedRows(const std::string &path);

/// What the resumed run says of a quarantined row: "crashed an earlier run (signal 11,
/// SIGSEGV, while an operator ran on it); it is not run again: --retry-failed runs it".
std::string crashedRowMessage(const CrashedRow &row);

} // namespace orch::runtime
