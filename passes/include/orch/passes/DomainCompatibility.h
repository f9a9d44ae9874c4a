// Checks that every call, record and sink combines values of one domain, and that values annotated
// with a domain (`x: Page<Text> = ...`) are in it. Notes say which domains met and suggest
// broadcast or reduce. Preconditions: DomainInference, ExpandReducePairing.
#pragma once

#include "orch/passes/Pass.h"

namespace orch::passes {

std::unique_ptr<Pass> createDomainCompatibilityPass();

} // namespace orch::passes
