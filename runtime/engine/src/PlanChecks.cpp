// Checks that a plan is one the engine can run: domains, broadcasts, sinks' lineage, and
// constant expressions that do not fail.
#include "DomainFreeNodes.h"
#include "PlanLayout.h"

#include "orch/runtime/engine/LineageEngine.h"

namespace orch::runtime {

using plan::NodeKind;

namespace {

std::string nodeLabel(const plan::Plan &plan, uint32_t n) {
  const plan::PlanNode &node = plan.nodes[n];
  std::string text = "node " + std::to_string(n) + " (" + plan::nodeKindName(node.kind);
  if (!node.name.empty())
    text += " '" + node.name + "'";
  return text + ")";
}

std::optional<std::string> checkNode(const plan::Plan &plan, const PlanLayout &layout, uint32_t n) {
  const plan::PlanNode &node = plan.nodes[n];
  auto inputDomain = [&](size_t i) { return plan.nodes[node.inputs[i]].domain; };
  const bool needsDomain = node.kind == NodeKind::Source || node.kind == NodeKind::Invoke ||
                           node.kind == NodeKind::Expand || node.kind == NodeKind::Reduce ||
                           node.kind == NodeKind::Broadcast;
  if (node.domain == plan::kNone) {
    if (needsDomain)
      return nodeLabel(plan, n) + " has no domain";
    for (uint32_t input : node.inputs)
      if (plan.nodes[input].domain != plan::kNone)
        return nodeLabel(plan, n) + " has no domain but reads a value that has one";
    return std::nullopt;
  }
  switch (node.kind) {
  case NodeKind::Source:
    if (node.index >= plan.sources.size() || plan.sources[node.index].node != n)
      return nodeLabel(plan, n) + " is not its source's node";
    if (plan.domains[node.domain].parent != plan::kNone)
      return nodeLabel(plan, n) + " is a source outside a root domain";
    return std::nullopt;
  case NodeKind::Expand:
    if (inputDomain(0) == plan::kNone || plan.domains[node.domain].parent != inputDomain(0) ||
        node.index != node.domain)
      return nodeLabel(plan, n) + " does not open a child domain of its input's domain";
    if (!plan.nodes[node.inputs[0]].type.isList())
      return nodeLabel(plan, n) + " expands a value that is not a list";
    return std::nullopt;
  case NodeKind::Reduce:
    if (inputDomain(0) == plan::kNone || plan.domains[inputDomain(0)].parent != node.domain)
      return nodeLabel(plan, n) + " does not gather a child domain of its own domain";
    return std::nullopt;
  case NodeKind::Broadcast:
    if (inputDomain(0) == plan::kNone || inputDomain(0) == node.domain ||
        !isSameOrAncestorDomain(layout, DomainId(inputDomain(0)), DomainId(node.domain)))
      return nodeLabel(plan, n) + " does not broadcast from a strict ancestor domain";
    return std::nullopt;
  case NodeKind::Invoke: {
    const CallLayout &call = layout.calls[CallId(node.index)];
    std::vector<std::string> mine = node.labels, first = call.inputLabels;
    std::sort(mine.begin(), mine.end());
    std::sort(first.begin(), first.end());
    if (mine != first)
      return nodeLabel(plan, n) + " passes different inputs than the Call's other uses";
    [[fallthrough]];
  }
  default:
    for (size_t i = 0; i < node.inputs.size(); ++i)
      if (inputDomain(i) != plan::kNone && inputDomain(i) != node.domain)
        return nodeLabel(plan, n) + " reads a value of another domain without broadcast";
    return std::nullopt;
  }
}

} // namespace

std::optional<std::string> checkPlanRunnable(const plan::Plan &plan) {
  if (auto problem = plan::validatePlan(plan))
    return problem;
  const PlanLayout layout = buildPlanLayout(plan);
  IdVector<NodeId, Item> constants(plan.nodes.size());
  if (auto problem = evaluateDomainFreeNodes(plan, layout, constants))
    return "a constant expression fails: " + *problem;
  for (uint32_t n = 0; n < plan.nodes.size(); ++n)
    if (auto problem = checkNode(plan, layout, n))
      return problem;
  for (uint32_t d = 0; d < plan.domains.size(); ++d)
    if (plan.domains[d].parent != plan::kNone && !layout.domains[DomainId(d)].openedBy.valid())
      return "domain '" + plan.domains[d].name + "' is opened by no expand";
  for (uint32_t s = 0; s < plan.sinks.size(); ++s)
    for (uint32_t input : plan.sinks[s].inputs) {
      uint32_t domain = plan.nodes[input].domain;
      if (domain != plan::kNone &&
          (plan.sinks[s].domain == plan::kNone ||
           !isSameOrAncestorDomain(layout, DomainId(domain), DomainId(plan.sinks[s].domain))))
        return "sink " + std::to_string(s) + " reads a value outside its domain's lineage";
    }
  return std::nullopt;
}

} // namespace orch::runtime
