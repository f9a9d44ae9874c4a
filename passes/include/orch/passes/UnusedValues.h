// Warns about named values and declared Calls that nothing uses.
// Preconditions: none.
#pragma once

#include "orch/passes/Pass.h"

namespace orch::passes {

std::unique_ptr<Pass> createUnusedValuesPass();

} // namespace orch::passes
