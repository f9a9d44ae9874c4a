// The errors journal of `orch run`: one JSON line per failed source row.
#pragma once

#include "orch/plan/Plan.h"
#include "orch/runtime/EngineTypes.h"

#include <fstream>
#include <string>

namespace orch {

/// The journal of failed source rows, one JSON line each: where it came from, its first cause,
/// counts, and every failed sink row with its own cause. Every run writes it (empty when
/// nothing failed), so a stale journal is never mistaken for this run's.
class ErrorsJournal {
public:
  ErrorsJournal(const plan::Plan &plan, std::string path)
      : plan_(plan), path_(std::move(path)), output_(path_, std::ios::out | std::ios::trunc) {}

  void record(const runtime::RootResult &root);

  const std::string &path() const { return path_; }
  size_t recorded() const { return recorded_; }

private:
  static runtime::RecordFields describe(const runtime::Failure &failure);

  const plan::Plan &plan_;
  std::string path_;
  std::ofstream output_;
  size_t recorded_ = 0;
};

} // namespace orch
