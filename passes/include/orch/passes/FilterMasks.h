// Checks that each filter mask is a Bool in the filtered value's domain.
// Preconditions: DomainInference.
#pragma once

#include "orch/passes/Pass.h"

namespace orch::passes {

std::unique_ptr<Pass> createFilterMasksPass();

} // namespace orch::passes
