// Helpers shared by the standard library's file operators.
#pragma once

#include "orch/runtime/Operator.h"

#include <string>

namespace orch::stdlib {

/// "PATH SIZE MTIME" (or "PATH missing"): what a resumed run checks its inputs against.
std::string fileFingerprint(const std::string &path);

/// The File value of `path`: {path, name, stem, size}.
runtime::Value fileValue(const std::string &path);

} // namespace orch::stdlib
