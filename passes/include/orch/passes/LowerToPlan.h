// Lowers a checked IR module to the executable plan: nodes in operation order, domains in
// declaration order (parents first), and the trigger indexes precomputed.
// Preconditions: the checking passes succeeded (every value has its domain; no cycle).
#pragma once

#include "orch/ir/Module.h"
#include "orch/plan/Plan.h"

namespace orch::passes {

plan::Plan lowerToPlan(const ir::Module &module);

} // namespace orch::passes
