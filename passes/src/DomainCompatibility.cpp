// Domain compatibility: one call, record or sink works on one entity at a time, so all its
// inputs must be in one domain (constants fit anywhere). Annotated domains are checked too.
#include "orch/passes/DomainCompatibility.h"

#include "DomainExplanations.h"

#include <optional>

namespace orch::passes {
namespace {

/// How a Compute operation is written in source ("+", "if", "coalesce", ...).
std::string computeSpelling(const ir::Operation &op) {
  std::optional<plan::ComputeOp> compute = plan::computeOpNamed(op.field);
  return compute ? plan::computeOpSpelling(*compute) : op.field;
}

class DomainCompatibilityPass : public Pass {
public:
  std::string_view name() const override { return "domain-compatibility"; }

  void run(ir::Module &module, DiagnosticEngine &diags) override {
    for (const ir::Operation &op : module.ops) {
      if (op.kind == ir::OpKind::Invoke) {
        std::string call = "'" + module.calls[op.index].name + "'";
        if (op.domain == ir::kNoDomain && !op.operands.empty())
          diags.error(op.location, "call " + call +
                                       " has only constant inputs; at least one must come from a "
                                       "source");
        checkOperands(module, op.operands, op.operandLocations, op.location, "call " + call, diags);
      } else if (op.kind == ir::OpKind::Record) {
        checkOperands(module, op.operands, op.operandLocations, op.location, "a record", diags);
      } else if (op.kind == ir::OpKind::Compute) {
        checkOperands(module, op.operands, op.operandLocations, op.location,
                      "'" + computeSpelling(op) + "'", diags);
        if (op.field == plan::computeOpName(plan::ComputeOp::Ordinal) && op.domain == ir::kNoDomain)
          diags.error(op.location, "'ordinal' needs a value from a domain (a source, or what "
                                   "an expand made), not a constant");
      }
      checkAnnotation(module, op, diags);
    }
    for (const ir::Sink &sink : module.sinks) {
      if (sink.domain == ir::kNoDomain)
        diags.error(sink.location, "sink '" + sink.op +
                                       "' writes only constants; at least one input must come "
                                       "from a source");
      checkOperands(module, sink.operands, sink.operandLocations, sink.location,
                    "sink '" + sink.op + "'", diags);
    }
  }

private:
  static void checkOperands(const ir::Module &module, const std::vector<ir::ValueId> &operands,
                            const std::vector<SourceLocation> &uses, SourceLocation at,
                            const std::string &where, DiagnosticEngine &diags) {
    auto useOf = [&](size_t index) {
      return index < uses.size() ? uses[index] : module.op(operands[index]).location;
    };
    std::optional<size_t> first;
    for (size_t index = 0; index < operands.size(); ++index) {
      const ir::Operation &value = module.op(operands[index]);
      if (value.domain == ir::kNoDomain)
        continue;
      if (!first) {
        first = index;
        continue;
      }
      const ir::Operation &firstValue = module.op(operands[*first]);
      if (value.domain == firstValue.domain)
        continue;
      // Explain from the deeper value's side: that is the one to reduce.
      bool valueIsDeeper = module.depth(value.domain) >= module.depth(firstValue.domain);
      const ir::Operation &deeper = valueIsDeeper ? value : firstValue;
      const ir::Operation &other = valueIsDeeper ? firstValue : value;
      diags
          .error(at, "cannot combine values of domains " + quotedDomain(module, firstValue.domain) +
                         " and " + quotedDomain(module, value.domain) + " in " + where)
          .attachNote(useOf(*first), whereValueIs(module, firstValue))
          .attachNote(useOf(index), whereValueIs(module, value))
          .attachNote(useOf(valueIsDeeper ? index : *first),
                      suggestion(module, deeper.domain, other.domain, deeper));
      return;
    }
  }

  static void checkAnnotation(const ir::Module &module, const ir::Operation &op,
                              DiagnosticEngine &diags) {
    if (!op.expectedDomain || op.domain == ir::kNoDomain ||
        module.domainName(op.domain) == *op.expectedDomain)
      return;
    auto error = diags.error(op.expectedDomainLocation,
                             "'" + op.name + "' is declared in domain '" + *op.expectedDomain +
                                 "' but its value is in " + quotedDomain(module, op.domain));
    for (ir::DomainId expected = 0; expected < module.domains.size(); ++expected)
      if (module.domains[expected].name == *op.expectedDomain)
        error.attachNote(op.location, suggestion(module, op.domain, expected, op));
  }
};

} // namespace

std::unique_ptr<Pass> createDomainCompatibilityPass() {
  return std::make_unique<DomainCompatibilityPass>();
}

} // namespace orch::passes
