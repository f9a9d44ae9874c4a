// Operator configuration access and the registry of implementations.
#include "orch/runtime/operators/Operator.h"

#include "orch/runtime/operators/LibraryMessages.h"

#include "orch/runtime/operators/MessageLimits.h"

#include <algorithm>
#include <future>

namespace orch::runtime {

OperatorConfig::OperatorConfig(std::string name, std::string op,
                               const std::vector<plan::NamedConstant> &constants,
                               std::vector<std::string> inputLabels)
    : name_(std::move(name)), op_(std::move(op)), constants_(&constants),
      inputLabels_(std::move(inputLabels)) {}

std::string RowSink::recordAfterRetry(const SinkRecord &record) const {
  return record.fate == RecordFate::RunsAgain ? std::string() : std::string(record.bytes);
}

const plan::StaticValue *OperatorConfig::constant(std::string_view name) const {
  for (const plan::NamedConstant &named : *constants_)
    if (named.name == name)
      return &named.value;
  return nullptr;
}

namespace {

template <typename T>
const T &typedConstant(const OperatorConfig &config, std::string_view name, const char *type) {
  const plan::StaticValue *value = config.constant(name);
  if (!value)
    throw OperatorError(config.op() + ": missing constant '" + std::string(name) + "'");
  if (const T *typed = std::get_if<T>(value))
    return *typed;
  throw OperatorError(config.op() + ": constant '" + std::string(name) + "' is not " + type);
}

} // namespace

std::string OperatorConfig::stringConstant(std::string_view name) const {
  return typedConstant<std::string>(*this, name, "a String");
}

int64_t OperatorConfig::intConstant(std::string_view name) const {
  return typedConstant<int64_t>(*this, name, "an Int");
}

double OperatorConfig::floatConstant(std::string_view name) const {
  const plan::StaticValue *value = constant(name);
  if (value)
    if (const int64_t *integer = std::get_if<int64_t>(value))
      return static_cast<double>(*integer);
  return typedConstant<double>(*this, name, "a Float");
}

bool OperatorConfig::boolConstant(std::string_view name) const {
  return typedConstant<bool>(*this, name, "a Bool");
}

void OperatorRegistry::addTransform(std::string name, OperatorFactory factory) {
  transforms_[std::move(name)] = std::move(factory);
}

void OperatorRegistry::addCheck(std::string name, OperatorCheck check) {
  checks_[std::move(name)] = std::move(check);
}

void OperatorRegistry::addSource(std::string name, SourceFactory factory) {
  sources_[std::move(name)] = std::move(factory);
}

void OperatorRegistry::addSink(std::string name, SinkFactory factory) {
  sinks_[std::move(name)] = std::move(factory);
}

namespace {

template <typename Map> auto *lookup(const Map &map, std::string_view name) {
  auto found = map.find(std::string(name));
  return found == map.end() ? nullptr : &found->second;
}

} // namespace

const OperatorFactory *OperatorRegistry::transform(std::string_view name) const {
  return lookup(transforms_, name);
}

const OperatorCheck *OperatorRegistry::check(std::string_view name) const {
  return lookup(checks_, name);
}

const SourceFactory *OperatorRegistry::source(std::string_view name) const {
  return lookup(sources_, name);
}

const SinkFactory *OperatorRegistry::sink(std::string_view name) const {
  return lookup(sinks_, name);
}

namespace {

template <typename Map> std::vector<std::string> sortedNames(const Map &map) {
  std::vector<std::string> names;
  for (const auto &[name, factory] : map)
    names.push_back(name);
  std::sort(names.begin(), names.end());
  return names;
}

} // namespace

std::vector<std::string> OperatorRegistry::transformNames() const {
  return sortedNames(transforms_);
}

std::vector<std::string> OperatorRegistry::sourceNames() const { return sortedNames(sources_); }

std::vector<std::string> OperatorRegistry::sinkNames() const { return sortedNames(sinks_); }

void Operator::start(std::span<const OperatorRow> rows, std::chrono::nanoseconds limit,
                     RowsDone done) {
  RowsAnswer answer;
  try {
    setBatchTimeout(limit);
    process(rows, answer.results);
  } catch (const std::exception &error) {
    answer.results.clear();
    answer.batchError = error.what();
  }
  done(std::move(answer));
}

namespace {

std::vector<OperatorRow> operatorRows(const Batch &batch) {
  std::vector<OperatorRow> rows;
  rows.reserve(batch.grains.size());
  for (size_t i = 0; i < batch.grains.size(); ++i)
    rows.push_back(OperatorRow{batch.inputsOf(i), batch.grains[i].lineage});
  return rows;
}

/// The report of an answered batch: one grain report per result.
void reportResults(const Batch &batch, std::vector<RowResult> &results, BatchReport &report) {
  report.grains.reserve(results.size());
  for (size_t i = 0; i < results.size() && !batch.grains.empty(); ++i) {
    // Extra results are reported against the last grain: the engine rejects the batch.
    const BatchGrain &grain = batch.grains[std::min(i, batch.grains.size() - 1)];
    report.grains.push_back(GrainReport{grain.grain, grain.generation, results[i].kind,
                                        std::move(results[i].value),
                                        std::move(results[i].message)});
  }
  if (std::optional<std::string> problem = reportExceedsProtocolLimits(report)) {
    report.grains.clear();
    report.batchError = std::move(problem);
  }
}

} // namespace

void startOperatorBatch(std::unique_ptr<Operator> &instance, const OperatorFactory &factory,
                        const OperatorConfig &config, Batch batch,
                        std::function<void(BatchReport)> done) {
  BatchReport report;
  report.batchId = batch.id;
  if ((report.batchError = batchExceedsProtocolLimits(batch)))
    return done(std::move(report));
  try {
    if (!instance)
      instance = factory(config);
  } catch (const std::exception &error) {
    report.batchError = error.what();
    return done(std::move(report));
  }
  // The batch and its rows live until the operator answered.
  struct Open {
    Batch batch;
    std::vector<OperatorRow> rows;
    std::function<void(BatchReport)> done;
  };
  auto open = std::make_shared<Open>();
  open->batch = std::move(batch);
  open->rows = operatorRows(open->batch);
  open->done = std::move(done);
  const std::chrono::nanoseconds limit(open->batch.timeoutNanoseconds);
  instance->start(open->rows, limit, [open](RowsAnswer answer) {
    BatchReport answered;
    answered.batchId = open->batch.id;
    answered.usage = std::move(answer.usage);
    if (answer.batchError)
      answered.batchError = std::move(answer.batchError);
    else
      reportResults(open->batch, answer.results, answered);
    open->done(std::move(answered));
  });
}

RowsAnswer startAndWait(Operator &instance, std::span<const OperatorRow> rows,
                        std::chrono::nanoseconds limit) {
  std::promise<RowsAnswer> answered;
  std::future<RowsAnswer> answer = answered.get_future();
  instance.start(rows, limit,
                 [&answered](RowsAnswer done) { answered.set_value(std::move(done)); });
  return answer.get();
}

BatchReport runOperatorBatch(std::unique_ptr<Operator> &instance, const OperatorFactory &factory,
                             const OperatorConfig &config, const Batch &batch) {
  BatchReport report;
  report.batchId = batch.id;
  // Values that could not travel between processes fail the same way in every executor; the
  // Call's recovery narrows the batch error down to the rows that carry them.
  if ((report.batchError = batchExceedsProtocolLimits(batch)))
    return report;
  std::vector<OperatorRow> rows = operatorRows(batch);
  std::vector<RowResult> results;
  results.reserve(rows.size());
  // What libraries print on this thread meanwhile names this batch (LibraryMessages.h).
  const OperatorActivity activity(config, batch);
  try {
    if (!instance)
      instance = factory(config);
    instance->setBatchTimeout(std::chrono::nanoseconds(batch.timeoutNanoseconds));
    if (instance->concurrent()) {
      // An executor that runs one batch at a time on a concurrent operator waits for it here.
      RowsAnswer got =
          startAndWait(*instance, rows, std::chrono::nanoseconds(batch.timeoutNanoseconds));
      report.usage = std::move(got.usage);
      if (got.batchError) {
        report.batchError = std::move(got.batchError);
        return report;
      }
      results = std::move(got.results);
    } else {
      instance->process(rows, results);
    }
  } catch (const OperatorLost &error) {
    report.batchError = error.what();
    report.loss = error.loss();
    return report;
  } catch (const std::exception &error) {
    report.batchError = error.what();
    return report;
  } catch (...) {
    report.batchError = "unknown exception";
    return report;
  }
  reportResults(batch, results, report);
  return report;
}

std::vector<std::string> OperatorRegistry::missingFor(const plan::Plan &plan) const {
  std::vector<std::string> missing;
  for (const plan::PlanSource &source : plan.sources)
    if (!this->source(source.op))
      missing.push_back("source " + source.op);
  for (const plan::PlanCall &call : plan.calls)
    if (!transform(call.op) && !plan.externalOperator(call.op))
      missing.push_back("operator " + call.op);
  for (const plan::PlanSink &sink : plan.sinks)
    if (!this->sink(sink.op))
      missing.push_back("sink " + sink.op);
  return missing;
}

} // namespace orch::runtime
