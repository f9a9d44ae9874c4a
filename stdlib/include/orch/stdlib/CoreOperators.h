// Pure, in-memory operators of the standard library: math.*, list.* and text.* (text.normalize,
// which needs ICU, lives in stdlib/src/text/).
#pragma once

#include "orch/runtime/operators/Operator.h"

namespace orch::stdlib {

void registerCoreOperators(runtime::OperatorRegistry &registry);

} // namespace orch::stdlib
