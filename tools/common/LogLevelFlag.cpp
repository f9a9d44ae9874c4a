// `--log-level` (LogLevelFlag.h).
#include "LogLevelFlag.h"

#include "orch/runtime/operators/LibraryMessages.h"

#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

namespace orch::tools {

bool applyLogLevelFlag(const std::string &value, const char *program) {
  const std::optional<runtime::LogLevel> level = runtime::parseLogLevel(value);
  if (!level) {
    llvm::errs() << program << ": error: --log-level is one of error, warning, info, debug; got '"
                 << value << "'\n";
    return false;
  }
  runtime::setLogLevel(*level);
  ::setenv("ORCH_LOG_LEVEL", value.c_str(), 1);
  return true;
}

} // namespace orch::tools
