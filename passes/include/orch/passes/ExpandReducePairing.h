// Checks that every reduce closes the expand that opened its input's domain: a reduce of a
// root-domain value has no expand to close. Warns about expanded domains whose values are never
// reduced or written. Preconditions: DomainInference.
#pragma once

#include "orch/passes/Pass.h"

namespace orch::passes {

std::unique_ptr<Pass> createExpandReducePairingPass();

} // namespace orch::passes
