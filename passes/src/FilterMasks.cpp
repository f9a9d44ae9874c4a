// Filter masks: a Bool per entity of the filtered value's domain.
#include "orch/passes/FilterMasks.h"

#include "DomainExplanations.h"

namespace orch::passes {
namespace {

class FilterMasksPass : public Pass {
public:
  std::string_view name() const override { return "filter-masks"; }

  void run(ir::Module &module, DiagnosticEngine &diags) override {
    for (const ir::Operation &op : module.ops) {
      if (op.kind != ir::OpKind::Filter)
        continue;
      const ir::Operation &value = module.op(op.operands[0]);
      const ir::Operation &mask = module.op(op.operands[1]);
      if (mask.type.kind() != plan::TypeKind::Bool) {
        diags.error(module.useLocation(op, 1),
                    "a filter mask must be Bool, not " + mask.type.str());
        continue;
      }
      // Constants fit in every domain, on either side.
      if (mask.domain == ir::kNoDomain || value.domain == ir::kNoDomain ||
          mask.domain == value.domain)
        continue;
      diags
          .error(module.useLocation(op, 1),
                 "the filter mask is in " + quotedDomain(module, mask.domain) +
                     " but the filtered value is in " + quotedDomain(module, value.domain) +
                     "; they must be in the same domain")
          .attachNote(module.useLocation(op, 0), whereValueIs(module, value));
    }
  }
};

} // namespace

std::unique_ptr<Pass> createFilterMasksPass() { return std::make_unique<FilterMasksPass>(); }

} // namespace orch::passes
