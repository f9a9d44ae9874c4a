// Checks that the dataflow graph has no cycle, whatever order its operations are in.
// Preconditions: none.
// Reports a cycle with the operations on it.
#pragma once

#include "orch/passes/Pass.h"

namespace orch::passes {

std::unique_ptr<Pass> createAcyclicityPass();

} // namespace orch::passes
