// Registers every operator of the standard library that this build implements.
#pragma once

#include "orch/runtime/operators/Operator.h"

namespace orch::stdlib {

void registerStandardOperators(runtime::OperatorRegistry &registry);

} // namespace orch::stdlib
