// Helpers shared by the standard library's file operators.
#pragma once

#include "orch/runtime/Operator.h"

#include <string>

namespace orch::stdlib {

/// The File value of `path`: {path, name, stem, size}.
runtime::Value fileValue(const std::string &path);

} // namespace orch::stdlib
