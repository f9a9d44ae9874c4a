// Structural verification of an IR module: operand references, arities, indexes into calls,
// sources and domains. A failure is a compiler bug, reported as an internal error.
#pragma once

#include "orch/ir/Diagnostics.h"
#include "orch/ir/Module.h"

namespace orch::ir {

bool verifyModule(const Module &module, DiagnosticEngine &diags);

} // namespace orch::ir
