// Evaluates the domain-free nodes of a plan (constants and expressions of constants only).
#include "DomainFreeNodes.h"
#include "EngineInvariant.h"

#include "orch/plan/PlanPositions.h"
#include "orch/runtime/values/ComputeEval.h"

namespace orch::runtime {

using plan::NodeKind;

std::string describeComputeFailure(const plan::Plan &plan, NodeId node, const std::string &why) {
  const plan::PlanNode &target = plan.nodes[node.index];
  const std::string where = plan::sourceLocation(plan, target.line, target.column) + ": ";
  if (target.field == plan::computeOpName(plan::ComputeOp::Cast)) {
    const plan::PlanNode &input = plan.nodes[target.inputs[0]];
    if (input.kind == NodeKind::Project)
      return where + "field '" + input.field + "' " + why;
    return where + (input.name.empty() ? "the value" : "'" + input.name + "'") + " " + why;
  }
  return where + why;
}

std::optional<std::string> evaluateDomainFreeNodes(const plan::Plan &plan, const PlanLayout &layout,
                                                   IdVector<NodeId, Item> &values) {
  // Values that are the same in every domain: computed once, in plan order.
  for (NodeId n : layout.domainFreeNodes) {
    const plan::PlanNode &node = plan.nodes[n.index];
    Item &item = values[n];
    auto input = [&](size_t i) -> const Item & { return values[NodeId(node.inputs[i])]; };
    switch (node.kind) {
    case NodeKind::Constant: {
      item.outcome = ItemOutcome::Present;
      std::visit(
          [&](const auto &constant) {
            using T = std::decay_t<decltype(constant)>;
            if constexpr (std::is_same_v<T, bool>)
              item.value = Value::boolean(constant);
            else if constexpr (std::is_same_v<T, int64_t>)
              item.value = Value::integer(constant);
            else if constexpr (std::is_same_v<T, double>)
              item.value = Value::real(constant);
            else if constexpr (std::is_same_v<T, std::string>)
              item.value = Value::string(constant);
            else if constexpr (std::is_same_v<T, plan::Duration>)
              item.value = Value::integer(constant.nanoseconds);
            else
              item.value = Value::integer(constant.bytes);
          },
          *node.constant);
      break;
    }
    case NodeKind::Record: {
      RecordFields fields;
      for (size_t i = 0; i < node.inputs.size(); ++i)
        fields.emplace_back(node.labels[i], input(i).value);
      item.value = Value::record(std::move(fields));
      item.outcome = ItemOutcome::Present;
      break;
    }
    case NodeKind::Project: {
      const Value *field = input(0).value.field(node.field);
      item.value = field ? *field : Value();
      item.outcome = ItemOutcome::Present;
      break;
    }
    case NodeKind::Filter:
      if (input(1).value.kind() == Value::Kind::Bool && input(1).value.asBool())
        item = input(0);
      else
        item.outcome = ItemOutcome::Dropped;
      break;
    case NodeKind::Compute: {
      // Constants are present, or dropped by a filter of constants: the rules of the entity
      // path, without waiting (every input is known).
      const plan::ComputeOp op = layout.nodes[n].compute;
      if (op == plan::ComputeOp::If) {
        const Item &condition = input(0);
        item = condition.outcome != ItemOutcome::Present                                 ? condition
               : condition.value.kind() == Value::Kind::Bool && condition.value.asBool() ? input(1)
                                                                                         : input(2);
        break;
      }
      if (op == plan::ComputeOp::Coalesce) {
        item.outcome = ItemOutcome::Dropped;
        for (size_t i = 0; i < node.inputs.size(); ++i)
          if (input(i).outcome != ItemOutcome::Dropped) {
            item = input(i);
            break;
          }
        break;
      }
      std::vector<Value> operands;
      bool dropped = false;
      for (size_t i = 0; i < node.inputs.size(); ++i) {
        dropped |= input(i).outcome == ItemOutcome::Dropped;
        operands.push_back(input(i).value);
      }
      if (dropped) {
        item.outcome = ItemOutcome::Dropped;
        break;
      }
      ComputeOutcome outcome = evaluateCompute(op, operands, node.type);
      if (outcome.failure)
        return describeComputeFailure(plan, n, *outcome.failure);
      item.value = std::move(outcome.value);
      item.outcome = ItemOutcome::Present;
      break;
    }
    default:
      engineInvariantFailed(std::string("a domain-free ") + plan::nodeKindName(node.kind));
    }
  }
  return std::nullopt;
}

} // namespace orch::runtime
