// What happened during a run, batch by batch and source row by source row, with times: the raw
// material of `--metrics`, `--trace` and `orch report`. Filled by the run loop on the engine's
// thread; times are seconds since the run started.
#pragma once

#include "orch/runtime/engine/EngineTypes.h"

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace orch::runtime {

struct BatchRecord {
  uint64_t id = 0;
  uint32_t call = 0;
  uint32_t grains = 0;
  /// Grains from more than one source row.
  bool mixed = false;
  double dispatched = 0;
  /// When the report (or the loss) reached the engine; -1 while outstanding.
  double finished = -1;
  /// Seconds inside the operator, as the worker measured them.
  double busy = 0;
  /// Where it ran: "thread 1", "local-2/replica 5".
  std::string place;
  /// committed, stale, contract-violation, batch-error, lost or timed-out.
  std::string outcome;
};

struct RootRecord {
  uint64_t admission = 0;
  uint32_t source = 0;
  uint64_t sourceRow = 0;
  double admitted = 0;
  double finished = -1;
  RootStatus status = RootStatus::Written;
  /// Failed because the run stopped (stoppedByTheRun): reported as "unfinished", not failed.
  bool unfinished = false;
  /// Failed rows only: what the source row was (its path or key; describeSourceRow) and the
  /// first failure under it, its cause.
  std::string label;
  std::optional<Failure> cause;
};

/// A member that `reduce(x, failed: "skip")` left out of a row that was written or dropped.
struct SkippedMemberRecord {
  uint32_t source = 0;
  uint64_t sourceRow = 0;
  std::string label;
  /// The member (ordinals below the source row) and why it failed.
  std::vector<uint32_t> path;
  Failure cause;
};

/// A short name for a source row, for people: a File's path, a record's string `path`, `id`,
/// `key`, `name` or `url` (or a number `id`), else "" (the row number identifies it).
std::string describeSourceRow(const Value &row);

class RunRecorder {
public:
  void batchDispatched(const Batch &batch, double now);
  void batchFinished(uint64_t id, double now, double busy, const std::string &place,
                     const std::string &outcome);
  /// `label`: describeSourceRow of the row (kept only while it runs, and for failed rows).
  void rootAdmitted(uint64_t admission, double now, std::string label = {});
  void rootFinished(const RootResult &root, double now);

  const std::vector<BatchRecord> &batches() const { return batches_; }
  const std::vector<RootRecord> &roots() const { return roots_; }
  /// The first kKeptSkippedMembers members reduces left out, and how many there were.
  const std::vector<SkippedMemberRecord> &skippedMembers() const { return skippedMembers_; }
  uint64_t skippedMemberCount() const { return skippedMemberCount_; }
  static constexpr size_t kKeptSkippedMembers = 100;

private:
  std::vector<BatchRecord> batches_;
  std::unordered_map<uint64_t, size_t> batchIndex_;
  std::vector<RootRecord> roots_;
  std::unordered_map<uint64_t, size_t> rootIndex_;
  /// Labels of rows still running.
  std::unordered_map<uint64_t, std::string> labels_;
  std::vector<SkippedMemberRecord> skippedMembers_;
  uint64_t skippedMemberCount_ = 0;
};

} // namespace orch::runtime
