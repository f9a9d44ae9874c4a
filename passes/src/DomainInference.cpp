// Domain inference: sources are in their root domains; an expand opens its domain below its
// input's; a reduce lands in the parent of its input's domain; a broadcast takes the domain of
// its `like`; a projection stays with its input and a filter with its value (or its mask, for a
// constant value); everything else is in the deepest domain among its inputs (mismatches are the
// compatibility and filter-mask passes' business). Constants, and values computed from constants
// alone, have no domain.
#include "orch/passes/DomainInference.h"

namespace orch::passes {
namespace {

class DomainInferencePass : public Pass {
public:
  std::string_view name() const override { return "domain-inference"; }

  void run(ir::Module &module, DiagnosticEngine &diags) override {
    for (ir::ValueId id = 0; id < module.ops.size(); ++id)
      infer(module, module.op(id), diags);
    for (ir::Sink &sink : module.sinks)
      sink.domain = deepest(module, sink.operands);
  }

private:
  static ir::DomainId deepest(const ir::Module &module, const std::vector<ir::ValueId> &operands) {
    ir::DomainId found = ir::kNoDomain;
    for (ir::ValueId operand : operands) {
      ir::DomainId domain = module.op(operand).domain;
      if (domain != ir::kNoDomain &&
          (found == ir::kNoDomain || module.depth(domain) > module.depth(found)))
        found = domain;
    }
    return found;
  }

  static void infer(ir::Module &module, ir::Operation &op, DiagnosticEngine &diags) {
    auto inputDomain = [&](size_t operand) { return module.op(op.operands[operand]).domain; };
    switch (op.kind) {
    case ir::OpKind::Source:
    case ir::OpKind::Constant:
      return;
    case ir::OpKind::Expand:
      // Its values are in the domain it opens even when the expand itself is wrong, so uses
      // of them are not reported again.
      op.domain = op.opens;
      if (inputDomain(0) == ir::kNoDomain) {
        diags.error(op.location, "expand needs a list from a domain, but its input is a constant");
        return;
      }
      module.domains[op.opens].parent = inputDomain(0);
      return;
    case ir::OpKind::Reduce:
      if (inputDomain(0) == ir::kNoDomain) {
        diags.error(op.location,
                    "reduce needs a value from a child domain, but its input is a constant");
        return;
      }
      // A reduce of a root value stays without a domain; the pairing pass reports it.
      op.domain = module.domains[inputDomain(0)].parent;
      return;
    case ir::OpKind::Project:
      op.domain = inputDomain(0);
      return;
    case ir::OpKind::Broadcast:
      op.domain = inputDomain(1);
      return;
    case ir::OpKind::Filter:
      // A filter is in its value's domain (a mismatched mask is the filter-mask pass's
      // business); a constant kept where a mask is true is per entity of the mask.
      op.domain = inputDomain(0) != ir::kNoDomain ? inputDomain(0) : inputDomain(1);
      return;
    case ir::OpKind::Invoke:
    case ir::OpKind::Record:
    case ir::OpKind::Compute:
    case ir::OpKind::Dedup:
      op.domain = deepest(module, op.operands);
      return;
    }
  }
};

} // namespace

std::unique_ptr<Pass> createDomainInferencePass() {
  return std::make_unique<DomainInferencePass>();
}

} // namespace orch::passes
