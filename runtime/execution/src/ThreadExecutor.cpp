// The in-process executor: operator batches on worker threads, one operator instance per
// replica, created on first use by the thread that runs it.
#include "orch/runtime/execution/ThreadExecutor.h"

#include "orch/runtime/execution/GpuPlacement.h"
#include "orch/runtime/operators/ExternalOperator.h"

#include "orch/runtime/execution/JobQueue.h"
#include "orch/runtime/operators/ChildProcess.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>

#include <unistd.h>

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

/// PoolState::Running::thread of a concurrent Call's batch: it holds no pool thread.
constexpr uint32_t kNoThread = UINT32_MAX;

struct Started {
  uint64_t batchId = 0;
  Clock::time_point at;
};

/// Operator instances ("replicas") of each Call; each is used by one batch at a time and
/// created on first use by the worker thread that runs it.
struct Replicas {
  OperatorConfig config;
  /// Per instance: its configuration (a GPU replica's device). On the heap: the threads running
  /// batches hold references while automatic replicas add instances.
  std::vector<std::unique_ptr<OperatorConfig>> instanceConfigs;
  const OperatorFactory *factory = nullptr;
  /// An instance is held by the thread running a batch on it, and back here between batches.
  std::vector<std::unique_ptr<Operator>> instances;
  std::vector<uint32_t> idle;
  /// Instances not taken away (automatic replicas): a retired one keeps its slot, empty.
  uint32_t live = 0;
  /// An instance added for automatic replicas could not start: none is added again.
  bool startFailed = false;
  /// A concurrent Call (`in_flight` > 1): its instances stay here and take batches without a
  /// pool thread (Operator::start); `idle` lists each instance once per batch it may take.
  bool concurrent = false;
};

/// What the pool's threads share. A thread abandoned in a batch that ran past its timeout
/// keeps this alive until its operator returns (if ever); it then discards its result.
struct PoolState {
  std::mutex mutex;
  std::condition_variable eventReady;
  /// Set (under `mutex`) when a batch started or finished, cleared when the run loop takes
  /// them: what the loop looks at for a moment before it sleeps (WorkerPool::wait).
  std::atomic<bool> eventsPosted{false};
  JobQueue<Job> jobs;
  std::vector<Finished> finished;
  std::vector<Started> started;
  struct Running {
    uint32_t thread = 0;
    bool abandoned = false;
  };
  std::unordered_map<uint64_t, Running> running;
  bool stopping = false;
  std::vector<Replicas> replicas;
  /// Replicas added while the run goes (automatic replicas) whose operator process started in
  /// the background (declared operators): Call and instance, ready for batches; and those that
  /// could not start, with why.
  std::vector<std::pair<uint32_t, uint32_t>> startedInstances;
  struct FailedStart {
    uint32_t call;
    std::string why;
  };
  std::vector<FailedStart> failedStarts;
};

class WorkerPool {
public:
  WorkerPool(unsigned threads, std::shared_ptr<PoolState> state) : state_(std::move(state)) {
    for (uint32_t t = 0; t < threads; ++t)
      threads_.emplace_back(work, state_, t);
  }

  ~WorkerPool() {
    std::vector<uint32_t> busy;
    {
      std::lock_guard<std::mutex> lock(state_->mutex);
      state_->stopping = true;
      // Batches still running are abandoned: a stopped run does not wait for its operators.
      for (auto &[id, running] : state_->running) {
        // An abandoned thread's slot already holds its replacement; a concurrent Call's batch
        // holds no thread (ThreadExecutor::stopConcurrent drops it).
        if (running.abandoned || running.thread == kNoThread)
          continue;
        running.abandoned = true;
        busy.push_back(running.thread);
      }
    }
    state_->jobs.close();
    for (uint32_t t : busy)
      threads_[t].detach();
    for (std::thread &thread : threads_)
      if (thread.joinable())
        thread.join();
  }

  void submit(Job job) { state_->jobs.push(std::move(job)); }

  static constexpr std::chrono::microseconds kLookBeforeSleeping{50};

  /// Waits until a batch started or finished, or `deadline` passed.
  void wait(Clock::time_point deadline, std::vector<Started> &started,
            std::vector<Finished> &finished) {
    // A batch of a trivial operator comes back in microseconds: sooner than the loop's thread
    // could sleep and be woken again (two system calls here and one on the thread that woke
    // it, per batch). It looks for a moment first, giving its core away meanwhile.
    const Clock::time_point lookUntil = std::min(deadline, Clock::now() + kLookBeforeSleeping);
    while (!state_->eventsPosted.load(std::memory_order_acquire) && Clock::now() < lookUntil)
      std::this_thread::yield();
    std::unique_lock<std::mutex> lock(state_->mutex);
    state_->eventReady.wait_until(
        lock, deadline, [this] { return !state_->finished.empty() || !state_->started.empty(); });
    started.swap(state_->started);
    finished.swap(state_->finished);
    state_->eventsPosted.store(false, std::memory_order_relaxed);
  }

  /// Leaves the thread running `batchId` to its operator and starts another in its place.
  /// False if the batch is not running (it finished meanwhile: its report is on its way).
  bool abandon(uint64_t batchId) {
    uint32_t thread;
    {
      std::lock_guard<std::mutex> lock(state_->mutex);
      auto found = state_->running.find(batchId);
      if (found == state_->running.end())
        return false;
      found->second.abandoned = true;
      thread = found->second.thread;
    }
    threads_[thread].detach();
    threads_[thread] = std::thread(work, state_, thread);
    return true;
  }

private:
  static void work(std::shared_ptr<PoolState> state, uint32_t self) {
    while (std::optional<Job> next = state->jobs.pop()) {
      Job job = std::move(*next);
      std::unique_ptr<Operator> instance;
      Replicas *replicas;
      const OperatorConfig *config;
      {
        std::lock_guard<std::mutex> lock(state->mutex);
        // A pool being stopped does not start what it took just before.
        if (state->stopping)
          return;
        state->running[job.batch.id] = PoolState::Running{self, false};
        state->started.push_back(Started{job.batch.id, Clock::now()});
        state->eventsPosted.store(true, std::memory_order_release);
        replicas = &state->replicas[job.batch.call];
        instance = std::move(replicas->instances[job.instance]);
        config = replicas->instanceConfigs[job.instance].get();
      }
      state->eventReady.notify_one();
      const Clock::time_point start = Clock::now();
      Finished finished;
      finished.call = job.batch.call;
      finished.instance = job.instance;
      finished.report = runOperatorBatch(instance, *replicas->factory, *config, job.batch);
      finished.seconds = std::chrono::duration<double>(Clock::now() - start).count();
      {
        std::lock_guard<std::mutex> lock(state->mutex);
        auto running = state->running.find(job.batch.id);
        const bool abandoned = running->second.abandoned;
        state->running.erase(running);
        if (abandoned)
          return;
        replicas->instances[job.instance] = std::move(instance);
        state->finished.push_back(std::move(finished));
        state->eventsPosted.store(true, std::memory_order_release);
      }
      state->eventReady.notify_one();
    }
  }

  std::shared_ptr<PoolState> state_;
  std::vector<std::thread> threads_;
};

/// Hands batches to the pool while the Call has an idle replica.
class ThreadExecutor : public BatchExecutor {
public:
  ThreadExecutor(const OperatorRegistry &registry, unsigned threads,
                 std::vector<int64_t> gpuDevices, std::function<void(const std::string &)> log,
                 std::vector<uint64_t> gpuMemory)
      : registry_(registry), threads_(std::max(1u, threads)), gpuDevices_(std::move(gpuDevices)),
        gpuPlacer_(gpuDevices_, gpuMemory),
        gpuMemory_(knownGpuMemory(gpuMemory, gpuDevices_.size())), log_(std::move(log)),
        state_(std::make_shared<PoolState>()) {}

  ~ThreadExecutor() override { stop(); }

  std::optional<std::string>
  start(const plan::Plan &plan, const std::vector<std::vector<std::string>> &inputLabels) override {
    std::vector<Replicas> &replicas = state_->replicas;
    plan_ = &plan;
    startupSeconds_.assign(plan.calls.size(), 0);
    factories_.emplace(plan, registry_);
    for (uint32_t c = 0; c < plan.calls.size(); ++c) {
      const plan::PlanCall &call = plan.calls[c];
      const OperatorFactory *factory = factories_->forCall(c);
      if (!factory)
        return "no implementation for operator " + call.op;
      Replicas pool{OperatorConfig(call.name, call.op, call.constants, inputLabels[c])
                        .withOptions(call.options)
                        .withLog(log_),
                    {},
                    factory,
                    {},
                    {}};
      const uint32_t count = static_cast<uint32_t>(std::max<int64_t>(1, call.options.replicas));
      pool.instances.resize(count);
      const bool onGpus = call.gpu && call.options.gpus > 0 && !gpuDevices_.empty();
      for (uint32_t i = 0; i < count; ++i) {
        pool.instanceConfigs.push_back(
            std::make_unique<OperatorConfig>(OperatorConfig(pool.config).withReplica(i)));
        if (onGpus)
          pool.instanceConfigs.back()->withGpuDevice(
              gpuPlacer_.place(call.options.gpus, pool.instanceConfigs.back()->gpuMemoryBytes()));
      }
      pool.concurrent = call.options.inFlight > 1;
      for (uint32_t slot = 0; slot < (pool.concurrent ? call.options.inFlight : 1); ++slot)
        for (uint32_t i = count; i-- > 0;)
          pool.idle.push_back(i);
      pool.live = count;
      replicas.push_back(std::move(pool));
    }
    if (std::optional<std::string> problem = startEagerReplicas())
      return problem;
    pool_ = std::make_unique<WorkerPool>(threads_, state_);
    return std::nullopt;
  }

  std::optional<std::string> awaitStarted(const std::atomic<bool> *stop) override {
    // No batch runs yet: the instances are only touched here. They start together, so the
    // time until a Call's last one is ready is what one takes (for automatic replicas).
    try {
      for (uint32_t c = 0; c < state_->replicas.size(); ++c)
        for (std::unique_ptr<Operator> &instance : state_->replicas[c].instances)
          if (instance) {
            instance->awaitStarted(stop);
            startupSeconds_[c] =
                std::chrono::duration<double>(Clock::now() - startedEagerAt_).count();
          }
    } catch (const std::exception &error) {
      dropInstances();
      return std::string(error.what());
    }
    return std::nullopt;
  }

  // `idle` lists are only touched on the run loop's thread.
  bool canRun(uint32_t call) const override {
    const Replicas &replicas = state_->replicas[call];
    return (replicas.concurrent || busy_.size() - concurrentBusy_ < threads_) &&
           !replicas.idle.empty();
  }

  uint32_t batchSlots(uint32_t call) const override {
    const Replicas &replicas = state_->replicas[call];
    const uint32_t each = replicas.concurrent ? uint32_t(plan_->calls[call].options.inFlight) : 1;
    return std::min(replicas.live, threads_) * each;
  }

  /// Shared with the engine, but for a declared operator's: they go to its process.
  bool copiesInputs(uint32_t call) const override { return factories_->startsEagerly(call); }

  void submit(Batch batch) override {
    Replicas &replicas = state_->replicas[batch.call];
    const uint32_t instance = replicas.idle.back();
    replicas.idle.pop_back();
    busy_[batch.id] = {batch.call, instance};
    if (replicas.concurrent)
      startConcurrent(std::move(batch), instance);
    else
      pool_->submit(Job{std::move(batch), instance});
  }

  size_t inFlight() const override { return busy_.size(); }

  ReplicaCapacity replicaCapacity() const override {
    // Replicas share this process: the machine's memory is what they may be promised.
    return ReplicaCapacity{double(threads_), double(gpuDevices_.size()), 1,
                           uint64_t(::sysconf(_SC_PHYS_PAGES)) * uint64_t(::sysconf(_SC_PAGESIZE)),
                           gpuMemory_};
  }

  std::optional<uint32_t> replicaCount(uint32_t call) const override {
    return state_->replicas[call].live;
  }

  std::optional<uint32_t> setReplicas(uint32_t call, uint32_t count) override {
    // A replica runs on one thread at a time: more than the threads would only wait. A Call
    // one of whose added replicas could not start gets no more (it would fail again).
    count = std::min<uint32_t>(count, threads_);
    Replicas &pool = state_->replicas[call];
    if (pool.startFailed)
      count = std::min(count, pool.live);
    std::vector<std::unique_ptr<Operator>> retired;
    {
      std::lock_guard<std::mutex> lock(state_->mutex);
      while (pool.live < count) {
        // A new instance is made by the thread that first runs a batch on it; a declared
        // operator's starts its process now, in the background, and takes batches once it
        // said it started (no batch's time limit counts a model load).
        const uint32_t instance = uint32_t(pool.instances.size());
        pool.instances.emplace_back();
        pool.instanceConfigs.push_back(
            std::make_unique<OperatorConfig>(OperatorConfig(pool.config).withReplica(instance)));
        const plan::PlanCall &planCall = plan_->calls[call];
        if (planCall.gpu && planCall.options.gpus > 0 && !gpuDevices_.empty())
          pool.instanceConfigs.back()->withGpuDevice(gpuPlacer_.place(
              planCall.options.gpus, pool.instanceConfigs.back()->gpuMemoryBytes()));
        if (factories_->startsEagerly(call))
          startInBackground(call, instance);
        else
          pool.idle.push_back(instance);
        ++pool.live;
      }
      // Only an idle instance goes, and its operator (a model's process) with it.
      while (pool.live > count && pool.live > 1 && !pool.idle.empty()) {
        const uint32_t instance = pool.idle.back();
        pool.idle.pop_back();
        if (const OperatorConfig &config = *pool.instanceConfigs[instance]; config.gpuDevice() >= 0)
          gpuPlacer_.release(config.gpuDevice(), config.gpus(), config.gpuMemoryBytes());
        retired.push_back(std::move(pool.instances[instance]));
        --pool.live;
      }
    }
    // Outside the lock: a process told to shut down exits at once (a grace at most).
    retired.clear();
    return pool.live;
  }

  double startupSeconds(uint32_t call) const override { return startupSeconds_[call]; }

  std::vector<ExecutorEvent> wait(SteadyClock::time_point deadline) override {
    takeStartedInstances();
    std::vector<Started> started;
    std::vector<Finished> finished;
    pool_->wait(deadline, started, finished);
    std::vector<ExecutorEvent> events;
    for (const Started &start : started) {
      ExecutorEvent event;
      event.kind = ExecutorEvent::Kind::Started;
      event.batchId = start.batchId;
      event.startedAt = start.at;
      events.push_back(std::move(event));
    }
    for (Finished &done : finished) {
      release(done.report.batchId);
      ExecutorEvent event;
      event.call = done.call;
      event.report = std::move(done.report);
      event.seconds = done.seconds;
      event.place =
          state_->replicas[done.call].config.name() + "/replica " + std::to_string(done.instance);
      events.push_back(std::move(event));
    }
    return events;
  }

  void abandon(uint64_t batchId, const std::string &) override {
    if (abandonConcurrent(batchId)) {
      ++abandonedForTimeouts_;
      release(batchId);
      return;
    }
    // A batch that finished meanwhile reports as usual (the engine finds it stale).
    if (pool_->abandon(batchId)) {
      ++abandonedForTimeouts_;
      release(batchId);
    }
  }

  std::string placeOf(uint64_t batchId) const override {
    auto found = busy_.find(batchId);
    if (found == busy_.end())
      return {};
    return state_->replicas[found->second.first].config.name() + "/replica " +
           std::to_string(found->second.second);
  }

  void stop() override {
    stopStarting_ = true;
    for (std::thread &starter : starters_)
      if (starter.joinable())
        starter.join();
    pool_.reset();
    stopConcurrent();
    // Threads left in abandoned batches keep their operators' processes: they go now.
    killLeftoversOfChildProcesses();
  }

  std::string describe() const override {
    std::string text = std::to_string(threads_) + " worker threads in this process";
    if (abandonedForTimeouts_)
      text += ", " + std::to_string(abandonedForTimeouts_) +
              " abandoned in timed-out batches (replaced)";
    return text;
  }

private:
  /// Begins a batch of a concurrent Call on the run loop's thread (its instance is made here on
  /// first use); its operator answers from its own thread.
  void startConcurrent(Batch batch, uint32_t instance) {
    Replicas &replicas = state_->replicas[batch.call];
    const uint64_t id = batch.id;
    const uint32_t call = batch.call;
    const Clock::time_point start = Clock::now();
    {
      std::lock_guard<std::mutex> lock(state_->mutex);
      state_->running[id] = PoolState::Running{kNoThread, false};
      state_->started.push_back(Started{id, start});
    }
    ++concurrentBusy_;
    startOperatorBatch(replicas.instances[instance], *replicas.factory,
                       *replicas.instanceConfigs[instance], std::move(batch),
                       [state = state_, id, call, instance, start](BatchReport report) {
                         {
                           std::lock_guard<std::mutex> lock(state->mutex);
                           auto running = state->running.find(id);
                           if (running == state->running.end())
                             return;
                           const bool abandoned = running->second.abandoned;
                           state->running.erase(running);
                           if (abandoned || state->stopping)
                             return;
                           state->finished.push_back(Finished{
                               call, instance, std::move(report),
                               std::chrono::duration<double>(Clock::now() - start).count()});
                           state->eventsPosted.store(true, std::memory_order_release);
                         }
                         state->eventReady.notify_one();
                       });
  }

  /// A concurrent batch past its deadline: its answer, when it comes, is dropped (its operator
  /// ends it by the deadline itself; this is the backstop). False for other batches.
  bool abandonConcurrent(uint64_t batchId) {
    auto found = busy_.find(batchId);
    if (found == busy_.end() || !state_->replicas[found->second.first].concurrent)
      return false;
    std::lock_guard<std::mutex> lock(state_->mutex);
    auto running = state_->running.find(batchId);
    if (running == state_->running.end())
      return false;
    running->second.abandoned = true;
    return true;
  }

  /// Concurrent operators go with the run: what they still wait for is dropped.
  void stopConcurrent() {
    std::vector<std::unique_ptr<Operator>> stopped;
    {
      std::lock_guard<std::mutex> lock(state_->mutex);
      state_->stopping = true;
      for (Replicas &pool : state_->replicas)
        if (pool.concurrent)
          for (std::unique_ptr<Operator> &instance : pool.instances)
            stopped.push_back(std::move(instance));
    }
    // Outside the lock: an operator's thread may be answering (and take the lock) meanwhile.
    stopped.clear();
  }

  /// Replicas of declared operators start now, all at once (awaitStarted waits for them), so
  /// that a script that cannot load stops the run before any row is admitted. The first
  /// failure, or nullopt.
  std::optional<std::string> startEagerReplicas() {
    std::vector<Replicas> &replicas = state_->replicas;
    startedEagerAt_ = Clock::now();
    try {
      for (uint32_t c = 0; c < replicas.size(); ++c)
        if (factories_->startsEagerly(c))
          for (uint32_t i = 0; i < replicas[c].instances.size(); ++i)
            replicas[c].instances[i] = (*replicas[c].factory)(*replicas[c].instanceConfigs[i]);
    } catch (const std::exception &error) {
      dropInstances();
      return std::string(error.what());
    }
    return std::nullopt;
  }

  void dropInstances() {
    for (Replicas &pool : state_->replicas)
      for (std::unique_ptr<Operator> &instance : pool.instances)
        instance.reset();
  }

  /// Makes a declared operator's instance here (its process is spawned by this long-lived
  /// thread: a child dies with the thread that made it) and waits until it started on a thread
  /// of its own; the instance goes to startedInstances, or the failure to failedStarts. Called
  /// with the pool's mutex held.
  void startInBackground(uint32_t call, uint32_t instance) {
    Replicas &replicas = state_->replicas[call];
    std::unique_ptr<Operator> made;
    try {
      made = (*replicas.factory)(*replicas.instanceConfigs[instance]);
    } catch (const std::exception &error) {
      state_->failedStarts.push_back(PoolState::FailedStart{call, error.what()});
      return;
    }
    starters_.emplace_back(
        [state = state_, call, instance, made = std::move(made), stop = &stopStarting_]() mutable {
          try {
            made->awaitStarted(stop);
            std::lock_guard<std::mutex> lock(state->mutex);
            state->replicas[call].instances[instance] = std::move(made);
            state->startedInstances.emplace_back(call, instance);
          } catch (const std::exception &error) {
            std::lock_guard<std::mutex> lock(state->mutex);
            state->failedStarts.push_back(PoolState::FailedStart{call, error.what()});
          }
          state->eventReady.notify_one();
        });
  }

  /// Instances started in the background take batches from now on; one that could not start is
  /// not a replica any more (its Call keeps the others), and the log says why.
  void takeStartedInstances() {
    std::vector<std::pair<uint32_t, uint32_t>> ready;
    std::vector<PoolState::FailedStart> failed;
    {
      std::lock_guard<std::mutex> lock(state_->mutex);
      ready.swap(state_->startedInstances);
      failed.swap(state_->failedStarts);
    }
    for (const auto &[call, instance] : ready)
      state_->replicas[call].idle.push_back(instance);
    for (const PoolState::FailedStart &start : failed) {
      --state_->replicas[start.call].live;
      state_->replicas[start.call].startFailed = true;
      if (log_)
        log_("call '" + plan_->calls[start.call].name +
             "': a replica added for automatic replicas could not start (no more are added): " +
             start.why);
    }
  }

  /// The batch's replica is free again (a fresh instance is made if its thread was abandoned).
  void release(uint64_t batchId) {
    auto found = busy_.find(batchId);
    if (found == busy_.end())
      return;
    Replicas &replicas = state_->replicas[found->second.first];
    replicas.idle.push_back(found->second.second);
    if (replicas.concurrent)
      --concurrentBusy_;
    busy_.erase(found);
  }

  const OperatorRegistry &registry_;
  const plan::Plan *plan_ = nullptr;
  std::optional<CallFactories> factories_;
  std::vector<double> startupSeconds_;
  Clock::time_point startedEagerAt_;
  /// Threads starting declared operators' processes for added replicas; stopped with the run.
  std::vector<std::thread> starters_;
  std::atomic<bool> stopStarting_{false};
  unsigned threads_;
  std::vector<int64_t> gpuDevices_;
  GpuPlacer gpuPlacer_;
  /// The devices' memory, summed, for automatic replicas (0: not known).
  uint64_t gpuMemory_ = 0;
  std::function<void(const std::string &)> log_;
  std::shared_ptr<PoolState> state_;
  /// Batches handed to the pool: their Call and replica instance.
  std::unordered_map<uint64_t, std::pair<uint32_t, uint32_t>> busy_;
  std::unique_ptr<WorkerPool> pool_;
  /// Of busy_, batches of concurrent Calls (they hold no pool thread).
  size_t concurrentBusy_ = 0;
  uint64_t abandonedForTimeouts_ = 0;
};

} // namespace

std::unique_ptr<BatchExecutor> makeThreadExecutor(const OperatorRegistry &registry,
                                                  unsigned threads, std::vector<int64_t> gpuDevices,
                                                  std::function<void(const std::string &)> log,
                                                  std::vector<uint64_t> gpuMemory) {
  return std::make_unique<ThreadExecutor>(registry, threads, std::move(gpuDevices), std::move(log),
                                          std::move(gpuMemory));
}

RunSummary runOnThreads(const plan::Plan &plan, const OperatorRegistry &registry,
                        const RunOptions &options, unsigned threads) {
  std::unique_ptr<BatchExecutor> executor = makeThreadExecutor(registry, threads);
  return runPlan(plan, registry, *executor, options);
}

} // namespace orch::runtime
