// The run loop shared by every executor: admission, dispatch, commit, timeouts, outputs.
#include "orch/runtime/execution/RunLoop.h"

#include "AutomaticReplicas.h"
#include "orch/runtime/engine/RowInProgress.h"
#include "orch/runtime/outputs/CrashQuarantine.h"

#include <algorithm>
#include <functional>
#include <map>
#include <unordered_map>

namespace orch::runtime {
namespace {

std::string describeSink(const plan::PlanSink &sink, size_t index) {
  return "sink " + std::to_string(index) + " (" + sink.op + ")";
}

/// A batch without an answer, as the run's records name its outcome: its operator's process
/// crashed or ran past the timeout (and was restarted), or the batch was lost with its worker.
const char *lossOutcome(BatchLoss loss) {
  return loss == BatchLoss::Crash ? "crashed" : loss == BatchLoss::Timeout ? "timed-out" : "lost";
}

/// Sources read lazily, one after the other, into the engine.
class Admission {
public:
  static constexpr size_t kAdmissionStep = 1024;

  Admission(std::vector<std::unique_ptr<RowSource>> sources, const RunJournal *journal)
      : sources_(std::move(sources)), journal_(journal), rowsRead_(sources_.size(), 0) {
    uint64_t rows = 0;
    for (const auto &source : sources_) {
      std::optional<uint64_t> count = source->total();
      if (!count)
        return;
      rows += *count;
    }
    total_ = rows;
  }

  /// `onAdmitted(admission, label)` for each admitted row (`describe`'s label for its value, ""
  /// without `describe` or for a row that failed at its source); at most kAdmissionStep at a
  /// time, so that rows that finish at once (no Calls) are delivered between steps.
  template <typename OnAdmitted>
  void admit(LineageEngine &engine, bool describe, OnAdmitted &&onAdmitted) {
    for (size_t step = 0; current_ < sources_.size() && engine.canAdmit() && step < kAdmissionStep;
         ++step) {
      const uint32_t source = uint32_t(current_);
      const uint64_t index = rowsRead_[current_];
      // A row an earlier run of this journal finished is not run again, nor one it crashed on
      // (that one fails, unread: CrashQuarantine.h).
      const bool done = journal_ && journal_->isDone(source, index);
      const std::string *crashed =
          journal_ && !done ? journal_->crashedEarlier(source, index) : nullptr;
      if (done || crashed) {
        if (!skipRow()) {
          ++current_;
          continue;
        }
        ++rowsRead_[current_];
        if (done)
          engine.skipSourceRow(source);
        else
          onAdmitted(engine.admitFailedRow(source, *crashed, FailureKind::Crash), std::string());
        continue;
      }
      std::optional<SourceRow> row;
      try {
        const RowInProgressScope reading(RowActivity::Reading, source, index);
        row = sources_[current_]->next();
      } catch (const std::exception &error) {
        row = SourceRow{std::nullopt, error.what()};
      }
      if (!row) {
        ++current_;
        continue;
      }
      ++rowsRead_[current_];
      if (row->value) {
        std::string label = describe ? describeSourceRow(*row->value) : std::string();
        onAdmitted(engine.admitRoot(source, std::move(*row->value)), std::move(label));
      } else {
        onAdmitted(engine.admitFailedRow(source, row->error), std::string());
      }
    }
    if (exhausted())
      engine.closeAdmission();
  }

  bool exhausted() const { return current_ == sources_.size(); }
  std::optional<uint64_t> total() const { return total_; }

private:
  /// Passes over the current source's next row; false at its end. A row that cannot be read
  /// is still a row (next() would have given its error).
  bool skipRow() {
    try {
      return sources_[current_]->skip();
    } catch (const std::exception &) {
      return true;
    }
  }

  std::vector<std::unique_ptr<RowSource>> sources_;
  const RunJournal *journal_;
  /// Per source: rows read so far (their indexes).
  std::vector<uint64_t> rowsRead_;
  std::optional<uint64_t> total_;
  size_t current_ = 0;
};

/// Where each Call's wall time goes, sampled after each dispatch: the state seen at one sample
/// lasted until the next. Idle time counts as starved only once the Call has work again.
class CallTimes {
public:
  explicit CallTimes(size_t calls) : state_(calls, State::Idle), idle_(calls, 0) {}

  void sample(const LineageEngine &engine, std::vector<CallSummary> &calls) {
    const SteadyClock::time_point now = SteadyClock::now();
    const double lasted = std::chrono::duration<double>(now - last_).count();
    last_ = now;
    for (uint32_t c = 0; c < calls.size(); ++c) {
      switch (state_[c]) {
      case State::Idle:
        idle_[c] += lasted;
        break;
      case State::Active:
        calls[c].activeSeconds += lasted;
        break;
      case State::Saturated:
        calls[c].saturatedSeconds += lasted;
        break;
      case State::HeldBack:
        calls[c].heldBackSeconds += lasted;
        break;
      }
      const CallLoad &load = engine.callLoad(c);
      state_[c] = load.ready > 0 && load.heldBackNow ? State::HeldBack
                  : load.ready > 0                   ? State::Saturated
                  : load.inFlight > 0                ? State::Active
                                                     : State::Idle;
      if (state_[c] != State::Idle) {
        calls[c].starvedSeconds += idle_[c];
        idle_[c] = 0;
      }
    }
  }

private:
  enum class State { Idle, Active, Saturated, HeldBack };
  std::vector<State> state_;
  std::vector<double> idle_;
  SteadyClock::time_point last_ = SteadyClock::now();
};

/// Writes finished roots to the sinks and keeps the account. A root's rows are one transaction
/// across the sinks: all committed, or, when one cannot be written, all rolled back and the root
/// failed with the cause (docs/outputs.md).
class Outputs {
public:
  Outputs(const plan::Plan &plan, std::vector<std::unique_ptr<RowSink>> sinks,
          const RunOptions &options, RunSummary &summary, RunJournal *journal)
      : plan_(plan), sinks_(std::move(sinks)), options_(options), summary_(summary),
        journal_(journal), lastSync_(SteadyClock::now()) {
    for (size_t s = 0; s < plan.sinks.size(); ++s)
      summary_.sinks.push_back(SinkAccount{describeSink(plan.sinks[s], s), 0, 0});
    // One sink in source order puts every sink in source order: a root's rows stay one
    // transaction across the sinks.
    for (const plan::PlanSink &sink : plan.sinks)
      ordered_ = ordered_ || inSourceOrder(sink);
  }

  /// Called now and then while a root's many rows are written (BatchExecutor::keepAlive).
  std::function<void()> keepAlive;
  inline static const std::function<void()> kNothingToKeepAlive = [] {};

  void deliver(std::vector<RootResult> roots, double now) {
    if (!ordered_) {
      // Roots the run stopped (interrupted) after those that finished: a committed root's
      // record keeps the errors journal's lines up to its own, and an unfinished row's line
      // before it would stay when the run is resumed (which runs that row again).
      if (std::any_of(roots.begin(), roots.end(), stoppedByTheRun))
        std::stable_partition(roots.begin(), roots.end(),
                              [](const RootResult &root) { return !stoppedByTheRun(root); });
      for (RootResult &root : roots)
        deliverOne(root, now);
    } else {
      // Source order: a root waits until every root admitted before it was delivered.
      for (RootResult &root : roots) {
        waitingBytes_ += rootBytes(root);
        const uint64_t admission = root.admission;
        waiting_.emplace(admission, std::move(root));
      }
      summary_.reorderPeakRows = std::max<uint64_t>(summary_.reorderPeakRows, waiting_.size());
      summary_.reorderPeakBytes = std::max(summary_.reorderPeakBytes, waitingBytes_);
      while (!waiting_.empty() && waiting_.begin()->first == nextInOrder_) {
        waitingBytes_ -= rootBytes(waiting_.begin()->second);
        deliverInOrder(waiting_.begin()->second, now);
        waiting_.erase(waiting_.begin());
        ++nextInOrder_;
      }
    }
    // One clock read a round: what the sinks hold and the journal's records are written a
    // hundredth of a second after the last write, kept values a tenth, and everything is
    // synced every kSyncInterval.
    const SteadyClock::time_point clock = SteadyClock::now();
    if (clock >= writeDueAt())
      writeHeld(clock);
    if (journal_) {
      journal_->flushKeptValuesIfDue(clock);
      if (clock - lastSync_ > kSyncInterval)
        sync();
    }
  }

  /// When what the sinks hold and the journal's waiting records are to be written (group
  /// commit): a hundredth of a second after the last write; never when nothing waits.
  SteadyClock::time_point writeDueAt() const {
    return holding() ? writtenAt_ + kGroupDelay : SteadyClock::time_point::max();
  }

  /// Delivers the roots still waiting, in order, whatever they wait for: as stopped by the
  /// run, since an earlier root was not written (a resumed run runs them again, in order).
  void flushWaiting(double now) {
    if (!waiting_.empty() && !stoppedInOrder_)
      stoppedInOrder_ = Failure{FailureKind::Aborted,
                                "",
                                {},
                                "the run stopped before an earlier source row was written "
                                "(order: \"source\")"};
    for (auto &[admission, root] : waiting_)
      deliverInOrder(root, now);
    waiting_.clear();
    waitingBytes_ = 0;
  }

  /// Bytes of the rows of finished roots waiting for an earlier one.
  uint64_t waitingBytes() const { return waitingBytes_; }

  /// Finished roots waiting for an earlier one (with `order: "source"`): admission pauses
  /// while there are as many as live roots may be, which bounds the buffer.
  size_t waiting() const { return waiting_.size(); }

  /// What was committed becomes durable: the sinks first, then the journal that points at it.
  void sync() {
    lastSync_ = SteadyClock::now();
    writeHeld(lastSync_);
    for (auto &sink : sinks_)
      sink->sync();
    if (journal_)
      journal_->sync();
  }

  /// Why committed roots could not be written or recorded, if so (the run's error).
  const std::optional<std::string> &fatal() const { return fatal_; }

  ~Outputs() {
    // A run that ended by an exception: what was committed is written still, but not a root
    // it was writing (taken back, with every record not written yet: a resumed run cuts the
    // outputs back to the last record written).
    if (delivering_) {
      for (auto &sink : sinks_)
        sink->rollback();
      if (journal_)
        journal_->dropWaiting();
    }
    writeHeld(SteadyClock::now());
  }

  /// Why the run must stop now: roots whose rows could not be written one after the other
  /// (after kConsecutiveOutputFailures, rather than burn the rest of the input), or a
  /// transaction that could not be completed (the run journal unwritable, a rename refused).
  std::optional<std::string> mustStop() const {
    if (fatal_)
      return fatal_;
    if (consecutiveFailures_ < kConsecutiveOutputFailures)
      return std::nullopt;
    return "stopped after " + std::to_string(consecutiveFailures_) +
           " source rows in a row could not be written (" + lastFailure_ + ")";
  }

  void close() {
    for (size_t s = 0; s < sinks_.size(); ++s) {
      try {
        sinks_[s]->close();
      } catch (const std::exception &error) {
        noteError(describeSink(plan_.sinks[s], s) + ": " + error.what());
      }
      // After closing: a sink may write its last bytes then (a shard's end-of-archive blocks).
      summary_.sinks[s].bytes = sinks_[s]->bytesCommitted();
    }
  }

  static constexpr uint64_t kConsecutiveOutputFailures = 10;
  /// Group commit: what the sinks hold and the journal's records are written together this
  /// long after the last write, or once this many bytes wait.
  static constexpr std::chrono::milliseconds kGroupDelay{10};
  static constexpr uint64_t kGroupBytes = 64 * 1024;

private:
  /// In source order, once the run stopped a root (interrupted, aborted) the roots after it
  /// are not written either: they are delivered as stopped, so that a resumed run writes them
  /// after it, in order, and no commit record counts an unfinished row's errors-journal line.
  void deliverInOrder(RootResult &root, double now) {
    if (stoppedInOrder_ && !stoppedByTheRun(root))
      markStopped(root, *stoppedInOrder_);
    else if (!stoppedInOrder_ && stoppedByTheRun(root))
      stoppedInOrder_ = root.failures.front();
    deliverOne(root, now);
  }

  /// `root` as the run's stop leaves it: unfinished for `why`, nothing of it written.
  static void markStopped(RootResult &root, const Failure &why) {
    RootResult stopped;
    stopped.admission = root.admission;
    stopped.source = root.source;
    stopped.sourceRow = root.sourceRow;
    stopped.status = RootStatus::Failed;
    stopped.failures.push_back(why);
    root = std::move(stopped);
  }

  /// Writes one finished root, keeps the account and commits it: every sink prepares the
  /// root's rows, the journal records them, then every sink publishes them (RowSink).
  void deliverOne(RootResult &root, double now) {
    // A transaction could not be completed: the run stops, and the roots still arriving are
    // not committed (a resumed run runs them again).
    if (fatal_)
      return;
    // Rows could not be written, one after the other: the run stops, and the roots that
    // finished in the same round are left unfinished, as those still running are (a disk
    // that is always full failed 1,024 rows, the whole round, not 10).
    if (consecutiveFailures_ >= kConsecutiveOutputFailures && !stoppedByTheRun(root))
      markStopped(root, Failure{FailureKind::Interrupted, "", {}, *mustStop()});
    delivering_ = true;
    ++summary_.rows;
    // A failed root's rows that did not fail are written too (a page that worked).
    const bool prepared = prepareRows(root);
    if (options_.recorder)
      options_.recorder->rootFinished(root, now);
    switch (root.status) {
    case RootStatus::Written:
      ++summary_.written;
      break;
    case RootStatus::Dropped:
      ++summary_.dropped;
      break;
    case RootStatus::Failed:
      ++(stoppedByTheRun(root) ? summary_.unfinished : summary_.failed);
      break;
    }
    if (options_.onRootFinished)
      options_.onRootFinished(root, keepAlive ? keepAlive : kNothingToKeepAlive);
    // Committed: a resumed run will not run this source row again, unless the run, not
    // the row, stopped it (interrupted, aborted).
    const bool stoppedByRun = stoppedByTheRun(root);
    const bool journaled = journal_ && !stoppedByRun;
    if (journaled) {
      // After prepareRows (or its rollback): where each sink stands with the root's rows.
      std::vector<std::string> records;
      records.reserve(sinks_.size());
      for (const auto &sink : sinks_)
        records.push_back(sink->resumeRecord());
      std::string problem;
      if (!journal_->commit(root, std::move(records),
                            options_.errorsJournalSize ? options_.errorsJournalSize() : 0,
                            problem)) {
        // Not recorded, so not committed: the root's rows go, and a resumed run runs it
        // again (its errors journal lines are cut back to the last record).
        for (auto &sink : sinks_)
          sink->rollback();
        stopWith(std::move(problem));
        delivering_ = false;
        return;
      }
    }
    // A sink that publishes now (a rename) must find the root recorded, and a journal that
    // cannot hold records back writes each at once: what is held, then the records, are
    // written first. When they cannot be, the root is not committed either.
    if (((prepared && publishing()) || (journaled && !journal_->groupsRecords())) &&
        !writeHeld(SteadyClock::now())) {
      for (auto &sink : sinks_)
        sink->rollback();
      delivering_ = false;
      return;
    }
    if (prepared)
      publish();
    delivering_ = false;
    if (heldBytes() >= kGroupBytes)
      writeHeld(SteadyClock::now());
  }

  bool publishing() const {
    return std::any_of(sinks_.begin(), sinks_.end(),
                       [](const auto &sink) { return sink->publishes(); });
  }

  uint64_t heldBytes() const {
    uint64_t bytes = journal_ ? journal_->waitingBytes() : 0;
    for (const auto &sink : sinks_)
      bytes += sink->heldBytes();
    return bytes;
  }
  bool holding() const { return heldBytes() > 0; }

  /// Group commit: writes the rows the sinks hold, then the journal's records that point at
  /// them (never the other way round: a resumed run cuts outputs back to the records, and
  /// refuses an output shorter than they say). False (the run stops) when one cannot.
  bool writeHeld(SteadyClock::time_point now) {
    writtenAt_ = now;
    std::string problem;
    for (size_t s = 0; s < sinks_.size() && problem.empty(); ++s) {
      try {
        sinks_[s]->writeHeld();
      } catch (const std::exception &error) {
        problem = describeSink(plan_.sinks[s], s) + ": " + error.what();
      }
    }
    if (problem.empty() && (!journal_ || journal_->writeCommits(problem)))
      return true;
    // The rows were not written, or their records were not: neither is recorded.
    if (journal_ && journal_->waitingBytes() > 0) {
      const uint64_t rows = journal_->dropWaiting();
      problem += " (" + std::to_string(rows) + (rows == 1 ? " source row" : " source rows") +
                 " not recorded: a resumed run runs them again)";
    }
    stopWith(std::move(problem));
    return false;
  }

  /// The recorded root's rows become visible. A sink that fails now (a rename the file
  /// system refused after allowing it in prepare) stops the run; resuming finishes it.
  void publish() {
    for (size_t s = 0; s < sinks_.size(); ++s) {
      try {
        sinks_[s]->commit();
      } catch (const std::exception &error) {
        stopWith(describeSink(plan_.sinks[s], s) + ": " + error.what() +
                 (journal_ ? " (resuming the run finishes writing it)" : ""));
      }
    }
  }

  void stopWith(std::string problem) {
    if (!fatal_)
      fatal_ = std::move(problem);
  }

  static uint64_t rootBytes(const RootResult &root) {
    uint64_t bytes = 64;
    for (const SinkRow &row : root.rows)
      for (const Value &value : row.values)
        bytes += approximateBytes(value);
    return bytes;
  }

  static bool inSourceOrder(const plan::PlanSink &sink) {
    for (const plan::NamedConstant &constant : sink.constants)
      if (constant.name == "order")
        if (auto *text = std::get_if<std::string>(&constant.value))
          return *text == "source";
    return false;
  }

  /// Stages and prepares the root's rows in every sink. When one cannot, every sink takes
  /// the root back and the root fails with the cause; false then, or when it has no rows.
  bool prepareRows(RootResult &root) {
    std::string cause;
    uint32_t failedSink = 0;
    bool deviceFine = false;
    try {
      const RowInProgressScope writing(RowActivity::Writing, root.source, root.sourceRow);
      size_t rowsWritten = 0;
      for (const SinkRow &row : root.rows)
        if (row.status == RowStatus::Written) {
          failedSink = row.sink;
          sinks_[row.sink]->write(row.values);
          // A parent's millions of child rows take seconds: the workers must still hear
          // from their coordinator.
          if (++rowsWritten % 4096 == 0 && keepAlive)
            keepAlive();
        }
      for (size_t s = 0; s < sinks_.size(); ++s) {
        failedSink = uint32_t(s);
        sinks_[s]->prepare();
      }
    } catch (const UnwritableValue &error) {
      cause = error.what();
      deviceFine = true;
    } catch (const std::exception &error) {
      cause = error.what();
    }
    if (cause.empty()) {
      uint64_t written = 0;
      for (const SinkRow &row : root.rows)
        if (row.status == RowStatus::Written) {
          ++written;
          ++summary_.sinks[row.sink].rows;
        }
      summary_.sinkRows += written;
      if (written)
        consecutiveFailures_ = 0;
      return true;
    }
    for (auto &sink : sinks_)
      sink->rollback();
    // The root failed: none of its rows is in any output.
    const uint32_t failure = uint32_t(root.failures.size());
    root.failures.push_back(Failure{
        FailureKind::OutputFailure, describeSink(plan_.sinks[failedSink], failedSink), {}, cause});
    for (SinkRow &row : root.rows)
      if (row.status == RowStatus::Written) {
        row.status = RowStatus::Failed;
        row.failure = failure;
        row.values.clear();
      }
    root.status = RootStatus::Failed;
    if (!deviceFine) {
      ++consecutiveFailures_;
      lastFailure_ = describeSink(plan_.sinks[failedSink], failedSink) + ": " + cause;
    }
    return false;
  }

  void noteError(std::string message) {
    if (!summary_.error)
      summary_.error = std::move(message);
  }

  const plan::Plan &plan_;
  std::vector<std::unique_ptr<RowSink>> sinks_;
  const RunOptions &options_;
  RunSummary &summary_;
  uint64_t consecutiveFailures_ = 0;
  std::string lastFailure_;
  std::optional<std::string> fatal_;
  RunJournal *journal_;
  SteadyClock::time_point lastSync_;
  /// When the sinks' held rows and the journal's records were last written (group commit).
  SteadyClock::time_point writtenAt_{};
  /// A root is being written (deliverOne): an exception now leaves it half done.
  bool delivering_ = false;
  static constexpr std::chrono::seconds kSyncInterval{1};
  bool ordered_ = false;
  std::map<uint64_t, RootResult> waiting_;
  uint64_t waitingBytes_ = 0;
  uint64_t nextInOrder_ = 0;
  /// In source order: why the run stopped the first root it stopped (deliverInOrder).
  std::optional<Failure> stoppedInOrder_;
};

/// Timeouts of outstanding batches of Calls with a `timeout`: each counts from the moment its
/// batch started to run (the executor says when), not from dispatch.
class CallDeadlines {
public:
  static constexpr std::chrono::seconds kExternalTimeoutGrace{2};

  CallDeadlines(const plan::Plan &plan, const RunOptions &options)
      : plan_(plan), options_(options), slowestPerGrain_(plan.calls.size()) {}

  /// Sets the batch's time limit: its Call's `timeout`, none for `timeout: none`, else the hang
  /// guard's limit.
  void dispatched(Batch &batch) {
    const int64_t timeout = plan_.calls[batch.call].options.timeoutNanoseconds;
    batch.timeoutNanoseconds = timeout > 0                                ? timeout
                               : timeout == plan::CallOptions::kNoTimeout ? 0
                                                                          : guardLimit(batch);
    batches_[batch.id] =
        Entry{batch.call, uint32_t(batch.grains.size()), false, batch.timeoutNanoseconds, {}};
  }
  void started(uint64_t batchId, SteadyClock::time_point at) {
    auto found = batches_.find(batchId);
    if (found == batches_.end() || found->second.running || found->second.limit == 0)
      return;
    found->second.running = true;
    found->second.deadline = at + std::chrono::nanoseconds(found->second.limit);
    // A declared operator's replica stops its own process at the limit and reports the batch
    // lost; this deadline is the backstop, so that a batch is not stopped twice.
    // So does a concurrent Call's operator (in_flight > 1: it fails the requests still open).
    const plan::PlanCall &call = plan_.calls[found->second.call];
    if (plan_.externalOperator(call.op) || call.options.inFlight > 1)
      found->second.deadline += kExternalTimeoutGrace;
  }
  /// The batch ended; `seconds` inside its operator when it answered (0 when it was lost).
  void ended(uint64_t batchId, double seconds = 0) {
    auto found = batches_.find(batchId);
    if (found == batches_.end())
      return;
    if (seconds > 0 && found->second.grains > 0) {
      double &slowest = slowestPerGrain_[found->second.call];
      slowest = std::max(slowest, seconds / found->second.grains);
    }
    batches_.erase(found);
  }

  SteadyClock::time_point nearest(SteadyClock::time_point latest) const {
    for (const auto &[id, entry] : batches_)
      if (entry.running)
        latest = std::min(latest, entry.deadline);
    return latest;
  }

  /// Removes the running batches past their deadline; returns each with why it was stopped.
  std::vector<std::pair<uint64_t, std::string>> expired(SteadyClock::time_point now) {
    std::vector<std::pair<uint64_t, std::string>> late;
    for (auto it = batches_.begin(); it != batches_.end();) {
      if (it->second.running && it->second.deadline <= now) {
        late.emplace_back(it->first, why(it->second));
        it = batches_.erase(it);
      } else {
        ++it;
      }
    }
    return late;
  }

private:
  struct Entry {
    uint32_t call;
    uint32_t grains;
    bool running;
    int64_t limit;
    SteadyClock::time_point deadline;
  };

  /// The hang guard: a multiple of the slowest time per item seen, for this batch's items, and
  /// at least the floor; 0 when the guard is off.
  int64_t guardLimit(const Batch &batch) const {
    const double floor = double(options_.hangGuardFloor.count());
    if (floor <= 0)
      return 0;
    const double scaled = options_.hangGuardMultiple * slowestPerGrain_[batch.call] * 1e9 *
                          double(batch.grains.size());
    return int64_t(std::min(std::max(floor, scaled), 1e18));
  }

  std::string why(const Entry &entry) const {
    const plan::PlanCall &call = plan_.calls[entry.call];
    const std::string limit = plan::formatStaticValue(plan::Duration{entry.limit});
    if (call.options.timeoutNanoseconds > 0)
      return "call '" + call.name + "' timed out after " + limit;
    return "call '" + call.name + "' ran past the hang guard's " + limit +
           " (it has no timeout: the guard allows " +
           plan::formatStaticValue(options_.hangGuardMultiple) +
           " times its slowest item so far, at least " +
           plan::formatStaticValue(plan::Duration{options_.hangGuardFloor.count()}) +
           "; write timeout: DURATION or timeout: none)";
  }

  const plan::Plan &plan_;
  const RunOptions &options_;
  std::unordered_map<uint64_t, Entry> batches_;
  std::vector<double> slowestPerGrain_;
};

/// One run, step by step as docs/runtime.md describes it: prepare (the plan can run, sources
/// and sinks open, the executor started), then loop: admit, dispatch, deliver finished rows,
/// wait, commit, stop timed-out batches; then account.
class Run {
public:
  Run(const plan::Plan &plan, const OperatorRegistry &registry, BatchExecutor &executor,
      const RunOptions &options)
      : plan_(plan), registry_(registry), executor_(executor), options_(options),
        deadlines_(plan, options) {}

  RunSummary execute() {
    summary_.startedAt = start_;
    if (!prepare())
      return std::move(summary_);
    loop();
    executor_.stop();
    outputs_->deliver(engine_->takeFinishedRoots(), elapsed());
    // A run that stopped early may leave roots waiting for one that never finished.
    outputs_->flushWaiting(elapsed());
    if (options_.onProgress)
      options_.onProgress(progress());
    outputs_->sync();
    if (outputs_->fatal() && !summary_.error)
      summary_.error = *outputs_->fatal();
    outputs_->close();
    account();
    // A run that ended without an error is finished: the next one starts afresh.
    if (journal_ && !summary_.error)
      journal_->complete();
    return std::move(summary_);
  }

private:
  bool prepare() {
    if (auto problem = checkPlanRunnable(plan_)) {
      summary_.error = "the plan cannot run: " + *problem;
      return false;
    }
    std::vector<std::string> missing = registry_.missingFor(plan_);
    if (!missing.empty()) {
      std::string list;
      for (const std::string &name : missing)
        list += (list.empty() ? "" : ", ") + name;
      summary_.error = "no implementation for " + list;
      return false;
    }
    // Settings an operator can judge before anything runs (an llm.* Call without an endpoint).
    for (const plan::PlanCall &call : plan_.calls)
      if (const OperatorCheck *check = registry_.check(call.op)) {
        OperatorConfig config(call.name, call.op, call.constants, {});
        config.withOptions(call.options);
        if (std::optional<std::string> problem = (*check)(config)) {
          summary_.error = "call '" + call.name + "': " + *problem;
          return false;
        }
      }
    // Sources and sinks are opened before anything runs: a bad path stops the run at once.
    std::vector<std::unique_ptr<RowSource>> sources;
    std::vector<std::unique_ptr<RowSink>> sinks;
    try {
      std::string inputs;
      for (const plan::PlanSource &source : plan_.sources) {
        sources.push_back((*registry_.source(source.op))(
            OperatorConfig(source.op, source.op, source.constants, {})));
        inputs += sources.back()->fingerprint() + "\n";
      }
      // The journal decides whether the sinks start afresh or take up an unfinished run.
      if (!options_.journal.dir.empty()) {
        std::string problem;
        journal_ = RunJournal::open(options_.journal, plan_, inputs, problem);
        if (!journal_) {
          summary_.error = problem;
          return false;
        }
        summary_.resumed = journal_->resuming();
        summary_.resumedRows = journal_->done();
        summary_.resumedFailed = journal_->doneFailed();
        if (!journal_->notice().empty())
          summary_.notes.push_back(journal_->notice());
      }
      if (options_.openErrorsJournal)
        if (std::optional<std::string> problem =
                options_.openErrorsJournal(journal_ ? journal_->errorsJournalKeep() : 0,
                                           journal_ && journal_->retryingFailed())) {
          summary_.error = *problem;
          return false;
        }
      for (size_t s = 0; s < plan_.sinks.size(); ++s) {
        const plan::PlanSink &sink = plan_.sinks[s];
        sinks.push_back((*registry_.sink(sink.op))(
            OperatorConfig(describeSink(sink, s), sink.op, sink.constants, sink.labels)
                .withResume(journal_ ? journal_->sinkHistory(s) : nullptr)));
      }
    } catch (const std::exception &error) {
      summary_.error = error.what();
      return false;
    }
    // Every sink can take up its output: now they do (a retry's intent recorded first), and
    // then the journal is written for this run.
    try {
      if (std::string problem; journal_ && !journal_->beginTakeUp(sinks, problem))
        throw std::runtime_error(problem);
      for (auto &sink : sinks)
        sink->takeUp();
      if (std::string problem; journal_ && !journal_->start(problem))
        throw std::runtime_error(problem);
      // From here a crash on a row is written down, and the resumed run fails that row.
      if (journal_)
        crashWitness_.emplace(journal_->crashedRowsPath());
    } catch (const std::exception &error) {
      summary_.error = error.what();
      return false;
    }
    EngineOptions engineOptions = options_.engine;
    if (journal_) {
      // Resume down to the child: finished grains' values are kept, and recalled.
      RunJournal *journal = journal_.get();
      if (journal->recallable() > 0)
        engineOptions.recall = [journal](uint32_t node, uint64_t key) {
          return journal->recall(node, key);
        };
      // A grain whose batch took less per grain than keeping its value costs (a reference
      // held, a record encoded, written and read back by a resume) is cheap: the journal keeps
      // it only where it must (GrainCheckpoints::keep).
      engineOptions.onGrainValue = [this, journal](uint32_t node, uint64_t key, uint32_t source,
                                                   uint64_t sourceRow, const Value &value) {
        journal->keep(node, key, source, sourceRow, value, !batchWorthKeeping_);
      };
      // Dedup decisions: a resumed run indexes the earlier run's survivors first.
      engineOptions.dedupHistory = journal->takeDedupHistory();
      engineOptions.onDedupDecision = [journal](const DedupDecision &decision) {
        journal->keepDedupDecision(decision);
      };
    }
    engine_.emplace(plan_, std::move(engineOptions));
    std::vector<std::vector<std::string>> inputLabels;
    for (uint32_t c = 0; c < plan_.calls.size(); ++c) {
      inputLabels.push_back(engine_->callInputLabels(c));
      CallSummary call;
      call.name = plan_.calls[c].name;
      call.batchLimit = plan_.calls[c].options.batch;
      call.inFlight = plan_.calls[c].options.inFlight;
      summary_.calls.push_back(std::move(call));
    }
    replicas_.emplace(plan_, summary_.calls);
    const bool startsProcesses = !plan_.operators.empty();
    if (startsProcesses && options_.onProgress) {
      RunProgress starting;
      starting.phase = "starting operator processes (loading models)";
      options_.onProgress(starting);
    }
    if (auto problem = executor_.start(plan_, inputLabels)) {
      summary_.error = *problem;
      return false;
    }
    if (auto problem = executor_.awaitStarted(options_.stopRequested)) {
      summary_.error = *problem;
      executor_.stop();
      return false;
    }
    if (startsProcesses)
      summary_.startupSeconds = elapsed();
    summary_.started = true;
    admission_.emplace(std::move(sources), journal_.get());
    outputs_.emplace(plan_, std::move(sinks), options_, summary_, journal_.get());
    outputs_->keepAlive = [this] { executor_.keepAlive(); };
    return true;
  }

  void loop() {
    LineageEngine &engine = *engine_;
    SteadyClock::time_point nextProgress = start_;
    CallTimes times(plan_.calls.size());
    for (;;) {
      if (options_.stopRequested && options_.stopRequested->load()) {
        // Nothing more is admitted or dispatched; batches still running are abandoned by the
        // executor's stop; the unfinished rows are failed as "interrupted".
        summary_.error =
            "interrupted: " + std::to_string(engine.liveRoots()) + " source rows were unfinished";
        engine.interrupt("the run was interrupted");
        return;
      }
      if (std::optional<std::string> stop = outputs_->mustStop()) {
        summary_.error = *stop;
        engine.interrupt(*stop);
        return;
      }
      if (outputs_->waiting() < options_.engine.maxLiveRoots)
        admission_->admit(engine, options_.recorder != nullptr,
                          [&](uint64_t index, std::string label) {
                            if (options_.recorder)
                              options_.recorder->rootAdmitted(index, elapsed(), std::move(label));
                          });
      dispatch();
      times.sample(engine, summary_.calls);
      replicas_->sample(engine, executor_, elapsed());
      outputs_->deliver(engine.takeFinishedRoots(), elapsed());
      engine.setExternalBytes(outputs_->waitingBytes());
      sampleBytesHeld();
      if (options_.onProgress && SteadyClock::now() >= nextProgress) {
        nextProgress = SteadyClock::now() + options_.progressInterval;
        options_.onProgress(progress());
      }
      // Every root is finished (or the run was aborted): batches still out are abandoned, their
      // grains all cancelled, and the run does not wait for them (executor_.stop()).
      if (engine.complete())
        return;
      if (executor_.inFlight() == 0 && !engine.hasReadyWork()) {
        if (engine.canAdmit() && !admission_->exhausted() &&
            outputs_->waiting() < options_.engine.maxLiveRoots)
          continue;
        summary_.error = engine.deadlockReport().value_or(
            "the run stopped with unfinished rows and nothing to run");
        return;
      }
      // While an expansion has children to make, the loop does not block: it makes them.
      // Rows held for a group write wait for it no longer than it is due.
      commit(executor_.wait(
          engine.makingChildren()
              ? SteadyClock::now()
              : std::min(outputs_->writeDueAt(),
                         deadlines_.nearest(SteadyClock::now() + std::chrono::milliseconds(200)))));
      stopTimedOut();
    }
  }

  /// Work-conserving: whatever is ready goes to whoever can take it now.
  void dispatch() {
    const ExecutorRoom room{[&](uint32_t call) { return executor_.canRun(call); },
                            [&](uint32_t call) { return executor_.batchSlots(call); },
                            [&](uint32_t call) { return executor_.copiesInputs(call); }};
    while (std::optional<Batch> batch = engine_->reserveBatch(room)) {
      deadlines_.dispatched(*batch);
      replicas_->dispatched(batch->id, batch->call);
      if (options_.recorder)
        options_.recorder->batchDispatched(*batch, elapsed());
      CallSummary &call = summary_.calls[batch->call];
      call.batches += 1;
      call.grains += batch->grains.size();
      for (const BatchGrain &grain : batch->grains)
        if (grain.lineage.root != batch->grains.front().lineage.root) {
          ++call.mixedBatches;
          break;
        }
      executor_.submit(std::move(*batch));
    }
  }

  void commit(std::vector<ExecutorEvent> events) {
    for (ExecutorEvent &event : events) {
      switch (event.kind) {
      case ExecutorEvent::Kind::Started:
        deadlines_.started(event.batchId, event.startedAt);
        replicas_->started(event.batchId, secondsAt(event.startedAt));
        break;
      case ExecutorEvent::Kind::Lost:
        deadlines_.ended(event.batchId);
        replicas_->ended(event.batchId, elapsed());
        engine_->failBatch(event.batchId, event.reason,
                           event.bystander ? BatchLoss::Bystander
                           : event.crash   ? BatchLoss::Crash
                                           : BatchLoss::Infrastructure);
        if (options_.recorder)
          options_.recorder->batchFinished(event.batchId, elapsed(), 0, "", "lost");
        break;
      case ExecutorEvent::Kind::Finished: {
        deadlines_.ended(event.report.batchId,
                         event.report.loss == BatchLoss::None ? event.seconds : 0);
        replicas_->ended(event.report.batchId, elapsed());
        if (event.call < summary_.calls.size()) {
          summary_.calls[event.call].busySeconds += event.seconds;
          if (!event.report.usage.empty())
            summary_.calls[event.call].service.add(event.report.usage);
        }
        if (event.report.loss != BatchLoss::None) {
          // The operator's process crashed or hung and was restarted (the batch is narrowed
          // down to the grains that do it alone), or an input could not be had (it runs again).
          engine_->failBatch(event.report.batchId, event.report.batchError.value_or("lost"),
                             event.report.loss);
          if (options_.recorder)
            options_.recorder->batchFinished(event.report.batchId, elapsed(), event.seconds,
                                             event.place, lossOutcome(event.report.loss));
          break;
        }
        batchWorthKeeping_ =
            event.seconds >= kKeepingCostPerGrain * double(event.report.grains.size());
        const CommitResult committed = engine_->commit(event.report);
        if (options_.recorder)
          options_.recorder->batchFinished(event.report.batchId, elapsed(), event.seconds,
                                           event.place, commitStatusName(committed.status));
        break;
      }
      }
    }
  }

  /// Batches past their Call's timeout: the replica running each is stopped and replaced, and
  /// the batch runs again elsewhere.
  void stopTimedOut() {
    for (const auto &[batchId, why] : deadlines_.expired(SteadyClock::now())) {
      // Where it ran, before it is abandoned: the report marks the replica restarted there.
      const std::string place = options_.recorder ? executor_.placeOf(batchId) : std::string();
      executor_.abandon(batchId, why);
      replicas_->ended(batchId, elapsed());
      engine_->failBatch(batchId, why, BatchLoss::Timeout);
      if (options_.recorder)
        options_.recorder->batchFinished(batchId, elapsed(), 0, place, "timed-out");
    }
  }

  /// Bytes held over time for the report, every 100 ms at most; every other point goes when
  /// there are too many, and the interval doubles.
  void sampleBytesHeld() {
    const double now = elapsed();
    if (!summary_.bytesHeld.empty() && now - summary_.bytesHeld.back().first < bytesInterval_)
      return;
    summary_.bytesHeld.emplace_back(now, engine_->memory().held());
    if (summary_.bytesHeld.size() > kBytesHeldPoints) {
      size_t kept = 0;
      for (size_t i = 0; i < summary_.bytesHeld.size(); i += 2)
        summary_.bytesHeld[kept++] = summary_.bytesHeld[i];
      summary_.bytesHeld.resize(kept);
      bytesInterval_ *= 2;
    }
  }

  /// The engine's counters and the executor's account into the summary.
  void account() {
    const LineageEngine &engine = *engine_;
    summary_.valueBudget = engine.memory().limit;
    summary_.peakBytesHeld = engine.memory().peak;
    summary_.largestRowBytes = engine.memory().largestRow;
    summary_.largestBatchCopies = engine.memory().largestBatchCopies;
    summary_.computedBytesAtPeak = engine.memory().computedAtPeak;
    summary_.batchesPastBudget = engine.memory().batchesPastBudget;
    if (engine.abortReason() && !summary_.error)
      summary_.error = "run aborted: " + *engine.abortReason();
    summary_.engine = engine.stats();
    summary_.dedups = engine.dedupProgress();
    summary_.filters = engine.filterProgress();
    if (admission_ && admission_->total() &&
        *admission_->total() > summary_.rows + summary_.resumedRows)
      summary_.notStarted = *admission_->total() - summary_.rows - summary_.resumedRows;
    for (uint32_t c = 0; c < plan_.calls.size(); ++c) {
      const CallLoad &load = engine.callLoad(c);
      summary_.calls[c].retries = load.retries;
      summary_.calls[c].skipped = load.skipped;
      summary_.calls[c].suppressedByBarrier = load.suppressedByBarrier;
      summary_.calls[c].cancelled = load.cancelled;
      summary_.calls[c].notNeeded = load.notNeeded;
      summary_.calls[c].splitBatches = load.splitBatches;
      summary_.calls[c].rescuedGrains = load.rescuedGrains;
      summary_.calls[c].failedAlone = load.failedAlone;
      summary_.calls[c].splitCause = engine.firstSplitCause(c);
    }
    summary_.executor = executor_.describe();
    summary_.executorCounters = executor_.counters();
    summary_.workers = executor_.workers();
    summary_.seconds = elapsed();
  }

  RunProgress progress() const {
    const LineageEngine &engine = *engine_;
    RunProgress now;
    now.total = admission_->total();
    for (uint32_t c = 0; c < plan_.calls.size(); ++c) {
      const CallLoad &load = engine.callLoad(c);
      now.calls.push_back(CallProgress{
          plan_.calls[c].name, load.sealed, load.waiting + load.ready + load.inFlight + load.sealed,
          summary_.calls[c].batches, summary_.calls[c].grains, plan_.calls[c].options.batch});
    }
    now.admitted = engine.stats().rootsAdmitted;
    now.finished = summary_.rows;
    now.written = summary_.written;
    now.failed = summary_.failed;
    now.unfinished = summary_.unfinished;
    now.doneEarlier = summary_.resumedRows;
    now.failedEarlier = summary_.resumedFailed;
    now.grainsRun = engine.stats().grainsRun;
    now.seconds = elapsed();
    return now;
  }

  double elapsed() const { return secondsAt(SteadyClock::now()); }
  double secondsAt(SteadyClock::time_point at) const {
    return std::chrono::duration<double>(at - start_).count();
  }

  const plan::Plan &plan_;
  const OperatorRegistry &registry_;
  BatchExecutor &executor_;
  const RunOptions &options_;
  const SteadyClock::time_point start_ = SteadyClock::now();
  RunSummary summary_;
  std::optional<LineageEngine> engine_;
  std::unique_ptr<RunJournal> journal_;
  std::optional<CrashWitness> crashWitness_;
  std::optional<Admission> admission_;
  std::optional<Outputs> outputs_;
  CallDeadlines deadlines_;
  std::optional<AutomaticReplicas> replicas_;
  /// Whether the values of the batch being committed are kept for a resume: its grains took
  /// at least kKeepingCostPerGrain seconds each (a reference, an encoding, a write and a read
  /// cost a few microseconds; a resume computes only the rows in flight at the stop again).
  bool batchWorthKeeping_ = true;
  static constexpr double kKeepingCostPerGrain = 10e-6;
  static constexpr size_t kBytesHeldPoints = 2000;
  double bytesInterval_ = 0.1;
};

} // namespace

RunSummary runPlan(const plan::Plan &plan, const OperatorRegistry &registry,
                   BatchExecutor &executor, const RunOptions &options) {
  return Run(plan, registry, executor, options).execute();
}

} // namespace orch::runtime
