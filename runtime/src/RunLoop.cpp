// The run loop shared by every executor: admission, dispatch, commit, timeouts, outputs.
#include "orch/runtime/RunLoop.h"

#include <algorithm>
#include <unordered_map>

namespace orch::runtime {
namespace {

std::string describeSink(const plan::PlanSink &sink, size_t index) {
  return "sink " + std::to_string(index) + " (" + sink.op + ")";
}

/// Sources read lazily, one after the other, into the engine.
class Admission {
public:
  explicit Admission(std::vector<std::unique_ptr<RowSource>> sources)
      : sources_(std::move(sources)) {
    uint64_t rows = 0;
    for (const auto &source : sources_) {
      std::optional<uint64_t> count = source->total();
      if (!count)
        return;
      rows += *count;
    }
    total_ = rows;
  }

  /// `onAdmitted(admission)` for each admitted row.
  template <typename OnAdmitted> void admit(LineageEngine &engine, OnAdmitted &&onAdmitted) {
    while (current_ < sources_.size() && engine.canAdmit()) {
      std::optional<SourceRow> row;
      try {
        row = sources_[current_]->next();
      } catch (const std::exception &error) {
        row = SourceRow{std::nullopt, error.what()};
      }
      if (!row) {
        ++current_;
        continue;
      }
      if (row->value)
        onAdmitted(engine.admitRoot(static_cast<uint32_t>(current_), std::move(*row->value)));
      else
        onAdmitted(engine.admitFailedRow(static_cast<uint32_t>(current_), row->error));
    }
    if (exhausted())
      engine.closeAdmission();
  }

  bool exhausted() const { return current_ == sources_.size(); }
  std::optional<uint64_t> total() const { return total_; }

private:
  std::vector<std::unique_ptr<RowSource>> sources_;
  std::optional<uint64_t> total_;
  size_t current_ = 0;
};

/// Writes finished roots to the sinks and keeps the account.
class Outputs {
public:
  Outputs(const plan::Plan &plan, std::vector<std::unique_ptr<RowSink>> sinks,
          const RunOptions &options, RunSummary &summary)
      : plan_(plan), sinks_(std::move(sinks)), options_(options), summary_(summary) {}

  void deliver(std::vector<RootResult> roots, double now) {
    for (RootResult &root : roots) {
      ++summary_.rows;
      if (options_.recorder)
        options_.recorder->rootFinished(root, now);
      for (const SinkRow &row : root.rows) {
        if (row.status != RowStatus::Written)
          continue;
        try {
          sinks_[row.sink]->write(row.values);
          ++summary_.sinkRows;
        } catch (const std::exception &error) {
          noteError(describeSink(plan_.sinks[row.sink], row.sink) + ": " + error.what());
        }
      }
      switch (root.status) {
      case RootStatus::Written:
        ++summary_.written;
        break;
      case RootStatus::Dropped:
        ++summary_.dropped;
        break;
      case RootStatus::Failed:
        ++summary_.failed;
        break;
      }
      if (options_.onRootFinished)
        options_.onRootFinished(root);
    }
  }

  void close() {
    for (size_t s = 0; s < sinks_.size(); ++s) {
      try {
        sinks_[s]->close();
      } catch (const std::exception &error) {
        noteError(describeSink(plan_.sinks[s], s) + ": " + error.what());
      }
    }
  }

private:
  void noteError(std::string message) {
    if (!summary_.error)
      summary_.error = std::move(message);
  }

  const plan::Plan &plan_;
  std::vector<std::unique_ptr<RowSink>> sinks_;
  const RunOptions &options_;
  RunSummary &summary_;
};

/// Timeouts of outstanding batches of Calls with a `timeout`: each counts from the moment its
/// batch started to run (the executor says when), not from dispatch.
class CallDeadlines {
public:
  explicit CallDeadlines(const plan::Plan &plan) : plan_(plan) {}

  void dispatched(const Batch &batch) {
    if (plan_.calls[batch.call].options.timeoutNanoseconds > 0)
      batches_[batch.id] = Entry{batch.call, false, {}};
  }
  void started(uint64_t batchId, SteadyClock::time_point at) {
    auto found = batches_.find(batchId);
    if (found == batches_.end() || found->second.running)
      return;
    found->second.running = true;
    found->second.deadline =
        at + std::chrono::nanoseconds(plan_.calls[found->second.call].options.timeoutNanoseconds);
  }
  void ended(uint64_t batchId) { batches_.erase(batchId); }

  SteadyClock::time_point nearest(SteadyClock::time_point latest) const {
    for (const auto &[id, entry] : batches_)
      if (entry.running)
        latest = std::min(latest, entry.deadline);
    return latest;
  }

  /// Removes and returns the running batches past their deadline, with their Calls.
  std::vector<std::pair<uint64_t, uint32_t>> expired(SteadyClock::time_point now) {
    std::vector<std::pair<uint64_t, uint32_t>> late;
    for (auto it = batches_.begin(); it != batches_.end();) {
      if (it->second.running && it->second.deadline <= now) {
        late.emplace_back(it->first, it->second.call);
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
    bool running;
    SteadyClock::time_point deadline;
  };
  const plan::Plan &plan_;
  std::unordered_map<uint64_t, Entry> batches_;
};

} // namespace

RunSummary runPlan(const plan::Plan &plan, const OperatorRegistry &registry,
                   BatchExecutor &executor, const RunOptions &options) {
  RunSummary summary;
  const SteadyClock::time_point start = SteadyClock::now();
  if (auto problem = checkPlanRunnable(plan)) {
    summary.error = "the plan cannot run: " + *problem;
    return summary;
  }
  std::vector<std::string> missing = registry.missingFor(plan);
  if (!missing.empty()) {
    std::string list;
    for (const std::string &name : missing)
      list += (list.empty() ? "" : ", ") + name;
    summary.error = "no implementation for " + list;
    return summary;
  }
  LineageEngine engine(plan, options.engine);

  // Sources and sinks are opened before anything runs: a bad path stops the run at once.
  std::vector<std::unique_ptr<RowSource>> sources;
  std::vector<std::unique_ptr<RowSink>> sinks;
  try {
    for (const plan::PlanSource &source : plan.sources)
      sources.push_back((*registry.source(source.op))(
          OperatorConfig(source.op, source.op, source.constants, {})));
    for (size_t s = 0; s < plan.sinks.size(); ++s) {
      const plan::PlanSink &sink = plan.sinks[s];
      sinks.push_back((*registry.sink(sink.op))(
          OperatorConfig(describeSink(sink, s), sink.op, sink.constants, sink.labels)));
    }
  } catch (const std::exception &error) {
    summary.error = error.what();
    return summary;
  }
  std::vector<std::vector<std::string>> inputLabels;
  for (uint32_t c = 0; c < plan.calls.size(); ++c) {
    inputLabels.push_back(engine.callInputLabels(c));
    CallSummary call;
    call.name = plan.calls[c].name;
    call.batchLimit = plan.calls[c].options.batch;
    summary.calls.push_back(std::move(call));
  }
  if (auto problem = executor.start(plan, inputLabels)) {
    summary.error = *problem;
    return summary;
  }
  summary.started = true;

  Admission admission(std::move(sources));
  auto elapsed = [&] { return std::chrono::duration<double>(SteadyClock::now() - start).count(); };
  auto admitted = [&](uint64_t index) {
    if (options.recorder)
      options.recorder->rootAdmitted(index, elapsed());
  };
  auto progress = [&] {
    RunProgress now;
    now.total = admission.total();
    for (uint32_t c = 0; c < plan.calls.size(); ++c) {
      const CallLoad &load = engine.callLoad(c);
      now.calls.push_back(CallProgress{
          plan.calls[c].name, load.sealed, load.waiting + load.ready + load.inFlight + load.sealed,
          summary.calls[c].batches, summary.calls[c].grains, plan.calls[c].options.batch});
    }
    now.admitted = engine.stats().rootsAdmitted;
    now.finished = summary.rows;
    now.written = summary.written;
    now.failed = summary.failed;
    now.grainsRun = engine.stats().grainsRun;
    now.seconds = elapsed();
    return now;
  };
  Outputs outputs(plan, std::move(sinks), options, summary);
  CallDeadlines deadlines(plan);
  SteadyClock::time_point nextProgress = start;
  for (;;) {
    if (options.stopRequested && options.stopRequested->load()) {
      // Nothing more is admitted or dispatched; batches still running are abandoned by the
      // executor's stop; the unfinished rows are failed as "interrupted".
      summary.error =
          "interrupted: " + std::to_string(engine.liveRoots()) + " source rows were unfinished";
      engine.interrupt("the run was interrupted");
      break;
    }
    admission.admit(engine, admitted);
    // Work-conserving dispatch: whatever is ready goes to whoever can take it now.
    while (std::optional<Batch> batch =
               engine.reserveBatch([&](uint32_t call) { return executor.canRun(call); })) {
      const uint32_t call = batch->call;
      deadlines.dispatched(*batch);
      if (options.recorder)
        options.recorder->batchDispatched(*batch, elapsed());
      summary.calls[call].batches += 1;
      summary.calls[call].grains += batch->grains.size();
      for (const BatchGrain &grain : batch->grains)
        if (grain.lineage.root != batch->grains.front().lineage.root) {
          ++summary.calls[call].mixedBatches;
          break;
        }
      executor.submit(std::move(*batch));
    }
    outputs.deliver(engine.takeFinishedRoots(), elapsed());
    if (options.onProgress && SteadyClock::now() >= nextProgress) {
      nextProgress = SteadyClock::now() + options.progressInterval;
      options.onProgress(progress());
    }
    // After an abort the batches still out are abandoned: their reports could change nothing.
    if (engine.complete() && (executor.inFlight() == 0 || engine.abortReason()))
      break;
    if (executor.inFlight() == 0 && !engine.hasReadyWork()) {
      if (engine.canAdmit() && !admission.exhausted())
        continue;
      summary.error = engine.deadlockReport().value_or(
          "the run stopped with unfinished rows and nothing to run");
      break;
    }
    const SteadyClock::time_point wake =
        deadlines.nearest(SteadyClock::now() + std::chrono::milliseconds(200));
    for (ExecutorEvent &event : executor.wait(wake)) {
      if (event.kind == ExecutorEvent::Kind::Started) {
        deadlines.started(event.batchId, event.startedAt);
        continue;
      }
      if (event.kind == ExecutorEvent::Kind::Lost) {
        deadlines.ended(event.batchId);
        engine.failBatch(event.batchId, event.reason);
        if (options.recorder)
          options.recorder->batchFinished(event.batchId, elapsed(), 0, "", "lost");
        continue;
      }
      deadlines.ended(event.report.batchId);
      if (event.call < summary.calls.size())
        summary.calls[event.call].busySeconds += event.seconds;
      const CommitResult committed = engine.commit(event.report);
      if (options.recorder)
        options.recorder->batchFinished(event.report.batchId, elapsed(), event.seconds, event.place,
                                        commitStatusName(committed.status));
    }
    for (const auto &[batchId, call] : deadlines.expired(SteadyClock::now())) {
      const std::string why =
          "call '" + plan.calls[call].name + "' timed out after " +
          plan::formatStaticValue(plan::Duration{plan.calls[call].options.timeoutNanoseconds});
      // The replica running it is stopped and replaced; the batch runs again elsewhere.
      executor.abandon(batchId, why);
      engine.failBatch(batchId, why);
      if (options.recorder)
        options.recorder->batchFinished(batchId, elapsed(), 0, "", "timed-out");
    }
  }
  executor.stop();
  outputs.deliver(engine.takeFinishedRoots(), elapsed());
  if (options.onProgress)
    options.onProgress(progress());
  outputs.close();
  if (engine.abortReason() && !summary.error)
    summary.error = "run aborted: " + *engine.abortReason();
  summary.engine = engine.stats();
  for (uint32_t c = 0; c < plan.calls.size(); ++c) {
    summary.calls[c].retries = engine.callLoad(c).retries;
    summary.calls[c].skipped = engine.callLoad(c).skipped;
    summary.calls[c].suppressedByBarrier = engine.callLoad(c).suppressedByBarrier;
    summary.calls[c].cancelled = engine.callLoad(c).cancelled;
  }
  summary.executor = executor.describe();
  summary.seconds = std::chrono::duration<double>(SteadyClock::now() - start).count();
  return summary;
}

} // namespace orch::runtime
