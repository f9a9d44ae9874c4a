// The pass pipeline.
#include "orch/passes/Pipeline.h"

#include "orch/ir/Verifier.h"
#include "orch/passes/Acyclicity.h"
#include "orch/passes/BroadcastScoping.h"
#include "orch/passes/DedupLowering.h"
#include "orch/passes/DomainCompatibility.h"
#include "orch/passes/DomainInference.h"
#include "orch/passes/ExpandReducePairing.h"
#include "orch/passes/FilterMasks.h"
#include "orch/passes/HelperFusion.h"
#include "orch/passes/LowerToPlan.h"
#include "orch/passes/OutputConflicts.h"
#include "orch/passes/UnusedValues.h"

namespace orch::passes {

void addCheckingPasses(PassManager &passes) {
  passes.add(createAcyclicityPass());
  passes.add(createDomainInferencePass());
  passes.add(createExpandReducePairingPass());
  passes.add(createBroadcastScopingPass());
  passes.add(createDomainCompatibilityPass());
  passes.add(createFilterMasksPass());
  passes.add(createOutputConflictsPass());
  passes.add(createUnusedValuesPass());
  passes.add(createHelperFusionPass());
  passes.add(createDedupLoweringPass());
}

std::optional<plan::Plan> compileModule(ir::Module &module, DiagnosticEngine &diags,
                                        const PassManagerOptions &options) {
  if (!ir::verifyModule(module, diags))
    return std::nullopt;
  PassManager passes(options);
  addCheckingPasses(passes);
  if (!passes.run(module, diags))
    return std::nullopt;
  // The runtime refuses a plan that fails validation; checking here turns a lowering bug into a
  // loud internal error instead of a plan file nobody can run.
  plan::Plan plan = lowerToPlan(module);
  if (std::optional<std::string> problem = plan::validatePlan(plan)) {
    diags.internalError({}, "lowering produced an invalid plan: " + *problem);
    return std::nullopt;
  }
  return plan;
}

} // namespace orch::passes
