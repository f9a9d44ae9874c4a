// The compiler's middle and back end, spelled out in one place: verify the IR, run the checking
// passes in order, lower to a plan.
#pragma once

#include "orch/ir/Diagnostics.h"
#include "orch/ir/Module.h"
#include "orch/passes/Pass.h"
#include "orch/plan/Plan.h"

#include <optional>

namespace orch::passes {

/// Adds the checking passes, in the order their preconditions require.
void addCheckingPasses(PassManager &passes);

/// Verifies `module`, runs the checking passes, lowers it and validates the plan as the runtime
/// will; nullopt after an error (an invalid plan is an internal error).
std::optional<plan::Plan> compileModule(ir::Module &module, DiagnosticEngine &diags,
                                        const PassManagerOptions &options = {});

} // namespace orch::passes
