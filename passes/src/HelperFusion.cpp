// Helper fusion (HelperFusion.h): Invokes of fusable Calls become Compute operations, and the
// Calls nothing invokes any more leave the module.
#include "orch/passes/HelperFusion.h"

#include "orch/plan/HelperOperators.h"

#include <array>
#include <optional>

namespace orch::passes {
namespace {

using FusableHelper = plan::HelperOperator;

const FusableHelper *fusableHelper(const ir::Call &call) {
  if (call.optionsWritten || !call.constants.empty())
    return nullptr;
  return plan::findHelperOperator(call.op);
}

class HelperFusionPass : public Pass {
public:
  std::string_view name() const override { return "helper-fusion"; }

  void run(ir::Module &module, DiagnosticEngine &) override {
    std::vector<const FusableHelper *> fused(module.calls.size());
    for (size_t call = 0; call < module.calls.size(); ++call)
      fused[call] = fusableHelper(module.calls[call]);
    for (ir::Operation &op : module.ops)
      if (op.kind == ir::OpKind::Invoke && fused[op.index])
        fuse(op, *fused[op.index]);
    // The remaining Calls, renumbered in their order.
    std::vector<uint32_t> renumbered(module.calls.size(), UINT32_MAX);
    std::vector<ir::Call> kept;
    for (size_t call = 0; call < module.calls.size(); ++call)
      if (!fused[call]) {
        renumbered[call] = static_cast<uint32_t>(kept.size());
        kept.push_back(std::move(module.calls[call]));
      }
    module.calls = std::move(kept);
    for (ir::Operation &op : module.ops)
      if (op.kind == ir::OpKind::Invoke)
        op.index = renumbered[op.index];
  }

private:
  static void fuse(ir::Operation &op, const FusableHelper &helper) {
    std::vector<ir::ValueId> operands;
    std::vector<SourceLocation> locations;
    for (const char *input : helper.inputs) {
      if (!input)
        break;
      for (size_t i = 0; i < op.labels.size(); ++i)
        if (op.labels[i] == input) {
          operands.push_back(op.operands[i]);
          if (i < op.operandLocations.size())
            locations.push_back(op.operandLocations[i]);
        }
    }
    op.kind = ir::OpKind::Compute;
    op.field = plan::computeOpName(helper.compute);
    op.operands = std::move(operands);
    op.operandLocations = std::move(locations);
    op.labels.clear();
    op.index = 0;
  }
};

} // namespace

std::unique_ptr<Pass> createHelperFusionPass() { return std::make_unique<HelperFusionPass>(); }

} // namespace orch::passes
