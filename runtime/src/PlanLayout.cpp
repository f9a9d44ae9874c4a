// Builds the engine's lookup tables from a plan and checks that the plan is one it can run.
#include "PlanLayout.h"

#include "EngineState.h"

#include "orch/runtime/LineageEngine.h"

#include <algorithm>

namespace orch::runtime {

using plan::NodeKind;

PlanLayout buildPlanLayout(const plan::Plan &plan) {
  PlanLayout layout;
  layout.domains.resize(plan.domains.size());
  for (DomainId d : layout.domains.ids()) {
    DomainLayout &domain = layout.domains[d];
    domain.parent = DomainId(plan.domains[d.index].parent);
    if (domain.parent.valid()) {
      DomainLayout &parent = layout.domains[domain.parent];
      domain.depth = parent.depth + 1;
      domain.childSlot = static_cast<uint32_t>(parent.children.size());
      parent.children.push_back(d);
      domain.pathFromRoot = parent.pathFromRoot;
    }
    domain.pathFromRoot.push_back(d);
  }
  layout.calls.resize(plan.calls.size());
  layout.nodes.resize(plan.nodes.size());
  for (NodeId n : layout.nodes.ids()) {
    const plan::PlanNode &node = plan.nodes[n.index];
    NodeLayout &info = layout.nodes[n];
    if (node.domain == plan::kNone) {
      layout.domainFreeNodes.push_back(n);
      continue;
    }
    DomainLayout &domain = layout.domains[DomainId(node.domain)];
    info.itemSlot = static_cast<uint32_t>(domain.nodes.size());
    domain.nodes.push_back(n);
    switch (node.kind) {
    case NodeKind::Invoke: {
      info.grainSlot = static_cast<uint32_t>(domain.invokes.size());
      domain.invokes.push_back(n);
      info.call = CallId(node.index);
      CallLayout &call = layout.calls[info.call];
      if (call.nodes.empty())
        call.inputLabels = node.labels;
      call.nodes.push_back(n);
      for (const std::string &label : call.inputLabels) {
        auto position = std::find(node.labels.begin(), node.labels.end(), label);
        info.inputOrder.push_back(static_cast<uint32_t>(position - node.labels.begin()));
      }
      break;
    }
    case NodeKind::Expand:
      layout.domains[DomainId(node.index)].openedBy = n;
      break;
    case NodeKind::Reduce: {
      DomainLayout &gathered = layout.domains[DomainId(plan.nodes[node.inputs[0]].domain)];
      info.reduceSlot = static_cast<uint32_t>(gathered.reducesOver.size());
      gathered.reducesOver.push_back(n);
      break;
    }
    case NodeKind::Broadcast:
      domain.broadcasts.push_back(n);
      break;
    default:
      break;
    }
  }
  for (NodeId n : layout.nodes.ids())
    if (plan.nodes[n.index].kind == NodeKind::Compute)
      layout.nodes[n].compute =
          plan::computeOpNamed(plan.nodes[n.index].field).value_or(plan::ComputeOp::Add);
  // What a root waits for before it can finish: the items its sinks read, and the expansions
  // that may still add sink rows.
  for (const plan::PlanSink &sink : plan.sinks) {
    for (DomainId d(sink.domain); d.valid() && !layout.domains[d].sinksAtOrBelow;
         d = layout.domains[d].parent)
      layout.domains[d].sinksAtOrBelow = true;
    for (uint32_t input : sink.inputs)
      if (plan.nodes[input].domain != plan::kNone)
        layout.nodes[NodeId(input)].sinkInput = true;
  }
  for (NodeId n : layout.nodes.ids())
    if (layout.nodes[n].sinkInput)
      ++layout.domains[DomainId(plan.nodes[n.index].domain)].pendingSinkInputs;
  for (NodeId n : layout.nodes.ids()) {
    const plan::PlanNode &node = plan.nodes[n.index];
    if (node.kind != NodeKind::Invoke && node.kind != NodeKind::Expand)
      continue;
    // An invoke reads items of its own entity; an expand, its parent's.
    const uint32_t readDomain = node.kind == NodeKind::Invoke
                                    ? node.domain
                                    : layout.domains[DomainId(node.domain)].parent.index;
    for (uint32_t input : node.inputs) {
      const plan::PlanNode &read = plan.nodes[input];
      const bool onlyThisGrain = read.consumers.size() == 1 && read.consumers[0] == n.index &&
                                 read.sinks.empty() && !layout.nodes[NodeId(input)].sinkInput;
      // A source row stays: it names its row in failure reports.
      if (onlyThisGrain && read.domain == readDomain && read.kind != NodeKind::Source &&
          std::find(layout.nodes[n].releasedWhenDone.begin(),
                    layout.nodes[n].releasedWhenDone.end(),
                    NodeId(input)) == layout.nodes[n].releasedWhenDone.end())
        layout.nodes[n].releasedWhenDone.push_back(NodeId(input));
    }
    if (node.kind == NodeKind::Invoke && !layout.nodes[n].releasedWhenDone.empty())
      layout.calls[layout.nodes[n].call].releasesInputs = true;
  }
  for (DomainLayout &domain : layout.domains)
    for (DomainId child : domain.children)
      domain.pendingSinkInputs += layout.domains[child].sinksAtOrBelow ? 1 : 0;
  return layout;
}

bool isSameOrAncestorDomain(const PlanLayout &layout, DomainId ancestor, DomainId domain) {
  for (DomainId d = domain; d.valid(); d = layout.domains[d].parent)
    if (d == ancestor)
      return true;
  return false;
}

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
