// Dedup lowering: `dedup.exact(x)` becomes a Dedup operation the engine decides in source order;
// `dedup.near(text)` becomes a Call of `dedup.minhash` (batched on workers, with the Call's
// options) whose signatures a Dedup operation compares. Checks their settings.
// Preconditions: the checking passes ran (types and domains are known).
#pragma once

#include "orch/passes/Pass.h"

namespace orch::passes {

std::unique_ptr<Pass> createDedupLoweringPass();

} // namespace orch::passes
