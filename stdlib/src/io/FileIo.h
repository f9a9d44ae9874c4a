// Helpers shared by the standard library's file operators.
#pragma once

#include "orch/runtime/operators/Operator.h"

#include <string>
#include <vector>

namespace orch::stdlib {

/// "PATH SIZE MTIME" (or "PATH missing"): what a resumed run checks its inputs against.
std::string fileFingerprint(const std::string &path);
/// The fingerprints of `paths`, one line each.
std::string filesFingerprint(const std::vector<std::string> &paths);

/// The paths `pattern` matches, sorted; OperatorError naming `op` when it cannot be expanded.
std::vector<std::string> expandGlob(const std::string &pattern, const std::string &op);

/// The File value of `path`: {path, name, stem, size}.
runtime::Value fileValue(const std::string &path);

} // namespace orch::stdlib
