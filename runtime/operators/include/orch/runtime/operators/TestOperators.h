// The `test.*` operators (test.split, test.sleep, test.fail, test.identity) for tests,
// benchmarks and failure drills written as ordinary .orch files, with a log of what actually
// reached them.
#pragma once

#include "orch/runtime/operators/Operator.h"

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace orch::runtime {

/// What the test operators ran, shared by every replica of every test Call in a run.
class TestOperatorLog {
public:
  struct Run {
    std::string call;
    GrainLineage lineage;
  };

  /// `keepRuns`: remember every row's lineage (for tests); otherwise only counts.
  explicit TestOperatorLog(bool keepRuns = true) : keepRuns_(keepRuns) {}

  void recordBatch(const std::string &call, std::span<const OperatorRow> rows);
  /// Counts one more attempt of `key` in `call`; returns the attempt number (1 for the first).
  int64_t nextAttempt(const std::string &call, uint64_t key);

  std::vector<Run> runs() const;
  /// Rows that reached `call`'s operator (attempts included).
  size_t rowsRun(const std::string &call) const;
  size_t batchesRun(const std::string &call) const;

private:
  mutable std::mutex mutex_;
  bool keepRuns_;
  std::vector<Run> runs_;
  std::map<std::string, size_t> batches_;
  std::map<std::string, size_t> rows_;
  std::map<std::pair<std::string, uint64_t>, int64_t> attempts_;
};

/// Registers the test operators; they record into `log` (a counting-only log if null).
void registerTestOperators(OperatorRegistry &registry, std::shared_ptr<TestOperatorLog> log);

} // namespace orch::runtime
