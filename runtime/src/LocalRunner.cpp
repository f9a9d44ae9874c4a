// The embedded runtime: engine on the calling thread, operator batches on worker threads.
#include "orch/runtime/LocalRunner.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

namespace orch::runtime {
namespace {

using Clock = std::chrono::steady_clock;

struct Job {
  Batch batch;
  uint32_t instance = 0;
};

struct Finished {
  uint32_t call = 0;
  uint32_t instance = 0;
  BatchReport report;
  double seconds = 0;
};

/// Operator instances ("replicas") of each Call; each is used by one batch at a time and
/// created on first use by the worker thread that runs it.
struct Replicas {
  OperatorConfig config;
  const OperatorFactory *factory = nullptr;
  std::vector<std::unique_ptr<Operator>> instances;
  std::vector<uint32_t> idle;
};

class WorkerPool {
public:
  WorkerPool(unsigned threads, std::vector<Replicas> &replicas) : replicas_(replicas) {
    for (unsigned t = 0; t < threads; ++t)
      threads_.emplace_back([this] { work(); });
  }

  ~WorkerPool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    jobReady_.notify_all();
    for (std::thread &thread : threads_)
      thread.join();
  }

  void submit(Job job) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      jobs_.push_back(std::move(job));
    }
    jobReady_.notify_one();
  }

  /// Waits until a batch finished or `deadline` passed; returns everything finished.
  std::vector<Finished> wait(Clock::time_point deadline) {
    std::unique_lock<std::mutex> lock(mutex_);
    finishedReady_.wait_until(lock, deadline, [this] { return !finished_.empty(); });
    std::vector<Finished> done(std::make_move_iterator(finished_.begin()),
                               std::make_move_iterator(finished_.end()));
    finished_.clear();
    return done;
  }

private:
  void work() {
    for (;;) {
      Job job;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        jobReady_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
        if (stopping_)
          return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      Finished finished = run(job);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        finished_.push_back(std::move(finished));
      }
      finishedReady_.notify_one();
    }
  }

  Finished run(const Job &job) {
    const Batch &batch = job.batch;
    Finished finished;
    finished.call = batch.call;
    finished.instance = job.instance;
    finished.report.batchId = batch.id;
    const Clock::time_point start = Clock::now();
    std::vector<OperatorRow> rows;
    rows.reserve(batch.grains.size());
    for (size_t i = 0; i < batch.grains.size(); ++i)
      rows.push_back(OperatorRow{batch.inputsOf(i), batch.grains[i].lineage});
    std::vector<RowResult> results;
    results.reserve(rows.size());
    try {
      Replicas &call = replicas_[batch.call];
      std::unique_ptr<Operator> &instance = call.instances[job.instance];
      if (!instance)
        instance = (*call.factory)(call.config);
      instance->process(rows, results);
    } catch (const std::exception &error) {
      finished.report.batchError = error.what();
    } catch (...) {
      finished.report.batchError = "unknown exception";
    }
    if (!finished.report.batchError) {
      finished.report.grains.reserve(results.size());
      for (size_t i = 0; i < results.size(); ++i) {
        // Extra results are reported against the last grain: the engine rejects the batch.
        const BatchGrain &grain = batch.grains[std::min(i, batch.grains.size() - 1)];
        finished.report.grains.push_back(GrainReport{grain.grain, grain.generation, results[i].kind,
                                                     std::move(results[i].value),
                                                     std::move(results[i].message)});
      }
    }
    finished.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    return finished;
  }

  std::vector<Replicas> &replicas_;
  std::mutex mutex_;
  std::condition_variable jobReady_, finishedReady_;
  std::deque<Job> jobs_;
  std::deque<Finished> finished_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

std::string describeSink(const plan::PlanSink &sink, size_t index) {
  return "sink " + std::to_string(index) + " (" + sink.op + ")";
}

} // namespace

RunSummary runLocally(const plan::Plan &plan, const OperatorRegistry &registry,
                      const RunOptions &options) {
  RunSummary summary;
  const Clock::time_point start = Clock::now();
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

  std::vector<Replicas> replicas;
  for (uint32_t c = 0; c < plan.calls.size(); ++c) {
    const plan::PlanCall &call = plan.calls[c];
    Replicas pool{OperatorConfig(call.name, call.op, call.constants, engine.callInputLabels(c)),
                  registry.transform(call.op),
                  {},
                  {}};
    const uint32_t count = static_cast<uint32_t>(std::max<int64_t>(1, call.options.replicas));
    pool.instances.resize(count);
    for (uint32_t i = count; i-- > 0;)
      pool.idle.push_back(i);
    replicas.push_back(std::move(pool));
    summary.calls.push_back(CallSummary{call.name, 0, 0, call.options.batch, 0});
  }
  const unsigned threads = std::max(1u, options.threads);
  WorkerPool pool(threads, replicas);
  summary.started = true;
  // Outstanding batches and their deadlines (Calls with a timeout only).
  std::map<uint64_t, Clock::time_point> deadlines;
  std::map<uint64_t, uint32_t> deadlineCalls;
  unsigned busy = 0;
  size_t currentSource = 0;

  auto deliver = [&](std::vector<RootResult> roots) {
    for (RootResult &root : roots) {
      ++summary.rows;
      for (const SinkRow &row : root.rows) {
        if (row.status != RowStatus::Written)
          continue;
        try {
          sinks[row.sink]->write(row.values);
          ++summary.sinkRows;
        } catch (const std::exception &error) {
          if (!summary.error)
            summary.error = describeSink(plan.sinks[row.sink], row.sink) + ": " + error.what();
        }
      }
      switch (root.status) {
      case RootStatus::Written:
        ++summary.written;
        break;
      case RootStatus::Dropped:
        ++summary.dropped;
        break;
      case RootStatus::Failed:
        ++summary.failed;
        break;
      }
      if (options.onRootFinished)
        options.onRootFinished(root);
    }
  };

  for (;;) {
    // Admit lazily, source after source, while the engine has room.
    while (currentSource < sources.size() && engine.canAdmit()) {
      std::optional<SourceRow> row;
      try {
        row = sources[currentSource]->next();
      } catch (const std::exception &error) {
        row = SourceRow{std::nullopt, error.what()};
      }
      if (!row) {
        ++currentSource;
        continue;
      }
      if (row->value)
        engine.admitRoot(static_cast<uint32_t>(currentSource), std::move(*row->value));
      else
        engine.admitFailedRow(static_cast<uint32_t>(currentSource), row->error);
    }
    if (currentSource == sources.size())
      engine.closeAdmission();
    // Work-conserving dispatch: every free thread takes whatever is ready now.
    while (busy < threads) {
      std::optional<Batch> batch =
          engine.reserveBatch([&](uint32_t call) { return !replicas[call].idle.empty(); });
      if (!batch)
        break;
      const uint32_t call = batch->call;
      const uint32_t instance = replicas[call].idle.back();
      replicas[call].idle.pop_back();
      ++busy;
      const int64_t timeout = plan.calls[call].options.timeoutNanoseconds;
      if (timeout > 0) {
        deadlines[batch->id] = Clock::now() + std::chrono::nanoseconds(timeout);
        deadlineCalls[batch->id] = call;
      }
      summary.calls[call].batches += 1;
      summary.calls[call].grains += batch->grains.size();
      pool.submit(Job{std::move(*batch), instance});
    }
    deliver(engine.takeFinishedRoots());
    if (engine.complete() && busy == 0)
      break;
    if (busy == 0) {
      if (engine.canAdmit() && currentSource < sources.size())
        continue;
      summary.error = engine.deadlockReport().value_or(
          "the run stopped with unfinished rows and nothing to run");
      break;
    }
    Clock::time_point wake = Clock::now() + std::chrono::seconds(1);
    for (const auto &[id, deadline] : deadlines)
      wake = std::min(wake, deadline);
    for (Finished &finished : pool.wait(wake)) {
      const uint64_t id = finished.report.batchId;
      deadlines.erase(id);
      deadlineCalls.erase(id);
      summary.calls[finished.call].busySeconds += finished.seconds;
      replicas[finished.call].idle.push_back(finished.instance);
      --busy;
      engine.commit(finished.report);
    }
    const Clock::time_point now = Clock::now();
    for (auto it = deadlines.begin(); it != deadlines.end();) {
      if (it->second > now) {
        ++it;
        continue;
      }
      // The thread stays busy until the operator returns; its late report is then stale.
      const plan::PlanCall &call = plan.calls[deadlineCalls[it->first]];
      engine.failBatch(it->first, "timed out after " + plan::formatStaticValue(plan::Duration{
                                                           call.options.timeoutNanoseconds}));
      deadlineCalls.erase(it->first);
      it = deadlines.erase(it);
    }
  }
  deliver(engine.takeFinishedRoots());
  for (size_t s = 0; s < sinks.size(); ++s) {
    try {
      sinks[s]->close();
    } catch (const std::exception &error) {
      if (!summary.error)
        summary.error = describeSink(plan.sinks[s], s) + ": " + error.what();
    }
  }
  if (engine.abortReason() && !summary.error)
    summary.error = "run aborted: " + *engine.abortReason();
  summary.engine = engine.stats();
  summary.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return summary;
}

} // namespace orch::runtime
