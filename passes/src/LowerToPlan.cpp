// IR -> plan: a direct transcription, plus the trigger indexes.
#include "orch/passes/LowerToPlan.h"

namespace orch::passes {
namespace {

uint32_t planIndex(uint32_t irIndex) { return irIndex == ir::kNoDomain ? plan::kNone : irIndex; }

} // namespace

plan::Plan lowerToPlan(const ir::Module &module) {
  plan::Plan plan;
  plan.pipelineName = module.pipelineName;
  plan.sourcePath = module.sourcePath;
  plan.operators = module.operators;
  for (const ir::Domain &domain : module.domains)
    plan.domains.push_back({domain.name, planIndex(domain.parent)});
  for (const ir::Call &call : module.calls)
    plan.calls.push_back(
        {call.name, call.op, call.constants, call.options, call.gpu, call.batchKeys});
  for (const ir::Source &source : module.sources)
    plan.sources.push_back({source.op, source.constants, planIndex(source.domain), plan::kNone});
  for (ir::ValueId id = 0; id < module.ops.size(); ++id) {
    const ir::Operation &op = module.op(id);
    plan::PlanNode node;
    node.kind = op.kind;
    node.domain = planIndex(op.domain);
    node.type = op.type;
    node.inputs = op.operands;
    node.labels = op.labels;
    node.field = op.field;
    node.constant = op.constant;
    node.constants = op.constants;
    node.name = op.name;
    node.line = op.location.line;
    node.column = op.location.column;
    if (op.kind == ir::OpKind::Invoke) {
      node.index = op.index;
    } else if (op.kind == ir::OpKind::Source) {
      node.index = op.index;
      plan.sources[op.index].node = id;
    } else if (op.kind == ir::OpKind::Expand) {
      node.index = op.opens;
    }
    plan.nodes.push_back(std::move(node));
  }
  for (const ir::Sink &sink : module.sinks)
    plan.sinks.push_back(
        {sink.op, sink.constants, sink.labels, sink.operands, planIndex(sink.domain)});
  plan::computeTriggerIndexes(plan);
  return plan;
}

} // namespace orch::passes
