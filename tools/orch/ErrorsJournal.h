// The errors journal of `orch run`: one JSON line per failed source row, one per member a
// `reduce(x, failed: "skip")` left out, and one per duplicate a `dedup` dropped.
#pragma once

#include "orch/plan/Plan.h"
#include "orch/runtime/engine/EngineTypes.h"

#include <functional>
#include <string>

namespace orch {

/// The journal of failed source rows, one JSON line each: where it came from, its first cause,
/// counts, and every failed sink row with its own cause. Every run writes it (empty when
/// nothing failed), so a stale journal is never mistaken for this run's.
class ErrorsJournal {
public:
  ErrorsJournal(const plan::Plan &plan, std::string path) : plan_(plan), path_(std::move(path)) {}
  ~ErrorsJournal();

  /// Opens it, keeping its first `keep` bytes (the lines of a resumed run's source rows that
  /// stay failed; 0 for a fresh run), and with `keepSkippedMembers` (a --retry-failed run, which
  /// writes the failed rows' lines again) the skipped-member and duplicate lines of rows that
  /// did not fail.
  /// False with the reason when it cannot.
  bool open(uint64_t keep, bool keepSkippedMembers, std::string &error);
  /// `keepAlive` is called every few thousand lines (a row's million duplicates).
  void record(const runtime::RootResult &root, const std::function<void()> &keepAlive = {});

  const std::string &path() const { return path_; }
  size_t recorded() const { return recorded_; }
  /// Its size in bytes now, which a resumed run keeps; 0 for a stream, a device or a pipe
  /// (nothing of it can be kept).
  uint64_t size() const { return asItIs_ ? 0 : size_; }
  /// Why a line could not be written (then no more are), or empty: the summary warns.
  const std::string &writeError() const { return writeError_; }

private:
  static runtime::RecordFields describe(const runtime::Failure &failure);
  void recordRoot(const runtime::RootResult &root);
  /// One line per member a `reduce(x, failed: "skip")` left out of a written or dropped row.
  void recordSkippedMembers(const runtime::RootResult &root);
  /// Writes one line; every kLinesBetweenKeepAlives lines calls `keepAlive_`.
  /// One line per row a Dedup node dropped (`"kind": "duplicate"`), with its survivor.
  void recordDuplicates(const runtime::RootResult &root);
  void write(const runtime::Value &entry);
  bool writeLine(const std::string &line);
  /// `keep` or less: the bytes of the file's whole lines within its first `keep`.
  uint64_t wholeLinesUpTo(uint64_t keep) const;
  static constexpr size_t kLinesBetweenKeepAlives = 4096;
  const std::function<void()> *keepAlive_ = nullptr;

  const plan::Plan &plan_;
  std::string path_;
  int fd_ = -1;
  /// A stream, a device or a named pipe, written as it is (open).
  bool asItIs_ = false;
  std::string writeError_;
  uint64_t size_ = 0;
  size_t recorded_ = 0;
};

} // namespace orch
