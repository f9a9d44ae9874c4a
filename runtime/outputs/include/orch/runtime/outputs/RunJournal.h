// The run journal (docs/outputs.md): a directory beside a run's outputs that records, for every
// finished source row, where its rows ended in each sink, once they are committed there. A run
// that was killed is resumed from it: committed rows are skipped at admission, sinks are cut
// back to their last committed state, and each source row's rows end up in the outputs exactly
// once. The journal also makes a run the only writer of its outputs (a lock).
#pragma once

#include "orch/plan/Plan.h"
#include "orch/runtime/engine/EngineTypes.h"
#include "orch/runtime/operators/Operator.h"
#include "orch/runtime/outputs/ReservedSpace.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace orch::runtime {

class GrainCheckpoints;

struct JournalOptions {
  /// The journal's directory ("" = no journal: outputs start afresh, nothing is resumed).
  std::string dir;
  /// Start afresh even when an unfinished run of the same plan and inputs could be resumed.
  bool restart = false;
  /// Resuming (or re-running a finished run), run the source rows that failed again.
  bool retryFailed = false;
};

class RunJournal {
public:
  /// Opens (creating) the journal for `plan`, whose sources' inputs fingerprint as `inputs`,
  /// and takes its lock. Resumes when the journal holds an unfinished run of the same plan and
  /// inputs (or a finished one and `retryFailed`); refuses an unfinished run of another plan or
  /// other inputs unless `restart`. Nullptr with `error` when it cannot.
  static std::unique_ptr<RunJournal> open(const JournalOptions &options, const plan::Plan &plan,
                                          const std::string &inputs, std::string &error);
  ~RunJournal();

  bool resuming() const { return resuming_; }
  /// Source rows the resumed run does not run again.
  uint64_t done() const { return done_.size(); }
  /// Of those, the rows that failed (a plain resume keeps them failed; --retry-failed runs
  /// them again, so they are not done).
  uint64_t doneFailed() const;
  bool isDone(uint32_t source, uint64_t row) const;
  /// A row an earlier run crashed on (CrashQuarantine.h), which this run fails without reading
  /// it: the message to fail it with, or nullptr. None with --retry-failed (it runs them).
  const std::string *crashedEarlier(uint32_t source, uint64_t row) const;
  /// Where this run's CrashWitness writes down the rows it crashes on.
  std::string crashedRowsPath() const { return dir_ + "/crashed"; }
  /// What sink `sink` takes its output up from: its records (nullptr: afresh), read from the
  /// `commits` file as the journal found it; for the sinks' constructors and `beginTakeUp`,
  /// before `start` rewrites that file.
  const SinkHistory *sinkHistory(size_t sink) const;
  /// How much of the errors journal to keep (0 afresh).
  uint64_t errorsJournalKeep() const { return errorsKeep_; }
  /// A --retry-failed run: rows that did not fail are not run again.
  bool retryingFailed() const { return retryFailed_; }
  const std::string &dir() const { return dir_; }
  /// What the user should know about how the run took up the journal ("" if nothing): a
  /// --retry-failed that found no earlier run of this plan and inputs to retry.
  const std::string &notice() const { return notice_; }

  /// Before the sinks take up their outputs (RowSink::takeUp): with --retry-failed, records
  /// the intent (the records the retry keeps, as `sinks`, made with this journal's histories,
  /// rewrite them: RowSink::recordAfterRetry) so that a run stopped while the sinks cut their
  /// retried rows out is completed by the next one. False with `error` when it cannot.
  bool beginTakeUp(const std::vector<std::unique_ptr<RowSink>> &sinks, std::string &error);
  /// Writes the journal for this run (its header; with --retry-failed, the records kept), once
  /// the sinks took up their outputs: a run that cannot open a sink leaves the journal as it
  /// was. False with `error` when it cannot write.
  bool start(std::string &error);
  /// Records that the source row's rows are committed in every sink (they are prepared there;
  /// published after), with each sink's resume record. The record waits in memory until
  /// `writeCommits`: the run writes a round's records with one write (group commit), after the
  /// sinks wrote the rows they point at, and before a sink publishes (Outputs, RunLoop.cpp);
  /// its space is reserved now. False with `error` when there is no room for it: the root is
  /// not committed.
  bool commit(const RootResult &root, std::vector<std::string> records, uint64_t errorsSize,
              std::string &error);
  /// Whether records wait for a group write; false where the journal's file system cannot
  /// reserve their space (each must then be written at once, after its rows).
  bool groupsRecords() const { return groupsRecords_; }
  /// Bytes of records waiting to be written.
  uint64_t waitingBytes() const { return waitingCommits_.size(); }
  /// Writes the records waiting. False with `error` when it cannot: none of them was recorded
  /// (they still wait; the caller drops them), and a resumed run runs those rows again.
  bool writeCommits(std::string &error);
  /// Forgets the records waiting (the rows they point at could not be written); how many.
  uint64_t dropWaiting();
  /// Resume down to the child (GrainCheckpoints): the value a grain (its invoke node, its
  /// entity's key) had in an earlier run of this plan and inputs, or nullptr; how many there
  /// are; and keeping a finished grain's value (its root: `source`, `sourceRow`) for a later
  /// resume (`cheap`: its batch took less per grain than keeping costs; GrainCheckpoints::keep).
  const Value *recall(uint32_t node, uint64_t key) const;
  size_t recallable() const;
  void keep(uint32_t node, uint64_t key, uint32_t source, uint64_t sourceRow, const Value &value,
            bool cheap = false);
  /// Dedup decisions (docs/runtime.md, "Deduplication"): those an earlier run of this plan and
  /// inputs made (all of them but failed rows', handed over once), and keeping one made now.
  std::vector<DedupDecision> takeDedupHistory();
  void keepDedupDecision(const DedupDecision &decision);

  /// Writes the kept values waiting when the last write is a tenth of a second old (the run
  /// loop's clock, once a round).
  void flushKeptValuesIfDue(std::chrono::steady_clock::time_point now);
  /// Makes the written records durable (after the sinks synced theirs).
  void sync();
  /// The run ended without an error: a later run starts afresh.
  void complete();

private:
  RunJournal() = default;

  std::string dir_;
  int lockFd_ = -1;
  int commitsFd_ = -1;
  /// The commits file's size: where a commit cut short is cut back to.
  uint64_t commitsEnd_ = 0;
  /// Records committed but not written yet (group commit), and of how many source rows.
  std::string waitingCommits_;
  uint64_t waitingRows_ = 0;
  /// The space the waiting records will take, reserved in `commits`.
  ReservedSpace reserved_;
  bool groupsRecords_ = false;
  bool resuming_ = false;
  std::unordered_set<uint64_t> done_;
  /// Source rows whose last record says they failed: their Dedup decisions are not loaded.
  std::unordered_set<uint64_t> failed_;
  /// Source rows this run committed as failed.
  uint64_t committedFailures_ = 0;
  /// Rows an earlier run crashed on, with the message that fails them now.
  std::unordered_map<uint64_t, std::string> crashed_;
  /// Each sink's records, when resuming.
  std::vector<std::unique_ptr<SinkHistory>> histories_;
  /// The commits file's format (1: orch before opaque records; rewritten when resumed).
  int format_ = 2;
  uint64_t errorsKeep_ = 0;
  std::string header_;
  std::string planMeaning_;
  std::string notice_;

  /// The store of finished grains' values (`values`).
  std::unique_ptr<GrainCheckpoints> checkpoints_;
  /// Bytes of `commits` kept when resuming (whole records).
  uint64_t commitsKept_ = 0;
  bool retryFailed_ = false;
  std::string retryCommits_;
  size_t sinks_ = 0;
};

} // namespace orch::runtime
