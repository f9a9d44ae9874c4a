// Helper fusion: a Call of a cheap, pure helper operator (text.len, list.len, text.nonempty,
// math.gt, math.lt) with default options becomes an expression the engine evaluates in place,
// so it never turns into thousands of one-item batches. A Call given options (a batch size,
// retries, a timeout) keeps them and stays a Call.
// Preconditions: the checking passes ran (types and domains are known).
#pragma once

#include "orch/passes/Pass.h"

namespace orch::passes {

std::unique_ptr<Pass> createHelperFusionPass();

} // namespace orch::passes
