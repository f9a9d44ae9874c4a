// Builds the engine's lookup tables from a plan.
#include "PlanLayout.h"

#include <algorithm>

namespace orch::runtime {

using plan::NodeKind;

namespace {

/// The most operands a coalesce may have for its operands to be needed one at a time, and the
/// most consumers a conditionally needed node may have (the counters in an Item are a byte and
/// seven bits): beyond them, operands are simply always needed.
constexpr size_t kMaxChoiceOperands = 254;
constexpr size_t kMaxConsumersThatMayNeed = 127;
/// The most readers an item counts down (Item::readersLeft is a byte): beyond them it stays.
constexpr size_t kMaxReaders = 255;

/// Whether values of a type are a Bool, an Int or a Float (Duration and Size are Ints), which
/// checkValueType holds every result of the type to.
bool isFixedSizeScalar(plan::TypeKind kind) {
  using plan::TypeKind;
  return kind == TypeKind::Bool || kind == TypeKind::Int || kind == TypeKind::Float ||
         kind == TypeKind::Duration || kind == TypeKind::Size;
}

/// What a grain of `call` can add to the values held where types bound it: its result, and
/// what expressions make from it, which the budget counts as the Call's growth (EngineCommit).
/// 0 where something is not bounded: a result or a computed value that is not a Bool, Int or
/// Float (a count joined to its document's text), one made for each child of the grain's
/// entity (a document's score broadcast to its pages), or a choice it decides (a filter's mask,
/// an if's condition, a coalesce's operand) whose other operands are made only when it asks
/// (a page's text kept where its score passes). A record counts its fields' bytes only where
/// none of them holds more than a scalar (setItem), so its size is bounded by its fields.
/// Needs every node's demand and choice (classifyDemand).
uint64_t boundedGrowthPerGrain(const plan::Plan &plan, const PlanLayout &layout,
                               const CallLayout &call) {
  if (call.nodes.empty())
    return 0;
  uint64_t bound = 0;
  for (NodeId result : call.nodes) {
    const plan::PlanNode &made = plan.nodes[result.index];
    if (!isFixedSizeScalar(made.type.kind()))
      return 0;
    bound += kScalarHeldBytes;
    std::vector<bool> seen(plan.nodes.size());
    std::vector<uint32_t> choices;
    std::vector<uint32_t> toVisit(made.consumers.begin(), made.consumers.end());
    while (!toVisit.empty()) {
      const uint32_t n = toVisit.back();
      toVisit.pop_back();
      const plan::PlanNode &node = plan.nodes[n];
      if (seen[n] || node.kind == NodeKind::Invoke) // an Invoke's results are its own Call's
        continue;
      seen[n] = true;
      if (layout.nodes[NodeId(n)].choice != ChoiceKind::None)
        choices.push_back(n);
      if (node.kind == NodeKind::Compute || node.kind == NodeKind::Record) {
        if (!isSameOrAncestorDomain(layout, DomainId(node.domain), DomainId(made.domain)))
          return 0;
        if (node.kind == NodeKind::Compute && !isFixedSizeScalar(node.type.kind()))
          return 0;
        bound += kScalarHeldBytes;
        if (node.kind == NodeKind::Record)
          for (const std::string &field : node.labels)
            bound += field.size() + kScalarHeldBytes;
      }
      toVisit.insert(toVisit.end(), node.consumers.begin(), node.consumers.end());
    }
    // A choice's operands not made from the result are made anyway, or only when it asks.
    for (uint32_t choice : choices)
      for (uint32_t operand : plan.nodes[choice].inputs)
        if (operand != result.index && !seen[operand] &&
            plan.nodes[operand].domain != plan::kNone &&
            layout.nodes[NodeId(operand)].demand != NodeDemand::Always)
          return 0;
  }
  return bound;
}

ChoiceKind choiceKindOf(const plan::PlanNode &node, const NodeLayout &info) {
  if (node.kind == NodeKind::Filter)
    return ChoiceKind::Filter;
  if (node.kind != NodeKind::Compute)
    return ChoiceKind::None;
  if (info.compute == plan::ComputeOp::If)
    return ChoiceKind::If;
  if (info.compute == plan::ComputeOp::Coalesce && node.inputs.size() <= kMaxChoiceOperands)
    return ChoiceKind::Coalesce;
  return ChoiceKind::None;
}

/// NodeLayout::readers of `n`: its distinct consumers when all are of its own domain and its
/// item may go before its entity does; 0 when it stays.
uint8_t readersThatRelease(const plan::Plan &plan, const PlanLayout &layout, NodeId n) {
  const plan::PlanNode &node = plan.nodes[n.index];
  if (node.domain == plan::kNone || node.kind == NodeKind::Source || !node.sinks.empty() ||
      layout.nodes[n].sinkInput || node.consumers.empty())
    return 0;
  std::vector<uint32_t> distinct;
  for (uint32_t consumer : node.consumers) {
    // A consumer of another domain (an expand, a reduce, a broadcast) reads it for as long as
    // the entity lives.
    if (plan.nodes[consumer].domain != node.domain)
      return 0;
    if (std::find(distinct.begin(), distinct.end(), consumer) == distinct.end())
      distinct.push_back(consumer);
  }
  return distinct.size() > kMaxReaders ? 0 : static_cast<uint8_t>(distinct.size());
}

/// Classifies every node's demand (NodeDemand), from the sinks back: nodes come after their
/// inputs, so one pass from the last node to the first sees every consumer before its inputs.
void classifyDemand(const plan::Plan &plan, bool recallsGrains, PlanLayout &layout) {
  const size_t count = plan.nodes.size();
  std::vector<NodeDemand> demand(count, NodeDemand::Never);
  auto raise = [&](uint32_t node, NodeDemand to) { demand[node] = std::min(demand[node], to); };
  for (uint32_t n = 0; n < count; ++n) {
    const plan::PlanNode &node = plan.nodes[n];
    const NodeKind kind = node.kind;
    if (kind == NodeKind::Source || kind == NodeKind::Expand || kind == NodeKind::Broadcast ||
        layout.nodes[NodeId(n)].sinkInput)
      raise(n, NodeDemand::Always);
    for (uint32_t consumer : node.consumers)
      if (plan.nodes[consumer].domain != node.domain)
        raise(n, NodeDemand::Always);
  }
  for (uint32_t n = static_cast<uint32_t>(count); n-- > 0;) {
    const plan::PlanNode &node = plan.nodes[n];
    NodeLayout &info = layout.nodes[NodeId(n)];
    info.choice = choiceKindOf(node, info);
    info.recallable = recallsGrains && node.kind == NodeKind::Invoke &&
                      plan.calls[node.index].options.checkpoint != plan::CheckpointPolicy::Never;
    if (node.domain == plan::kNone)
      continue;
    if (demand[n] == NodeDemand::Conditional) {
      size_t mayNeed = 0;
      for (uint32_t consumer : node.consumers)
        mayNeed += demand[consumer] != NodeDemand::Never;
      if (mayNeed > kMaxConsumersThatMayNeed)
        demand[n] = NodeDemand::Always;
      info.consumersThatMayNeed = static_cast<uint8_t>(std::min(mayNeed, kMaxConsumersThatMayNeed));
    }
    info.demand = demand[n];
    DomainLayout &domain = layout.domains[DomainId(node.domain)];
    if (demand[n] == NodeDemand::Never) {
      domain.neverNeeded.push_back(NodeId(n));
      continue;
    }
    if (demand[n] == NodeDemand::Always && info.choice != ChoiceKind::None)
      domain.alwaysNeededChoices.push_back(NodeId(n));
    if (demand[n] == NodeDemand::Always && info.recallable)
      domain.alwaysNeededRecallables.push_back(NodeId(n));
    for (size_t p = 0; p < node.inputs.size(); ++p) {
      const uint32_t input = node.inputs[p];
      // Other domains' inputs are always needed already; constants need nothing.
      if (plan.nodes[input].domain != node.domain)
        continue;
      raise(input,
            demand[n] == NodeDemand::Always && !isChosenOperand(info.choice, p) && !info.recallable
                ? NodeDemand::Always
                : NodeDemand::Conditional);
    }
  }
  for (DomainLayout &domain : layout.domains) {
    std::reverse(domain.neverNeeded.begin(), domain.neverNeeded.end());
    std::reverse(domain.alwaysNeededChoices.begin(), domain.alwaysNeededChoices.end());
    std::reverse(domain.alwaysNeededRecallables.begin(), domain.alwaysNeededRecallables.end());
    domain.startsDemand = !domain.neverNeeded.empty() || !domain.alwaysNeededChoices.empty() ||
                          !domain.alwaysNeededRecallables.empty();
  }
}

} // namespace

bool isChosenOperand(ChoiceKind choice, size_t position) {
  switch (choice) {
  case ChoiceKind::None:
    return false;
  case ChoiceKind::If:
  case ChoiceKind::Coalesce:
    return position > 0;
  case ChoiceKind::Filter:
    return position == 0;
  }
  return false;
}

PlanLayout buildPlanLayout(const plan::Plan &plan, bool recallsGrains) {
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
      info.skipsFailedMembers = node.field == plan::kReduceSkipsFailed;
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
  for (CallId c : layout.calls.ids()) {
    CallLayout &call = layout.calls[c];
    for (const std::string &key : plan.calls[c.index].batchKeys) {
      auto found = std::find(call.inputLabels.begin(), call.inputLabels.end(), key);
      if (found != call.inputLabels.end())
        call.batchKeyLabels.push_back(uint32_t(found - call.inputLabels.begin()));
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
    layout.nodes[n].readers = readersThatRelease(plan, layout, n);
    if (node.kind != NodeKind::Invoke && node.kind != NodeKind::Expand)
      continue;
    if (node.kind == NodeKind::Expand) {
      // An expand reads its parent's item: the list goes once the children hold its elements.
      const uint32_t input = node.inputs[0];
      const plan::PlanNode &read = plan.nodes[input];
      if (read.consumers.size() == 1 && read.consumers[0] == n.index && read.sinks.empty() &&
          !layout.nodes[NodeId(input)].sinkInput && read.kind != NodeKind::Source &&
          read.domain == layout.domains[DomainId(node.domain)].parent.index)
        layout.nodes[n].listReleasedWhenMade = NodeId(input);
    }
    if (node.kind == NodeKind::Invoke)
      for (uint32_t input : node.inputs)
        if (plan.nodes[input].kind == NodeKind::Invoke) {
          std::vector<CallId> &readers = layout.calls[layout.nodes[NodeId(input)].call].readers;
          const CallId reader = layout.nodes[n].call;
          if (std::find(readers.begin(), readers.end(), reader) == readers.end())
            readers.push_back(reader);
        }
  }
  for (CallLayout &call : layout.calls) {
    call.keepsResults =
        !call.nodes.empty() && std::all_of(call.nodes.begin(), call.nodes.end(),
                                           [&](NodeId n) { return layout.nodes[n].readers == 0; });
    auto isScalar = [&](uint32_t n) { return isFixedSizeScalar(plan.nodes[n].type.kind()); };
    bool scalarInputs = !call.inputLabels.empty();
    for (NodeId n : call.nodes) {
      const std::vector<uint32_t> &inputs = plan.nodes[n.index].inputs;
      scalarInputs = scalarInputs && std::all_of(inputs.begin(), inputs.end(), isScalar);
    }
    call.inputBytesBound = scalarInputs ? kScalarHeldBytes * call.inputLabels.size() : 0;
  }
  for (DomainLayout &domain : layout.domains)
    for (DomainId child : domain.children)
      domain.pendingSinkInputs += layout.domains[child].sinksAtOrBelow ? 1 : 0;
  classifyDemand(plan, recallsGrains, layout);
  for (CallLayout &call : layout.calls)
    call.growthBytesBound = boundedGrowthPerGrain(plan, layout, call);
  return layout;
}

bool isSameOrAncestorDomain(const PlanLayout &layout, DomainId ancestor, DomainId domain) {
  for (DomainId d = domain; d.valid(); d = layout.domains[d].parent)
    if (d == ancestor)
      return true;
  return false;
}

} // namespace orch::runtime
