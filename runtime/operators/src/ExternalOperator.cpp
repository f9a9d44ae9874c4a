// One replica of a declared operator: a child process (ChildProcess.h) speaking the operator
// bridge (OperatorBridge.h). Batches go out as columns of the declared inputs; results come back
// one per item and are checked against the declared result type.
#include "orch/runtime/operators/ExternalOperator.h"
#include "orch/runtime/operators/LibraryMessages.h"

#include "OperatorBridge.h"
#include "orch/plan/PlanPositions.h"
#include "orch/runtime/operators/ChildProcess.h"

#include "orch/plan/Sha256.h"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <unistd.h>

namespace orch::runtime {

// The child side of python(...) operators (python/orch_operator.py), compiled in.
extern const char *const kPythonBridgeSource;

namespace {

using Clock = std::chrono::steady_clock;

/// `python -c` puts the working directory first on sys.path, where anyone who can write it
/// could plant a `msgpack.py`: it goes before anything is imported (the bridge puts the
/// script's own folder there instead).
constexpr const char *kPythonBootstrap =
    "import sys, os; here = os.path.realpath(os.getcwd()); "
    "sys.path[:] = [p for p in sys.path if p not in ('', '.') and os.path.realpath(p) != here]; "
    "exec(compile(os.environ.pop('ORCH_OPERATOR_SOURCE'), 'orch_operator.py', 'exec'))";

/// $PYTHONPATH without the entries that mean the working directory (an empty one, as
/// `PYTHONPATH=$PYTHONPATH:/x` leaves when it was unset, or "."): Python would import from it,
/// sitecustomize.py included, before the bootstrap runs.
std::string pythonPathWithoutWorkingDirectory(const std::string &path) {
  std::string kept;
  size_t start = 0;
  for (;;) {
    const size_t colon = path.find(':', start);
    const std::string entry = path.substr(start, colon - start);
    if (!entry.empty() && entry != "." && entry != "./")
      kept += (kept.empty() ? "" : ":") + entry;
    if (colon == std::string::npos)
      return kept;
    start = colon + 1;
  }
}

/// How long a process that was asked to shut down may take before it is killed.
constexpr std::chrono::milliseconds kShutdownGrace{2000};

std::string seconds(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f s", value);
  return text;
}

class ExternalOperator : public Operator {
public:
  ExternalOperator(const plan::Plan &plan, const plan::PlanExternalOperator &op,
                   const OperatorConfig &config)
      : plan_(plan), op_(op), config_(config) {
    for (const plan::PlanOperatorParam &param : op.params) {
      if (param.constant)
        continue;
      size_t column = 0;
      while (column < config.inputLabels().size() && config.inputLabels()[column] != param.name)
        ++column;
      if (column == config.inputLabels().size())
        throw OperatorError("call '" + config.name() + "' does not give input '" + param.name +
                            "' of operator '" + op.name + "'");
      inputColumns_.push_back(column);
    }
    spawn();
  }

  ~ExternalOperator() override {
    if (!child_)
      return;
    if (ready_ && writeFrame(child_->channel(), encodeShutdown(), Clock::now() + kShutdownGrace) ==
                      FrameStatus::Ok)
      child_->waitForExit(kShutdownGrace);
    child_.reset();
  }

  void awaitStarted(const std::atomic<bool> *stop) override {
    if (!ready_)
      handshake(stop);
  }

  void setBatchTimeout(std::chrono::nanoseconds limit) override { batchTimeout_ = limit; }

  void process(std::span<const OperatorRow> rows, std::vector<RowResult> &results) override {
    if (child_ && ready_) {
      if (std::optional<std::string> ended = child_->exitDescription()) {
        config_.log("its process " + *ended + " between batches; starting it again");
        child_.reset();
      }
    }
    if (!child_)
      spawn();
    if (!ready_)
      handshake();
    // What the process prints meanwhile names the batch's rows.
    const WorkingOn working(*working_, currentItems());
    std::vector<std::vector<const Value *>> columns(inputColumns_.size());
    for (size_t k = 0; k < inputColumns_.size(); ++k) {
      columns[k].reserve(rows.size());
      for (const OperatorRow &row : rows)
        columns[k].push_back(&row.inputs[inputColumns_[k]]);
    }
    const uint64_t id = ++batches_;
    const BridgeDeadline deadline =
        batchTimeout_.count() > 0 ? BridgeDeadline(Clock::now() + batchTimeout_) : std::nullopt;
    encodeBatch(id, columns, batchBuffer_);
    FrameStatus sent = writeFrame(
        child_->channel(), std::string_view(batchBuffer_.bytes.data(), batchBuffer_.bytes.size()),
        deadline);
    if (sent != FrameStatus::Ok)
      lose(sent);
    // A process that dies is noticed even when something it started still holds its socket
    // open (a forked helper): the wait for its answer looks at the process between slices.
    while (!waitReadable(child_->channel(), std::chrono::milliseconds(100))) {
      if (child_->waitForExit(std::chrono::milliseconds(0)))
        lose(FrameStatus::Closed);
      if (deadline && Clock::now() >= *deadline)
        lose(FrameStatus::TimedOut);
    }
    size_t size = 0;
    FrameStatus received = readFrame(child_->channel(), frame_, size, deadline);
    if (received != FrameStatus::Ok)
      lose(received);
    auto decoded = decodeChildMessage(std::string_view(frame_.data(), size));
    if (auto *problem = std::get_if<std::string>(&decoded)) {
      // A whole frame that cannot be read (a value nested too deep, beyond the limits): the
      // answer is the batch's, the process is fine and the stream still in step.
      for (size_t i = 0; i < rows.size(); ++i)
        results.push_back(RowResult::recordFailure(
            "call '" + config_.name() + "' (operator " + op_.name +
            ") answered its batch with values that cannot be read: " + *problem));
      return;
    }
    ChildMessage &message = std::get<ChildMessage>(decoded);
    if (auto *error = std::get_if<ChildError>(&message))
      throw OperatorError(error->message);
    auto *result = std::get_if<ChildResult>(&message);
    if (!result)
      protocolError("an unexpected message in answer to a batch");
    if (result->batch != id)
      protocolError("the answer to batch " + std::to_string(result->batch) + " where " +
                    std::to_string(id) + " was sent");
    // One result per item, or the batch breaks the operator's contract: the results go back as
    // they are, and the engine fails the batch's rows naming the count (the process is fine).
    if (result->values.size() != rows.size())
      config_.log("call '" + config_.name() + "' (operator " + op_.name + ") returned " +
                  std::to_string(result->values.size()) + " results for a batch of " +
                  std::to_string(rows.size()) + " items; an operator returns one per item");
    for (size_t i = 0; i < result->values.size(); ++i) {
      if (auto failed = result->errors.find(uint32_t(i)); failed != result->errors.end()) {
        results.push_back(RowResult::recordFailure(failed->second));
        continue;
      }
      Value &value = result->values[i];
      if (std::optional<std::string> mismatch = checkValueType(value, op_.result)) {
        results.push_back(RowResult::recordFailure(
            "call '" + config_.name() + "' (operator " + op_.name + ") returned " +
            valueKindName(value.kind()) + " for item " + std::to_string(i) +
            " of its batch, but the operator is declared to return " + op_.result.str() + ": " +
            *mismatch));
        continue;
      }
      results.push_back(RowResult::ok(std::move(value)));
    }
  }

private:
  /// Starts the process (without waiting for it): the file must be the one compiled.
  void spawn() {
    ready_ = false;
    std::string readError;
    std::optional<std::string> hash = plan::sha256OfFile(op_.path, readError);
    if (!hash)
      throw OperatorError(where() + "cannot read " + op_.path + ": " + readError);
    if (*hash != op_.sha256)
      throw OperatorError(where() + op_.path + " is not the file the plan was compiled with " +
                          "(its SHA-256 is " + hash->substr(0, 12) + "…, the plan's " +
                          op_.sha256.substr(0, 12) + "…); deploy the same file or recompile");
    ChildProcessSpec spec;
    if (op_.runner == "python") {
      // The bridge's source travels in the environment, so that `ps` shows a short command
      // line naming the operator, and tracebacks name orch_operator.py.
      spec.argv = {pythonInterpreter(), "-u", "-c", kPythonBootstrap, "orch-operator", op_.name};
      spec.environment.emplace_back("ORCH_OPERATOR_SOURCE", kPythonBridgeSource);
      if (const char *path = std::getenv("PYTHONPATH"))
        spec.environment.emplace_back("PYTHONPATH", pythonPathWithoutWorkingDirectory(path));
    } else {
      spec.argv = {op_.path};
      spec.argv.insert(spec.argv.end(), op_.args.begin(), op_.args.end());
    }
    const std::string threads =
        std::to_string(std::max<int64_t>(1, int64_t(std::ceil(config_.cpus()))));
    spec.environment.insert(
        spec.environment.end(),
        {{"ORCH_OPERATOR_FD", std::to_string(kChildChannelFd)},
         {"ORCH_CALL", config_.name()},
         {"ORCH_REPLICA", std::to_string(config_.replica())},
         {"PYTHONUNBUFFERED", "1"},
         {"OMP_NUM_THREADS", threads},
         {"MKL_NUM_THREADS", threads},
         {"OPENBLAS_NUM_THREADS", threads},
         {"NUMEXPR_NUM_THREADS", threads},
         {"CUDA_VISIBLE_DEVICES",
          config_.gpuDevice() >= 0 ? std::to_string(config_.gpuDevice()) : std::string()}});
    OperatorConfig config = config_;
    // A declared operator's own prints, with its replica and the rows of the batch it runs, at
    // the level libraries' output has.
    spec.output = [config, working = working_](const std::string &line) {
      if (!logs(LogLevel::Info))
        return;
      std::string rows;
      {
        std::lock_guard lock(working->mutex);
        rows = working->rows;
      }
      config.log("replica " + std::to_string(config.replica()) + (rows.empty() ? "" : ", ") + rows +
                 ": " + line);
    };
    startedAt_ = Clock::now();
    leftoverKillsAtStart_ = leftoverKills();
    try {
      child_ = std::make_unique<ChildProcess>(spec);
    } catch (const std::exception &error) {
      throw OperatorError(where() + error.what());
    }
  }

  /// hello -> init -> ready: the constructor ran. OperatorError with its traceback otherwise,
  /// or when `stop` is set while it waits.
  void handshake(const std::atomic<bool> *stop = nullptr) {
    ChildMessage hello = receive("its hello", stop);
    auto *greeting = std::get_if<ChildHello>(&hello);
    if (!greeting)
      startFailure("it did not begin with hello");
    if (greeting->version != kBridgeVersion)
      startFailure("it speaks protocol version " + std::to_string(greeting->version) +
                   ", this worker " + std::to_string(kBridgeVersion));
    BridgeInit init{&op_, config_.name(), config_.replica(), &config_.constants()};
    if (writeFrame(child_->channel(), encodeInit(init), std::nullopt) != FrameStatus::Ok)
      startFailure("its process " + ended());
    ChildMessage answer = receive("its answer to init", stop);
    if (auto *error = std::get_if<ChildError>(&answer))
      startFailure(error->message);
    if (!std::holds_alternative<ChildReady>(answer))
      startFailure("it did not answer init with ready");
    ready_ = true;
    const double took = std::chrono::duration<double>(Clock::now() - startedAt_).count();
    if (logs(LogLevel::Info))
      config_.log("replica " + std::to_string(config_.replica()) + " started (pid " +
                  std::to_string(child_->pid()) + ") in " + seconds(took));
  }

  ChildMessage receive(const std::string &what, const std::atomic<bool> *stop) {
    // A model may load for minutes: an interrupted run does not wait for it.
    while (!waitReadable(child_->channel(), std::chrono::milliseconds(200)))
      if (stop && stop->load())
        startFailure("the run was interrupted while it started");
    size_t size = 0;
    if (FrameStatus status = readFrame(child_->channel(), frame_, size, std::nullopt);
        status != FrameStatus::Ok)
      startFailure(status == FrameStatus::Malformed ? "a malformed frame instead of " + what
                                                    : "its process " + ended() + " before " + what);
    auto decoded = decodeChildMessage(std::string_view(frame_.data(), size));
    if (auto *problem = std::get_if<std::string>(&decoded))
      startFailure("a malformed message instead of " + what + ": " + *problem);
    return std::get<ChildMessage>(std::move(decoded));
  }

  /// "exited with status 1" once it has (briefly waited for), else "closed the connection".
  std::string ended() {
    if (child_->waitForExit(std::chrono::milliseconds(500)))
      return child_->exitDescription().value_or("ended");
    return "closed the connection";
  }

  [[noreturn]] void startFailure(const std::string &why) {
    child_.reset();
    ready_ = false;
    throw OperatorError(where() + "could not start: " + why);
  }

  /// The process crashed or hung during a batch: it is killed and restarted for the next one.
  [[noreturn]] void lose(FrameStatus status) {
    std::string why;
    BatchLoss loss = BatchLoss::Crash;
    if (status == FrameStatus::TimedOut) {
      why = "timed out after " + plan::formatStaticValue(plan::Duration{batchTimeout_.count()});
      loss = BatchLoss::Timeout;
      child_->kill();
    } else if (status == FrameStatus::Malformed) {
      why = "sent a malformed frame";
      child_->kill();
    } else {
      why = ended();
    }
    const std::string message = "call '" + config_.name() + "' (operator " + op_.name +
                                "): the process of replica " + std::to_string(config_.replica()) +
                                " " + why + " while running a batch; it is restarted";
    // Killed as a leftover of a run that ended (its thread abandoned at a stop): nothing crashed,
    // and nothing is restarted, so nothing is said.
    if (leftoverKills() == leftoverKillsAtStart_)
      config_.log(message);
    child_.reset();
    ready_ = false;
    throw OperatorLost(message, loss);
  }

  [[noreturn]] void protocolError(const std::string &what) {
    child_.reset();
    ready_ = false;
    throw OperatorLost("call '" + config_.name() + "' (operator " + op_.name +
                           "): its process sent " + what + "; it is restarted",
                       BatchLoss::Crash);
  }

  std::string where() const {
    return plan::sourceLocation(plan_, op_.line, op_.column) + ": operator '" + op_.name +
           "' (call '" + config_.name() + "'): ";
  }

  const plan::Plan &plan_;
  const plan::PlanExternalOperator &op_;
  OperatorConfig config_;
  /// For each input parameter (declaration order): its column in a batch's rows.
  std::vector<size_t> inputColumns_;
  /// The rows of the batch the process runs, for its output lines (read by the output thread).
  struct Working {
    std::mutex mutex;
    std::string rows;
  };
  /// Sets what the process works on for as long as a batch runs.
  class WorkingOn {
  public:
    WorkingOn(Working &working, std::string rows) : working_(working) {
      std::lock_guard lock(working_.mutex);
      working_.rows = std::move(rows);
    }
    ~WorkingOn() {
      std::lock_guard lock(working_.mutex);
      working_.rows.clear();
    }
    WorkingOn(const WorkingOn &) = delete;
    WorkingOn &operator=(const WorkingOn &) = delete;

  private:
    Working &working_;
  };
  std::shared_ptr<Working> working_ = std::make_shared<Working>();
  std::unique_ptr<ChildProcess> child_;
  /// Frames from the process are read here, and batches encoded here (both only grow).
  std::string frame_;
  BatchBuffer batchBuffer_;
  bool ready_ = false;
  uint64_t batches_ = 0;
  std::chrono::nanoseconds batchTimeout_{0};
  Clock::time_point startedAt_;
  /// leftoverKills() when its process started (ChildProcess.h).
  uint64_t leftoverKillsAtStart_ = 0;
};

} // namespace

std::string pythonInterpreter() {
  if (const char *configured = std::getenv("ORCH_PYTHON"); configured && *configured)
    return configured;
  if (::access("/usr/bin/python3", X_OK) == 0)
    return "/usr/bin/python3";
  return "python3";
}

OperatorFactory externalOperatorFactory(const plan::Plan &plan,
                                        const plan::PlanExternalOperator &op) {
  return [&plan, &op](const OperatorConfig &config) -> std::unique_ptr<Operator> {
    return std::make_unique<ExternalOperator>(plan, op, config);
  };
}

CallFactories::CallFactories(const plan::Plan &plan, const OperatorRegistry &registry,
                             const ProgramPermissions *permissions) {
  for (const plan::PlanCall &call : plan.calls) {
    if (const plan::PlanExternalOperator *op = plan.externalOperator(call.op)) {
      std::optional<std::string> refused = permissions ? permissions->refusal(*op) : std::nullopt;
      if (refused)
        owned_.push_back(std::make_unique<OperatorFactory>(
            [refused](const OperatorConfig &) -> std::unique_ptr<Operator> {
              throw OperatorError(*refused);
            }));
      else
        owned_.push_back(std::make_unique<OperatorFactory>(externalOperatorFactory(plan, *op)));
      factories_.push_back(owned_.back().get());
      eager_.push_back(true);
    } else {
      factories_.push_back(registry.transform(call.op));
      eager_.push_back(false);
    }
  }
}

const OperatorFactory *CallFactories::forCall(uint32_t call) const { return factories_[call]; }

} // namespace orch::runtime
