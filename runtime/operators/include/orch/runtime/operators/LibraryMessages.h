// What the libraries operators use print (leptonica's "Error in boxClipToRectangle", poppler's
// syntax warnings, a Python operator's prints), re-emitted with the Call, the replica and, where
// known, the source row, at a level the user can silence (`--log-level`, docs/cli.md).
//
// Each library's message hook (leptSetStderrHandler, poppler's debug function) calls
// reportLibraryMessage on the thread that printed; runOperatorBatch marks that thread busy with
// its batch (OperatorActivity), and operators that go item by item say which item they are on
// (noteCurrentItem), so that a message names the row it came from.
#pragma once

#include "orch/runtime/engine/EngineTypes.h"
#include "orch/runtime/engine/RowInProgress.h"

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace orch::runtime {

class OperatorConfig;

/// How much the run says besides its progress, summary and errors: `error` and `warning` hide
/// the libraries' and operators' own output (and warnings for `error`); `info` (the default)
/// shows it; `debug` adds more.
enum class LogLevel { Error, Warning, Info, Debug };

std::optional<LogLevel> parseLogLevel(std::string_view name);
/// The process's level: $ORCH_LOG_LEVEL when set and valid (local workers inherit it), else
/// Info, until setLogLevel.
LogLevel logLevel();
void setLogLevel(LogLevel level);
inline bool logs(LogLevel level) { return level <= logLevel(); }

/// While alive (on the stack of the thread running the batch), messages printed on this thread
/// belong to `batch` on `config`'s replica.
class OperatorActivity {
public:
  OperatorActivity(const OperatorConfig &config, const Batch &batch);
  ~OperatorActivity();
  OperatorActivity(const OperatorActivity &) = delete;
  OperatorActivity &operator=(const OperatorActivity &) = delete;

  const OperatorConfig &config;
  const Batch &batch;
  /// The item the operator said it works on (noteCurrentItem), if it said.
  std::optional<size_t> item;

private:
  /// The activity this one interrupts (an operator that runs another): back when it ends.
  OperatorActivity *previous_;
  /// The row a crash on this thread is blamed on (the batch's one row, or the item the operator
  /// says it is on), for the crash quarantine.
  RowInProgressScope row_;
};

/// The operator on this thread works on item `index` of its batch now (a crash meanwhile is
/// blamed on that item's row: RowInProgress.h).
void noteCurrentItem(size_t index);

/// `library` printed `text` (one or more lines) on this thread: each line goes to the
/// operator's log as "replica 0, row 12 (member 3): leptonica: Error in ...", when the log level
/// shows `level`. Off an operator's thread it goes to standard error as "orch: leptonica: ...".
void reportLibraryMessage(std::string_view library, std::string_view text,
                          LogLevel level = LogLevel::Info);

/// What the batch this thread runs comes from, for a message: "row 12 (member 3)" when the
/// operator said which item it is on, else the batch's rows ("rows 3, 5 and 7"); "" off a batch.
std::string currentItems();

} // namespace orch::runtime
