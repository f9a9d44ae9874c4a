// Gives every value its domain and links each expanded domain to its parent.
// Preconditions: IR generation: values of sources are in their root domain; every other domain is
// opened by exactly one expand. Reports an expand or reduce of a constant (nothing to expand or
// gather).
#pragma once

#include "orch/passes/Pass.h"

namespace orch::passes {

std::unique_ptr<Pass> createDomainInferencePass();

} // namespace orch::passes
