// The in-process executor: operator batches on worker threads, one operator instance per
// replica, created on first use by the thread that runs it.
#include "orch/runtime/LocalRunner.h"

#include "orch/runtime/GpuPlacement.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

namespace orch::runtime {
namespace {

using Clock = SteadyClock;

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
  /// Per instance: its configuration when it differs (a GPU replica's device).
  std::vector<OperatorConfig> instanceConfigs;
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
    const Clock::time_point start = Clock::now();
    Replicas &call = replicas_[job.batch.call];
    Finished finished;
    finished.call = job.batch.call;
    finished.instance = job.instance;
    finished.report = runOperatorBatch(
        call.instances[job.instance], *call.factory,
        call.instanceConfigs.empty() ? call.config : call.instanceConfigs[job.instance], job.batch);
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

/// Hands batches to the pool while the Call has an idle replica.
class ThreadExecutor : public BatchExecutor {
public:
  ThreadExecutor(const OperatorRegistry &registry, unsigned threads,
                 std::vector<int64_t> gpuDevices)
      : registry_(registry), threads_(std::max(1u, threads)), gpuDevices_(std::move(gpuDevices)) {}

  std::optional<std::string>
  start(const plan::Plan &plan, const std::vector<std::vector<std::string>> &inputLabels) override {
    for (uint32_t c = 0; c < plan.calls.size(); ++c) {
      const plan::PlanCall &call = plan.calls[c];
      const OperatorFactory *factory = registry_.transform(call.op);
      if (!factory)
        return "no implementation for operator " + call.op;
      Replicas pool{OperatorConfig(call.name, call.op, call.constants, inputLabels[c])
                        .withOptions(call.options),
                    {},
                    factory,
                    {},
                    {}};
      const uint32_t count = static_cast<uint32_t>(std::max<int64_t>(1, call.options.replicas));
      pool.instances.resize(count);
      if (call.gpu && call.options.gpus > 0 && !gpuDevices_.empty())
        for (uint32_t i = 0; i < count; ++i)
          pool.instanceConfigs.push_back(OperatorConfig(pool.config)
                                             .withGpuDevice(gpuDeviceForReplica(
                                                 gpuDevices_, call.options.gpus, gpuReplicas_++)));
      for (uint32_t i = count; i-- > 0;)
        pool.idle.push_back(i);
      replicas_.push_back(std::move(pool));
    }
    pool_ = std::make_unique<WorkerPool>(threads_, replicas_);
    return std::nullopt;
  }

  bool canRun(uint32_t call) const override {
    return busy_ < threads_ && !replicas_[call].idle.empty();
  }

  void submit(Batch batch) override {
    Replicas &replicas = replicas_[batch.call];
    const uint32_t instance = replicas.idle.back();
    replicas.idle.pop_back();
    ++busy_;
    pool_->submit(Job{std::move(batch), instance});
  }

  size_t inFlight() const override { return busy_; }

  std::vector<ExecutorEvent> wait(SteadyClock::time_point deadline) override {
    std::vector<ExecutorEvent> events;
    for (Finished &finished : pool_->wait(deadline)) {
      replicas_[finished.call].idle.push_back(finished.instance);
      --busy_;
      ExecutorEvent event;
      event.call = finished.call;
      event.report = std::move(finished.report);
      event.seconds = finished.seconds;
      event.place =
          replicas_[finished.call].config.name() + "/replica " + std::to_string(finished.instance);
      events.push_back(std::move(event));
    }
    return events;
  }

  void stop() override { pool_.reset(); }

  std::string describe() const override {
    return std::to_string(threads_) + " worker threads in this process";
  }

private:
  const OperatorRegistry &registry_;
  unsigned threads_;
  std::vector<int64_t> gpuDevices_;
  uint32_t gpuReplicas_ = 0;
  unsigned busy_ = 0;
  std::vector<Replicas> replicas_;
  std::unique_ptr<WorkerPool> pool_;
};

} // namespace

std::unique_ptr<BatchExecutor> makeThreadExecutor(const OperatorRegistry &registry,
                                                  unsigned threads,
                                                  std::vector<int64_t> gpuDevices) {
  return std::make_unique<ThreadExecutor>(registry, threads, std::move(gpuDevices));
}

RunSummary runLocally(const plan::Plan &plan, const OperatorRegistry &registry,
                      const RunOptions &options, unsigned threads) {
  std::unique_ptr<BatchExecutor> executor = makeThreadExecutor(registry, threads);
  return runPlan(plan, registry, *executor, options);
}

} // namespace orch::runtime
