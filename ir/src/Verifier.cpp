// Structural checks of IR modules.
#include "orch/ir/Verifier.h"

namespace orch::ir {
namespace {

class ModuleVerifier {
public:
  ModuleVerifier(const Module &module, DiagnosticEngine &diags) : module_(module), diags_(diags) {}

  bool run() {
    for (DomainId id = 0; id < module_.domains.size(); ++id) {
      DomainId parent = module_.domains[id].parent;
      if (parent != kNoDomain && parent >= module_.domains.size())
        fail({}, "domain " + module_.domains[id].name + " has an invalid parent");
    }
    for (ValueId id = 0; id < module_.ops.size(); ++id)
      verifyOp(id, module_.ops[id]);
    for (const Sink &sink : module_.sinks) {
      if (sink.labels.size() != sink.operands.size())
        fail(sink.location, "sink " + sink.op + " has " + std::to_string(sink.operands.size()) +
                                " operands but " + std::to_string(sink.labels.size()) + " labels");
      for (ValueId operand : sink.operands)
        if (operand >= module_.ops.size())
          fail(sink.location,
               "sink " + sink.op + " uses undefined value %" + std::to_string(operand));
    }
    return ok_;
  }

private:
  void verifyOp(ValueId id, const Operation &op) {
    std::string what = "%" + std::to_string(id) + " (" + plan::nodeKindName(op.kind) + ")";
    size_t expected = plan::expectedInputCount(op.kind, op.labels.size());
    if (op.kind == OpKind::Compute) {
      std::optional<size_t> operands = plan::expectedComputeOperands(op.field, op.operands.size());
      if (!operands)
        fail(op.location, what + " names no operation ('" + op.field + "')");
      expected = operands.value_or(op.operands.size());
    }
    if (op.kind == OpKind::Dedup)
      expected = op.field == plan::kDedupNear ? 2 : 1;
    if (op.operands.size() != expected)
      fail(op.location, what + " has " + std::to_string(op.operands.size()) +
                            " operands, expected " + std::to_string(expected));
    if (!op.operandLocations.empty() && op.operandLocations.size() != op.operands.size())
      fail(op.location, what + " has use locations for some operands only");
    for (ValueId operand : op.operands)
      if (operand >= module_.ops.size())
        fail(op.location, what + " uses undefined value %" + std::to_string(operand));
    if (op.domain != kNoDomain && op.domain >= module_.domains.size())
      fail(op.location, what + " is in an invalid domain");
    if (op.kind == OpKind::Invoke && op.index >= module_.calls.size())
      fail(op.location, what + " invokes an undefined call");
    if (op.kind == OpKind::Source && op.index >= module_.sources.size())
      fail(op.location, what + " reads an undefined source");
    if (op.kind == OpKind::Constant && !op.constant)
      fail(op.location, what + " has no value");
    if (op.kind == OpKind::Expand &&
        (op.opens >= module_.domains.size() || module_.domains[op.opens].openedBy != id))
      fail(op.location, what + " does not open its domain");
  }

  void fail(SourceLocation at, const std::string &message) {
    diags_.internalError(at, "invalid IR: " + message);
    ok_ = false;
  }

  const Module &module_;
  DiagnosticEngine &diags_;
  bool ok_ = true;
};

} // namespace

bool verifyModule(const Module &module, DiagnosticEngine &diags) {
  return ModuleVerifier(module, diags).run();
}

} // namespace orch::ir
