// Which source row this thread works on now, for the crash quarantine (docs/outputs.md): when
// the process crashes (a signal, not an exception), a signal handler reads the crashing
// thread's row and records it beside the run journal, so that the resumed run fails that row
// ("crashed an earlier run") instead of crashing on it again. Reading it is
// async-signal-safe: plain data in static thread-local storage.
#pragma once

#include <cstdint>

namespace orch::runtime {

/// What the thread does with the row: what a quarantined row's message says it crashed in.
enum class RowActivity : uint8_t { None, Reading, Computing, Writing, Running };

struct RowInProgress {
  RowActivity activity = RowActivity::None;
  uint32_t source = 0;
  uint64_t row = 0;
};

/// This thread's row (RowActivity::None: no one row; a crash then quarantines nothing).
extern __attribute__((tls_model("initial-exec"))) thread_local RowInProgress currentRowInProgress;

/// Sets this thread's row for a scope; the row before it is back when the scope ends.
class RowInProgressScope {
public:
  /// Keeps the row as it is; whatever the scope sets meanwhile goes when it ends.
  RowInProgressScope() : previous_(currentRowInProgress) {}
  RowInProgressScope(RowActivity activity, uint32_t source, uint64_t row)
      : previous_(currentRowInProgress) {
    currentRowInProgress = RowInProgress{activity, source, row};
  }
  ~RowInProgressScope() { currentRowInProgress = previous_; }
  RowInProgressScope(const RowInProgressScope &) = delete;
  RowInProgressScope &operator=(const RowInProgressScope &) = delete;

private:
  RowInProgress previous_;
};

} // namespace orch::runtime
