// Implementations of the test.* operators declared in plan/StandardOperatorSignatures.cpp.
#include "orch/runtime/operators/TestOperators.h"

#include "orch/runtime/operators/LibraryMessages.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <set>
#include <thread>

namespace orch::runtime {

void TestOperatorLog::recordBatch(const std::string &call, std::span<const OperatorRow> rows) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++batches_[call];
  rows_[call] += rows.size();
  if (keepRuns_)
    for (const OperatorRow &row : rows)
      runs_.push_back(Run{call, row.lineage});
}

int64_t TestOperatorLog::nextAttempt(const std::string &call, uint64_t key) {
  std::lock_guard<std::mutex> lock(mutex_);
  return ++attempts_[{call, key}];
}

std::vector<TestOperatorLog::Run> TestOperatorLog::runs() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return runs_;
}

size_t TestOperatorLog::rowsRun(const std::string &call) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = rows_.find(call);
  return found == rows_.end() ? 0 : found->second;
}

size_t TestOperatorLog::batchesRun(const std::string &call) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = batches_.find(call);
  return found == batches_.end() ? 0 : found->second;
}

namespace {

class SplitOperator : public Operator {
public:
  SplitOperator(const OperatorConfig &config, std::shared_ptr<TestOperatorLog> log)
      : name_(config.name()), count_(config.intConstant("n")),
        field_(config.stringConstant("field")), log_(std::move(log)) {}

  void process(std::span<const OperatorRow> rows, std::vector<RowResult> &results) override {
    log_->recordBatch(name_, rows);
    for (const OperatorRow &row : rows) {
      std::optional<int64_t> count = countFor(row.inputs[0]);
      if (!count || *count < 0) {
        results.push_back(RowResult::recordFailure("test.split: no child count in " +
                                                   row.inputs[0].str().substr(0, 80)));
        continue;
      }
      ValueList children;
      children.reserve(static_cast<size_t>(*count));
      for (int64_t i = 0; i < *count; ++i)
        children.push_back(Value::integer(i));
      results.push_back(RowResult::ok(Value::list(std::move(children))));
    }
  }

private:
  std::optional<int64_t> countFor(const Value &value) const {
    if (count_ >= 0)
      return count_;
    const Value *source = &value;
    if (!field_.empty())
      source = value.field(field_);
    if (!source)
      return std::nullopt;
    if (source->kind() == Value::Kind::Int)
      return source->asInt();
    if (source->kind() == Value::Kind::List)
      return static_cast<int64_t>(source->asList().size());
    return std::nullopt;
  }

  std::string name_;
  int64_t count_;
  std::string field_;
  std::shared_ptr<TestOperatorLog> log_;
};

class SleepOperator : public Operator {
public:
  SleepOperator(const OperatorConfig &config, std::shared_ptr<TestOperatorLog> log)
      : name_(config.name()), perRowMs_(config.floatConstant("ms")),
        perBatchMs_(config.floatConstant("per_batch_ms")), log_(std::move(log)) {}

  void process(std::span<const OperatorRow> rows, std::vector<RowResult> &results) override {
    log_->recordBatch(name_, rows);
    const double ms = perBatchMs_ + perRowMs_ * static_cast<double>(rows.size());
    if (ms > 0)
      std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms));
    for (const OperatorRow &row : rows)
      results.push_back(RowResult::ok(row.inputs[0]));
  }

private:
  std::string name_;
  double perRowMs_, perBatchMs_;
  std::shared_ptr<TestOperatorLog> log_;
};

class FailOperator : public Operator {
public:
  enum class Kind { Record, Group, Batch, Hang, Crash };

  FailOperator(const OperatorConfig &config, std::shared_ptr<TestOperatorLog> log)
      : name_(config.name()), attempts_(config.intConstant("attempts")),
        when_(config.constant("when") ? config.stringConstant("when") : std::string()),
        perRowMs_(config.constant("ms") ? config.floatConstant("ms") : 0.0),
        perBatchMs_(config.constant("per_batch_ms") ? config.floatConstant("per_batch_ms") : 0.0),
        marks_(config.constant("marks") ? config.stringConstant("marks") : std::string()),
        log_(std::move(log)) {
    const std::string kind = config.stringConstant("kind");
    if (kind == "record")
      kind_ = Kind::Record;
    else if (kind == "group")
      kind_ = Kind::Group;
    else if (kind == "batch")
      kind_ = Kind::Batch;
    else if (kind == "hang")
      kind_ = Kind::Hang;
    else if (kind == "crash")
      kind_ = Kind::Crash;
    else
      throw OperatorError("test.fail: kind must be \"record\", \"group\", \"batch\", \"hang\" "
                          "or \"crash\", not \"" +
                          kind + "\"");
    const std::string ordinals = config.stringConstant("ordinals");
    size_t start = 0;
    while (start < ordinals.size()) {
      size_t end = ordinals.find(',', start);
      if (end == std::string::npos)
        end = ordinals.size();
      uint32_t ordinal = 0;
      auto [ptr, error] = std::from_chars(ordinals.data() + start, ordinals.data() + end, ordinal);
      if (error != std::errc() || ptr != ordinals.data() + end)
        throw OperatorError("test.fail: ordinals must be comma-separated integers, got \"" +
                            ordinals + "\"");
      ordinals_.insert(ordinal);
      start = end + 1;
    }
  }

  void process(std::span<const OperatorRow> rows, std::vector<RowResult> &results) override {
    log_->recordBatch(name_, rows);
    const double ms = perBatchMs_ + perRowMs_ * static_cast<double>(rows.size());
    if (ms > 0)
      std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms));
    std::vector<bool> failing(rows.size(), false);
    for (size_t i = 0; i < rows.size(); ++i) {
      if (!ordinals_.count(rows[i].lineage.ordinal))
        continue;
      if (!when_.empty()) {
        const Value *flag = rows[i].inputs[0].field(when_);
        if (!flag || flag->kind() != Value::Kind::Bool || !flag->asBool())
          continue;
      }
      const int64_t attempt = marks_.empty() ? log_->nextAttempt(name_, rows[i].lineage.key)
                                             : markedAttempt(rows[i].lineage.key);
      failing[i] = attempts_ < 0 || attempt <= attempts_;
    }
    if (kind_ == Kind::Hang && std::find(failing.begin(), failing.end(), true) != failing.end())
      std::this_thread::sleep_for(std::chrono::hours(1));
    if (kind_ == Kind::Crash)
      for (size_t i = 0; i < rows.size(); ++i)
        if (failing[i]) {
          // As a native library that crashes on this item: the whole process goes.
          noteCurrentItem(i);
          ::raise(SIGSEGV);
        }
    for (size_t i = 0; i < rows.size(); ++i) {
      const std::string where =
          "injected failure at ordinal " + std::to_string(rows[i].lineage.ordinal);
      if (!failing[i]) {
        results.push_back(RowResult::ok(rows[i].inputs[0]));
      } else if (kind_ == Kind::Batch || kind_ == Kind::Hang) {
        throw OperatorError("test.fail: " + where);
      } else if (kind_ == Kind::Group) {
        results.push_back(RowResult::groupFailure(where));
      } else {
        results.push_back(RowResult::recordFailure(where));
      }
    }
  }

private:
  std::string name_;
  int64_t attempts_;
  std::string when_;
  double perRowMs_, perBatchMs_;
  /// Attempts counted with files in `marks_` (one per attempt of a row), so that every worker
  /// process agrees on which attempt of a row this is.
  int64_t markedAttempt(uint64_t key) const {
    for (int64_t attempt = 1;; ++attempt) {
      const std::string mark =
          marks_ + "/" + name_ + "-" + std::to_string(key) + "-" + std::to_string(attempt);
      if (std::FILE *file = std::fopen(mark.c_str(), "wx")) {
        std::fclose(file);
        return attempt;
      }
      if (errno != EEXIST)
        throw OperatorError("test.fail: cannot write marks in " + marks_);
    }
  }

  Kind kind_ = Kind::Record;
  std::string marks_;
  std::set<uint32_t> ordinals_;
  std::shared_ptr<TestOperatorLog> log_;
};

class IdentityOperator : public Operator {
public:
  IdentityOperator(const OperatorConfig &config, std::shared_ptr<TestOperatorLog> log)
      : name_(config.name()), log_(std::move(log)) {}

  void process(std::span<const OperatorRow> rows, std::vector<RowResult> &results) override {
    log_->recordBatch(name_, rows);
    for (const OperatorRow &row : rows)
      results.push_back(RowResult::ok(row.inputs[0]));
  }

private:
  std::string name_;
  std::shared_ptr<TestOperatorLog> log_;
};

/// "TAG:VALUE", with the tag a constant or, per row, its second input; a batch that mixes tags
/// throws (the engine must batch per-row constants by value).
class TagOperator : public Operator {
public:
  TagOperator(const OperatorConfig &config, std::shared_ptr<TestOperatorLog> log)
      : name_(config.name()), perRow_(config.inputLabels().size() > 1),
        tag_(perRow_ ? std::string() : config.stringConstant("tag")), log_(std::move(log)) {}

  void process(std::span<const OperatorRow> rows, std::vector<RowResult> &results) override {
    log_->recordBatch(name_, rows);
    for (const OperatorRow &row : rows) {
      const std::string tag = perRow_ ? row.inputs[1].asString() : tag_;
      if (perRow_ && tag != rows[0].inputs[1].asString())
        throw OperatorError("test.tag: one batch holds tags \"" + rows[0].inputs[1].asString() +
                            "\" and \"" + tag + "\"");
      const Value &value = row.inputs[0];
      results.push_back(RowResult::ok(Value::string(
          tag + ":" + (value.kind() == Value::Kind::String ? value.asString() : value.str()))));
    }
  }

private:
  std::string name_;
  bool perRow_;
  std::string tag_;
  std::shared_ptr<TestOperatorLog> log_;
};

/// A Bytes value of `bytes` bytes: its input's text repeated (so that a checksum tells inputs
/// apart).
class BlobOperator : public Operator {
public:
  BlobOperator(const OperatorConfig &config, std::shared_ptr<TestOperatorLog> log)
      : name_(config.name()), bytes_(std::max<int64_t>(0, config.intConstant("bytes"))),
        log_(std::move(log)) {}

  void process(std::span<const OperatorRow> rows, std::vector<RowResult> &results) override {
    log_->recordBatch(name_, rows);
    for (const OperatorRow &row : rows) {
      const std::string seed = row.inputs[0].str() + ";";
      std::string data(static_cast<size_t>(bytes_), '\0');
      for (size_t i = 0; i < data.size(); ++i)
        data[i] = seed[i % seed.size()];
      results.push_back(RowResult::ok(Value::bytes(std::move(data))));
    }
  }

private:
  std::string name_;
  int64_t bytes_;
  std::shared_ptr<TestOperatorLog> log_;
};

/// FNV-1a over everything a value holds: each kind, every byte of strings and binaries (an
/// image's pixels), numbers' bits, record fields' names; never a summary of the value.
void hashValue(const Value &value, uint64_t &hash) {
  auto feed = [&hash](const void *data, size_t size) {
    const auto *bytes = static_cast<const unsigned char *>(data);
    for (size_t i = 0; i < size; ++i)
      hash = (hash ^ bytes[i]) * 1099511628211ull;
  };
  auto feedText = [&](const std::string &text) {
    const uint64_t size = text.size();
    feed(&size, sizeof size);
    feed(text.data(), text.size());
  };
  const auto kind = static_cast<unsigned char>(value.kind());
  feed(&kind, 1);
  switch (value.kind()) {
  case Value::Kind::Null:
    break;
  case Value::Kind::Bool: {
    const unsigned char flag = value.asBool();
    feed(&flag, 1);
    break;
  }
  case Value::Kind::Int: {
    const int64_t number = value.asInt();
    feed(&number, sizeof number);
    break;
  }
  case Value::Kind::Float: {
    const double number = value.asFloat();
    feed(&number, sizeof number);
    break;
  }
  case Value::Kind::String:
    feedText(value.asString());
    break;
  case Value::Kind::Bytes:
    feedText(value.asBytes());
    break;
  case Value::Kind::List:
    for (const Value &element : value.asList())
      hashValue(element, hash);
    break;
  case Value::Kind::Record:
    for (const auto &[name, field] : value.asRecord()) {
      feedText(name);
      hashValue(field, hash);
    }
    break;
  case Value::Kind::Ref:
    feedText(value.str());
    break;
  }
}

class ChecksumOperator : public Operator {
public:
  ChecksumOperator(const OperatorConfig &config, std::shared_ptr<TestOperatorLog> log)
      : name_(config.name()), perRowMs_(config.constant("ms") ? config.floatConstant("ms") : 0.0),
        log_(std::move(log)) {}

  void process(std::span<const OperatorRow> rows, std::vector<RowResult> &results) override {
    log_->recordBatch(name_, rows);
    if (perRowMs_ > 0)
      std::this_thread::sleep_for(
          std::chrono::duration<double, std::milli>(perRowMs_ * static_cast<double>(rows.size())));
    for (const OperatorRow &row : rows) {
      uint64_t hash = 14695981039346656037ull;
      hashValue(row.inputs[0], hash);
      // Positive, so that JSON readers in any language read it exactly.
      results.push_back(RowResult::ok(Value::integer(int64_t(hash >> 11))));
    }
  }

private:
  std::string name_;
  double perRowMs_;
  std::shared_ptr<TestOperatorLog> log_;
};

template <typename T> OperatorFactory factoryOf(std::shared_ptr<TestOperatorLog> log) {
  return [log](const OperatorConfig &config) { return std::make_unique<T>(config, log); };
}

} // namespace

void registerTestOperators(OperatorRegistry &registry, std::shared_ptr<TestOperatorLog> log) {
  if (!log)
    log = std::make_shared<TestOperatorLog>(false);
  registry.addTransform("test.split", factoryOf<SplitOperator>(log));
  registry.addTransform("test.sleep", factoryOf<SleepOperator>(log));
  registry.addTransform("test.fail", factoryOf<FailOperator>(log));
  registry.addTransform("test.identity", factoryOf<IdentityOperator>(log));
  registry.addTransform("test.tag", factoryOf<TagOperator>(log));
  registry.addTransform("test.blob", factoryOf<BlobOperator>(log));
  registry.addTransform("test.checksum", factoryOf<ChecksumOperator>(log));
}

} // namespace orch::runtime
