// Unused values: a named value nothing reads, or a declared Call nothing invokes, is most
// likely a mistake (a typo in a later use, a forgotten sink).
#include "orch/passes/UnusedValues.h"

namespace orch::passes {
namespace {

class UnusedValuesPass : public Pass {
public:
  std::string_view name() const override { return "unused-values"; }

  void run(ir::Module &module, DiagnosticEngine &diags) override {
    std::vector<unsigned> uses(module.ops.size(), 0);
    std::vector<unsigned> invocations(module.calls.size(), 0);
    for (const ir::Operation &op : module.ops) {
      for (ir::ValueId operand : op.operands)
        ++uses[operand];
      if (op.kind == ir::OpKind::Invoke)
        ++invocations[op.index];
    }
    for (const ir::Sink &sink : module.sinks)
      for (ir::ValueId operand : sink.operands)
        ++uses[operand];
    for (ir::ValueId id = 0; id < module.ops.size(); ++id) {
      const ir::Operation &op = module.op(id);
      if (!op.name.empty() && uses[id] == 0)
        diags.warning(op.nameLocation.isKnown() ? op.nameLocation : op.location,
                      "value '" + op.name + "' is never used");
    }
    for (size_t call = 0; call < module.calls.size(); ++call)
      if (module.calls[call].declared && invocations[call] == 0)
        diags.warning(module.calls[call].location,
                      "call '" + module.calls[call].name + "' is never used");
  }
};

} // namespace

std::unique_ptr<Pass> createUnusedValuesPass() { return std::make_unique<UnusedValuesPass>(); }

} // namespace orch::passes
