// Live progress of `orch run` on standard error: on a terminal, a block of lines redrawn in
// place (source rows with ETA, then one line per Call); elsewhere, a plain line now and then.
#pragma once

#include "orch/runtime/execution/RunLoop.h"

#include <chrono>

namespace orch {

class ProgressDisplay {
public:
  /// `terminal`: redraw in place; otherwise print a plain line at most every `plainInterval`.
  explicit ProgressDisplay(bool terminal,
                           std::chrono::milliseconds plainInterval = std::chrono::seconds(5));

  /// How often the run loop should call show().
  std::chrono::milliseconds interval() const;
  void show(const runtime::RunProgress &progress);
  /// Leaves the last drawing in place and moves below it.
  void finish();

private:
  bool terminal_;
  std::chrono::milliseconds plainInterval_;
  unsigned linesDrawn_ = 0;
};

} // namespace orch
