// Library output with its Call, replica and row (LibraryMessages.h).
#include "orch/runtime/operators/LibraryMessages.h"

#include "orch/runtime/operators/Operator.h"

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <set>
#include <unistd.h>

namespace orch::runtime {
namespace {

thread_local OperatorActivity *current = nullptr;

/// One write per line: library messages come from several threads at once.
void writeLine(const std::string &line) {
  for (size_t written = 0; written < line.size();) {
    const ssize_t n = ::write(STDERR_FILENO, line.data() + written, line.size() - written);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return;
    written += size_t(n);
  }
}

LogLevel levelFromEnvironment() {
  const char *named = std::getenv("ORCH_LOG_LEVEL");
  std::optional<LogLevel> level = named ? parseLogLevel(named) : std::nullopt;
  return level.value_or(LogLevel::Info);
}

std::atomic<int> &levelSetting() {
  static std::atomic<int> level{int(levelFromEnvironment())};
  return level;
}

std::string describeItems(const Batch &batch, std::optional<size_t> item) {
  auto one = [](const GrainLineage &lineage) {
    return "row " + std::to_string(lineage.sourceRow) +
           (lineage.depth > 0 ? " (member " + std::to_string(lineage.ordinal) + ")" : "");
  };
  if (item && *item < batch.grains.size())
    return one(batch.grains[*item].lineage);
  std::set<uint64_t> rows;
  for (const BatchGrain &grain : batch.grains)
    rows.insert(grain.lineage.sourceRow);
  if (rows.size() == 1)
    return "row " + std::to_string(*rows.begin());
  std::string text = "rows ";
  size_t shown = 0;
  for (uint64_t row : rows) {
    if (shown == 5) {
      text += " and " + std::to_string(rows.size() - shown) + " more";
      break;
    }
    text += (shown == 0 ? "" : (shown + 1 == rows.size() ? " and " : ", ")) + std::to_string(row);
    ++shown;
  }
  return text;
}

} // namespace

std::optional<LogLevel> parseLogLevel(std::string_view name) {
  if (name == "error")
    return LogLevel::Error;
  if (name == "warning")
    return LogLevel::Warning;
  if (name == "info")
    return LogLevel::Info;
  if (name == "debug")
    return LogLevel::Debug;
  return std::nullopt;
}

LogLevel logLevel() { return LogLevel(levelSetting().load(std::memory_order_relaxed)); }
void setLogLevel(LogLevel level) { levelSetting().store(int(level), std::memory_order_relaxed); }

OperatorActivity::OperatorActivity(const OperatorConfig &config_, const Batch &batch_)
    : config(config_), batch(batch_), previous_(current) {
  current = this;
  // A crash is blamed on a row only when the batch holds no other (an operator that says which
  // item it is on narrows it down: noteCurrentItem).
  currentRowInProgress = RowInProgress{};
  if (batch.grains.empty())
    return;
  const GrainLineage &first = batch.grains.front().lineage;
  for (const BatchGrain &grain : batch.grains)
    if (grain.lineage.source != first.source || grain.lineage.sourceRow != first.sourceRow)
      return;
  currentRowInProgress = RowInProgress{RowActivity::Running, first.source, first.sourceRow};
}

OperatorActivity::~OperatorActivity() { current = previous_; }

void noteCurrentItem(size_t index) {
  if (!current)
    return;
  current->item = index;
  if (index < current->batch.grains.size()) {
    const GrainLineage &lineage = current->batch.grains[index].lineage;
    currentRowInProgress = RowInProgress{RowActivity::Running, lineage.source, lineage.sourceRow};
  }
}

std::string currentItems() {
  return current ? describeItems(current->batch, current->item) : std::string();
}

void reportLibraryMessage(std::string_view library, std::string_view text, LogLevel level) {
  if (!logs(level))
    return;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string_view::npos)
      end = text.size();
    std::string_view line = text.substr(begin, end - begin);
    begin = end + 1;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' '))
      line.remove_suffix(1);
    if (line.empty())
      continue;
    if (current)
      current->config.log("replica " + std::to_string(current->config.replica()) + ", " +
                          currentItems() + ": " + std::string(library) + ": " + std::string(line));
    else
      writeLine("orch: " + std::string(library) + ": " + std::string(line) + "\n");
  }
}

} // namespace orch::runtime
