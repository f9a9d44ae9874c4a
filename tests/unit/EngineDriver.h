// Test helper: drives a LineageEngine deterministically on one thread. It keeps several batches
// "in flight", completes them in a seeded random order, runs real operator implementations,
// and can lose batches (an infrastructure failure) and deliver their late reports afterwards.
#pragma once

#include "orch/runtime/engine/LineageEngine.h"
#include "orch/runtime/operators/Operator.h"

#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace orch::testing {

struct DriverOptions {
  uint64_t seed = 1;
  /// Batches held at once before one is completed.
  size_t maxInFlight = 4;
  /// Probability that a completed batch is instead reported lost (failBatch).
  double lossRate = 0.0;
  /// Complete the oldest batch instead of a random one.
  bool fifoCompletion = false;
};

struct DriverRun {
  std::vector<runtime::RootResult> roots;
  /// "ok", or why the run stopped (deadlock, engine exception).
  std::string error = "ok";
  size_t staleDelivered = 0;
  size_t staleRejected = 0;
};

class EngineDriver {
public:
  EngineDriver(const plan::Plan &plan, runtime::EngineOptions engineOptions,
               const runtime::OperatorRegistry &registry, DriverOptions options)
      : plan_(plan), engine_(plan, engineOptions), registry_(registry), options_(options),
        random_(options.seed) {}

  runtime::LineageEngine &engine() { return engine_; }

  /// Called as each root finishes, with the number of reports committed so far.
  std::function<void(const runtime::RootResult &, size_t commits)> onRootFinished;

  /// Admits `rows` into source 0 and runs to completion.
  DriverRun run(const std::vector<runtime::Value> &rows) {
    DriverRun result;
    size_t next = 0;
    std::vector<runtime::Batch> inFlight;
    std::vector<runtime::BatchReport> late;
    try {
      for (;;) {
        while (next < rows.size() && engine_.canAdmit())
          engine_.admitRoot(0, rows[next++]);
        if (next == rows.size())
          engine_.closeAdmission();
        while (inFlight.size() < options_.maxInFlight) {
          auto batch = engine_.reserveBatch();
          if (!batch)
            break;
          inFlight.push_back(std::move(*batch));
        }
        takeFinished(result);
        if (engine_.complete())
          break;
        if (inFlight.empty()) {
          // An expansion may have children to make, and roots may finish while they are made
          // (while a batch is asked for, too): room to admit more, or the run is complete.
          if (engine_.hasReadyWork() || engine_.complete() ||
              (next < rows.size() && engine_.canAdmit()))
            continue;
          result.error = engine_.deadlockReport().value_or("stuck without a deadlock report");
          break;
        }
        size_t pick = options_.fifoCompletion
                          ? 0
                          : std::uniform_int_distribution<size_t>(0, inFlight.size() - 1)(random_);
        runtime::Batch batch = std::move(inFlight[pick]);
        inFlight.erase(inFlight.begin() + static_cast<std::ptrdiff_t>(pick));
        if (options_.lossRate > 0 &&
            std::uniform_real_distribution<double>(0, 1)(random_) < options_.lossRate) {
          // The worker ran it (or not) but its answer arrives after the batch was re-queued.
          late.push_back(execute(batch));
          engine_.failBatch(batch.id, "simulated worker loss");
          continue;
        }
        engine_.commit(execute(batch));
        ++commits_;
        if (!late.empty() && std::uniform_int_distribution<int>(0, 3)(random_) == 0) {
          ++result.staleDelivered;
          if (engine_.commit(late.back()).status == runtime::CommitStatus::Stale)
            ++result.staleRejected;
          late.pop_back();
        }
      }
      for (runtime::BatchReport &report : late) {
        ++result.staleDelivered;
        if (engine_.commit(report).status == runtime::CommitStatus::Stale)
          ++result.staleRejected;
      }
      takeFinished(result);
    } catch (const std::exception &error) {
      result.error = error.what();
    }
    return result;
  }

  /// Runs a batch through the Call's operator, as a worker would.
  runtime::BatchReport execute(const runtime::Batch &batch) {
    const plan::PlanCall &call = plan_.calls[batch.call];
    runtime::OperatorConfig config(call.name, call.op, call.constants,
                                   engine_.callInputLabels(batch.call));
    return runtime::runOperatorBatch(operators_[batch.call], *registry_.transform(call.op), config,
                                     batch);
  }

private:
  void takeFinished(DriverRun &result) {
    for (runtime::RootResult &root : engine_.takeFinishedRoots()) {
      if (onRootFinished)
        onRootFinished(root, commits_);
      result.roots.push_back(std::move(root));
    }
  }

  const plan::Plan &plan_;
  runtime::LineageEngine engine_;
  const runtime::OperatorRegistry &registry_;
  DriverOptions options_;
  std::mt19937_64 random_;
  std::map<uint32_t, std::unique_ptr<runtime::Operator>> operators_;
  size_t commits_ = 0;
};

} // namespace orch::testing
