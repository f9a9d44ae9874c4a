// Outputs that would silently lose rows: two sinks writing the same file, a `files` sink whose
// name does not vary with its rows (each row overwrites the last), a pipeline with no sink.
// Preconditions: domain inference.
#pragma once

#include "orch/passes/Pass.h"

namespace orch::passes {

std::unique_ptr<Pass> createOutputConflictsPass();

} // namespace orch::passes
