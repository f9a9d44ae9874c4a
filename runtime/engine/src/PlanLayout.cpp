// Builds the engine's lookup tables from a plan.
#include "PlanLayout.h"

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

} // namespace orch::runtime
