// Checks that each broadcast brings a value from a strict ancestor domain down to a descendant.
// Preconditions: DomainInference.
#pragma once

#include "orch/passes/Pass.h"

namespace orch::passes {

std::unique_ptr<Pass> createBroadcastScopingPass();

} // namespace orch::passes
