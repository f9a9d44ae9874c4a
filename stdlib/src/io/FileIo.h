// Local-file sources and sinks of the standard library (registered by StandardOperators.cpp).
#pragma once

#include "orch/runtime/Operator.h"

#include <string>

namespace orch::stdlib {

/// The File value of `path`: {path, name, stem, size}.
runtime::Value fileValue(const std::string &path);

void registerFileSources(runtime::OperatorRegistry &registry);
void registerFileSinks(runtime::OperatorRegistry &registry);

} // namespace orch::stdlib
