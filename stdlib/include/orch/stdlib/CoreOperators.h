// Pure, in-memory operators of the standard library: math.*, list.* and text.* (except
// text.normalize, which arrives with the Unicode work of the stdlib issue).
#pragma once

#include "orch/runtime/Operator.h"

namespace orch::stdlib {

void registerCoreOperators(runtime::OperatorRegistry &registry);

} // namespace orch::stdlib
