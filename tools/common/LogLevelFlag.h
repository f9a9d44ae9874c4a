// `--log-level` of `orch run` and `orch worker`: how much of the libraries' and operators' own
// output the process shows (runtime/operators/LibraryMessages.h).
#pragma once

#include <string>

namespace orch::tools {

/// Sets the process's log level from the flag's value ("error", "warning", "info", "debug"),
/// and $ORCH_LOG_LEVEL so that the local workers it starts show the same. False, with a message
/// naming `program`, for another value.
bool applyLogLevelFlag(const std::string &value, const char *program);

} // namespace orch::tools
