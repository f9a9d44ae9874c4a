// The operator API: what stdlib, test and plugin operators implement, and the registry that
// binds the plan's operator names to implementations. Transforms are batch-first: one call
// processes many rows (possibly of many parents) and answers per row.
#pragma once

#include "orch/plan/Plan.h"
#include "orch/runtime/engine/EngineTypes.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace orch::runtime {

/// Thrown by factories for a configuration that cannot work (an unwritable path) and by
/// `process` for a batch error; the runtime catches both at the operator boundary.
class OperatorError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Thrown by `process` when the batch ended without the operator's answer: its process crashed
/// or hung and was restarted (`Crash`, `Timeout`: the batch is narrowed down to the rows that
/// crash alone), or the machinery failed (`Infrastructure`: it runs again whole).
class OperatorLost : public OperatorError {
public:
  OperatorLost(const std::string &message, BatchLoss loss) : OperatorError(message), loss_(loss) {}
  BatchLoss loss() const { return loss_; }

private:
  BatchLoss loss_;
};

/// Thrown by a sink's `write` for a row whose value the format cannot hold (NaN in JSON): the
/// root fails with the reason, like any output failure, but it says nothing about the output
/// device, so it does not count towards stopping a run whose outputs keep failing.
class UnwritableValue : public OperatorError {
public:
  using OperatorError::OperatorError;
};

/// One row of a batch: the operator's dataflow inputs in parameter order, and where it sits.
struct OperatorRow {
  std::span<const Value> inputs;
  GrainLineage lineage;
};

struct RowResult {
  RowResultKind kind = RowResultKind::Value;
  Value value;
  std::string message;

  static RowResult ok(Value value) { return {RowResultKind::Value, std::move(value), {}}; }
  /// This row failed; nothing else is affected.
  static RowResult recordFailure(std::string message) {
    return {RowResultKind::RecordFailure, Value(), std::move(message)};
  }
  /// This row failed and poisons its parent: its siblings still waiting for this Call are
  /// suppressed.
  static RowResult groupFailure(std::string message) {
    return {RowResultKind::GroupFailure, Value(), std::move(message)};
  }
};

/// What a committed source row's rows become when a run is taken up (docs/outputs.md).
enum class RecordFate : uint8_t {
  /// They stay in the output.
  Kept,
  /// The row failed and `--retry-failed` runs it again: its rows are taken out.
  RunsAgain,
  /// A retried row's rows an earlier retry took out; the record is what it had published (a
  /// shard it ended is still a shard).
  Retired,
};

/// One committed source row's record in one sink (`RowSink::resumeRecord`), as the run journal
/// kept it, and what becomes of the row's rows now.
struct SinkRecord {
  std::string_view bytes;
  RecordFate fate = RecordFate::Kept;
};

/// What the run journal kept of one sink's output, for a run that takes it up: the record each
/// committed source row left there, in commit order. The journal stores records as the sink
/// wrote them and never reads them; what they mean is the sink's business (most describe their
/// output as an extent: SinkExtents.h). Read as a stream: a run of millions of rows has as many.
class SinkHistory {
public:
  virtual ~SinkHistory() = default;
  /// Calls `visit` with every record in commit order (its bytes valid during the call).
  virtual void forEach(const std::function<void(const SinkRecord &)> &visit) const = 0;
};

/// The static configuration of one Call, source or sink: its constants (defaults filled in by
/// the compiler) and dataflow input names.
class OperatorConfig {
public:
  OperatorConfig(std::string name, std::string op,
                 const std::vector<plan::NamedConstant> &constants,
                 std::vector<std::string> inputLabels);

  /// The Call's (or sink's) name for messages and the operator's name.
  const std::string &name() const { return name_; }
  const std::string &op() const { return op_; }
  const std::vector<std::string> &inputLabels() const { return inputLabels_; }

  /// A Call's options (scheduling; `gpus` tells an operator to use its GPU implementation).
  OperatorConfig &withOptions(const plan::CallOptions &options) {
    options_ = &options;
    return *this;
  }
  /// GPUs per replica the Call asked for (0 for sources, sinks and CPU Calls), and GPU memory
  /// on each device (0: none said).
  double gpus() const { return options_ ? options_->gpus : 0; }
  uint64_t gpuMemoryBytes() const {
    return options_ ? uint64_t(std::max<int64_t>(0, options_->gpuMemoryBytes)) : 0;
  }
  /// CPUs per replica the Call asked for (1 without options).
  double cpus() const { return options_ ? options_->cpus : 1; }
  /// The Call's `timeout` (0: none).
  int64_t timeoutNanoseconds() const { return options_ ? options_->timeoutNanoseconds : 0; }
  /// Grains per batch at most (`batch`; 1 without options).
  int64_t batchLimit() const { return options_ ? options_->batch : 1; }
  /// Batches a replica keeps open at once (`in_flight`; 1 without options).
  int64_t inFlight() const { return options_ ? options_->inFlight : 1; }
  /// Replicas the Call pinned (`replicas`; 0: automatic).
  int64_t pinnedReplicas() const { return options_ ? options_->replicas : 0; }
  const std::vector<plan::NamedConstant> &constants() const { return *constants_; }
  /// The CUDA device this replica runs on, chosen by the executor (see GpuPlacement.h);
  /// -1 when none was assigned: the replica then runs on the CPU.
  OperatorConfig &withGpuDevice(int64_t device) {
    gpuDevice_ = device;
    return *this;
  }
  int64_t gpuDevice() const { return gpuDevice_; }
  /// A sink that takes up an interrupted run's output instead of starting it afresh: what the
  /// run journal kept of it (nullptr: afresh).
  OperatorConfig &withResume(const SinkHistory *history) {
    resume_ = history;
    return *this;
  }
  const SinkHistory *resume() const { return resume_; }
  /// Which replica of its Call this instance is (0 for sources and sinks).
  OperatorConfig &withReplica(uint32_t replica) {
    replica_ = replica;
    return *this;
  }
  uint32_t replica() const { return replica_; }

  /// Where an operator reports what the user should know (its GPU failed and it runs on the
  /// CPU): the worker's or the run's log. Lines go nowhere when unset.
  OperatorConfig &withLog(std::function<void(const std::string &)> log) {
    log_ = std::move(log);
    return *this;
  }
  void log(const std::string &line) const {
    if (log_)
      log_(name_ + ": " + line);
  }

  const plan::StaticValue *constant(std::string_view name) const;
  /// Typed constants; OperatorError when missing or of another type.
  std::string stringConstant(std::string_view name) const;
  int64_t intConstant(std::string_view name) const;
  double floatConstant(std::string_view name) const;
  bool boolConstant(std::string_view name) const;

private:
  std::string name_;
  std::string op_;
  const std::vector<plan::NamedConstant> *constants_;
  std::vector<std::string> inputLabels_;
  const plan::CallOptions *options_ = nullptr;
  int64_t gpuDevice_ = -1;
  uint32_t replica_ = 0;
  const SinkHistory *resume_ = nullptr;
  std::function<void(const std::string &)> log_;
};

/// How a concurrent operator's batch ended: one result per row, what it spent on its service,
/// or (instead of results) a batch error.
struct RowsAnswer {
  std::vector<RowResult> results;
  ServiceUsage usage;
  std::optional<std::string> batchError;
};
using RowsDone = std::function<void(RowsAnswer)>;

class Operator {
public:
  virtual ~Operator() = default;
  /// Appends one result per row to `results`, in row order. Throwing is a batch error.
  virtual void process(std::span<const OperatorRow> rows, std::vector<RowResult> &results) = 0;
  /// An operator that waits on a service (llm.*: requests to a model server) rather than
  /// computing takes several batches at once: up to its Call's `in_flight`, each begun with
  /// `start` and answered when its own requests are done (docs/models.md).
  virtual bool concurrent() const { return false; }
  /// Begins a batch and returns at once; `done` is called once, from any thread, when every row
  /// has its result (or with a batch error). `rows` stay valid until then. `limit`: how long the
  /// batch may take (0: none); a concurrent operator ends it by then itself, failing the rows
  /// still waiting. The default runs `process` on the calling thread.
  virtual void start(std::span<const OperatorRow> rows, std::chrono::nanoseconds limit,
                     RowsDone done);
  /// Operators that start slowly (a model loading in a child process) begin in their factory
  /// and finish here; executors call it for every replica before the first row is admitted, so
  /// that starting them overlaps. OperatorError: the operator cannot start (the run stops), or
  /// `stop` was set meanwhile (an interrupted run).
  virtual void awaitStarted(const std::atomic<bool> *stop) { (void)stop; }
  /// How long the next `process` may run (0: no limit); an operator that runs its work in a
  /// child process stops it at the limit and throws OperatorLost (BatchLoss::Timeout). Others
  /// are stopped from outside (docs/runtime.md, timeouts).
  virtual void setBatchTimeout(std::chrono::nanoseconds limit) { (void)limit; }
};

/// A source yields rows lazily; each becomes one root entity.
struct SourceRow {
  /// The row, or nullopt with `error` for a row that could not be read (a malformed line).
  std::optional<Value> value;
  std::string error;
};

class RowSource {
public:
  virtual ~RowSource() = default;
  /// The next row, or nullopt at the end.
  virtual std::optional<SourceRow> next() = 0;
  /// Passes over the next row without making a value of it (a row an earlier run finished, or
  /// crashed on); false at the end. Rows count as next() counts them.
  virtual bool skip() { return next().has_value(); }
  /// How many rows there are in all, when known up front (for progress and ETA).
  virtual std::optional<uint64_t> total() const { return std::nullopt; }
  /// What the rows come from, so that a run is resumed only on the same inputs (the run
  /// journal): paths with sizes and modification times. Empty: nothing to check.
  virtual std::string fingerprint() const { return {}; }
};

/// A sink receives the rows of finished roots; values follow the sink's input labels. The rows of
/// one root are one transaction across every sink, in two phases (docs/outputs.md): each sink
/// stages the root's rows (`write`) and prepares them (everything that can fail: bytes written,
/// shards ended, obstacles found); then the run journal records the root as committed, with
/// each sink's `resumeRecord`; then each sink publishes (`commit`: renames). A failure before
/// the journal's record rolls the root back in every sink; once it is recorded, the root's rows
/// are part of the output, and a publication cut short is finished when the run resumes (the
/// sink is made with the records: `OperatorConfig::resume`).
class RowSink {
public:
  virtual ~RowSink() = default;
  /// Brings the output to where the run starts, once every sink of the run was opened (and,
  /// resuming, checked that it can): afresh, emptied; resuming, cut back to the last commit,
  /// the rows of retried source rows cut out, publications cut short finished. A sink checks
  /// in its constructor everything that could stop this, so that a run that cannot resume
  /// changes no output; and it recognises what an interrupted takeUp already did, so that the
  /// next run completes it. OperatorError when it cannot.
  virtual void takeUp() {}
  /// Stages one row. OperatorError when it cannot (disk full, a name another row took): the
  /// root fails with that cause and its rows are rolled back in every sink.
  virtual void write(std::span<const Value> values) = 0;
  /// Makes the staged rows ready to publish: after it returns, `commit` does nothing that can
  /// fail but a rename. OperatorError when it cannot (the caller rolls back).
  virtual void prepare() {}
  /// Publishes the prepared rows (files: renamed into place). OperatorError only when the file
  /// system refuses a rename it allowed in `prepare`: the run stops, and resuming finishes it.
  virtual void commit() {}
  /// After `prepare`: whether `commit` makes visible what only the journal's record of the root
  /// may make permanent (a rename, a stream's lines), so the journal writes its waiting
  /// records first. False where the rows are in place once prepared and `commit` only moves
  /// the point to roll back to (a resumed run cuts back what no record covers).
  virtual bool publishes() const { return true; }
  /// Bytes of rows the sink holds in memory to write with the next roots' (group commit: one
  /// write for a round's roots, not one each), written by `writeHeld`.
  virtual uint64_t heldBytes() const { return 0; }
  /// Writes the rows held in memory: those of committed roots, and of a root prepared and not
  /// committed yet (before the journal records it: the journal's records never point past
  /// what is written). OperatorError when it cannot: the run stops, and the roots they belong
  /// to are not recorded (a resumed run runs them again). A sink that holds rows back makes
  /// sure in `prepare` that writing them can fail only on a broken disk, not a full one (it
  /// reserves their space): a full disk fails the root that filled it.
  virtual void writeHeld() {}
  /// Takes back the rows staged or prepared since the last commit; never leaves a partial row.
  virtual void rollback() {}
  /// After `prepare`: what the run journal keeps for the root in this sink, to take the output
  /// up from (SinkHistory). Any bytes; "" when there is nothing to keep.
  virtual std::string resumeRecord() const { return {}; }
  /// Resuming with --retry-failed, before `takeUp` changes anything (the journal records the
  /// intent first): what `record`, one of the history the sink was made with, becomes once the
  /// rows that run again are taken out. A kept row's record as its rows will then stand, a
  /// retried or retired row's what stays published of it ("" for nothing). By default records
  /// stay as they are and retried rows leave nothing.
  virtual std::string recordAfterRetry(const SinkRecord &record) const;
  /// Bytes this run committed (for the run's account of its outputs).
  virtual uint64_t bytesCommitted() const { return 0; }
  /// Makes what was committed durable (fsync); called periodically and at the end.
  virtual void sync() {}
  /// Flushes; called once at the end of the run.
  virtual void close() {}
};

using OperatorFactory = std::function<std::unique_ptr<Operator>(const OperatorConfig &)>;
/// Judges a Call's settings before the run starts, where the coordinator runs (not on a
/// worker): why it cannot work, or nullopt. Input labels are not known to it.
using OperatorCheck = std::function<std::optional<std::string>(const OperatorConfig &)>;
using SourceFactory = std::function<std::unique_ptr<RowSource>(const OperatorConfig &)>;
using SinkFactory = std::function<std::unique_ptr<RowSink>(const OperatorConfig &)>;

/// Runs one batch on `instance` (created from `factory` on first use) as every executor does:
/// rows in, one report out; an exception (or a failing factory) becomes a batch error.
BatchReport runOperatorBatch(std::unique_ptr<Operator> &instance, const OperatorFactory &factory,
                             const OperatorConfig &config, const Batch &batch);
/// Begins `rows` on a concurrent operator and waits for its answer (an executor or a `process`
/// that runs one batch at a time).
RowsAnswer startAndWait(Operator &instance, std::span<const OperatorRow> rows,
                        std::chrono::nanoseconds limit);

/// The same for a concurrent operator: begins `batch` on `instance` and returns; `done` gets the
/// report, from whichever thread finished it (at once for a failing factory or a batch that
/// exceeds the protocol's limits).
void startOperatorBatch(std::unique_ptr<Operator> &instance, const OperatorFactory &factory,
                        const OperatorConfig &config, Batch batch,
                        std::function<void(BatchReport)> done);

class OperatorRegistry {
public:
  void addTransform(std::string name, OperatorFactory factory);
  /// A check of a transform's settings that stops a run before it starts (OperatorCheck).
  void addCheck(std::string name, OperatorCheck check);
  const OperatorCheck *check(std::string_view name) const;
  void addSource(std::string name, SourceFactory factory);
  void addSink(std::string name, SinkFactory factory);

  const OperatorFactory *transform(std::string_view name) const;
  const SourceFactory *source(std::string_view name) const;
  const SinkFactory *sink(std::string_view name) const;

  /// Names of the transforms, sorted (what a worker offers in its HELLO).
  std::vector<std::string> transformNames() const;
  std::vector<std::string> sourceNames() const;
  std::vector<std::string> sinkNames() const;

  /// The operators `plan` uses that have no implementation here, as "kind name" strings.
  std::vector<std::string> missingFor(const plan::Plan &plan) const;

private:
  std::unordered_map<std::string, OperatorFactory> transforms_;
  std::unordered_map<std::string, OperatorCheck> checks_;
  std::unordered_map<std::string, SourceFactory> sources_;
  std::unordered_map<std::string, SinkFactory> sinks_;
};

} // namespace orch::runtime
