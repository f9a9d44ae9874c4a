// A queue of jobs for worker threads: push on one thread, pop (blocking) on others, close to
// release every waiting thread. The in-process executor's threads and a worker process's
// replica threads take their batches from one.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>

namespace orch::runtime {

template <typename Job> class JobQueue {
public:
  void push(Job job) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      jobs_.push_back(std::move(job));
    }
    ready_.notify_one();
  }

  /// The next job, waiting for one; nullopt once the queue is closed (queued jobs are dropped).
  std::optional<Job> pop() {
    std::unique_lock<std::mutex> lock(mutex_);
    ready_.wait(lock, [this] { return closed_ || !jobs_.empty(); });
    if (closed_)
      return std::nullopt;
    Job job = std::move(jobs_.front());
    jobs_.pop_front();
    return job;
  }

  void close() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      closed_ = true;
    }
    ready_.notify_all();
  }

private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Job> jobs_;
  bool closed_ = false;
};

} // namespace orch::runtime
