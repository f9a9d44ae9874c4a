// Demand (semantics.md): a grain runs only if some consumer needs it for its entity. Sinks and
// other domains need what they read wherever it exists (NodeDemand::Always, PlanLayout.cpp);
// an if needs its condition, then only the chosen branch; a coalesce its operands one at a
// time until one is not dropped; a filter its mask, then its value only where the mask is true
// (or failed: a dropped value stays dropped whatever the mask). A grain whose value an earlier
// run kept (resume down to the child) needs none of its operands: it is sealed with that value
// as soon as it is needed, so a page whose OCR is kept is not rendered again. Any other node
// needs all its operands once it is needed itself. Each consumer settles each distinct operand
// once, needed or not; an item whose consumers all settled without needing it is NOT NEEDED, sealed
// without running, and so are the operands only it would have read. Decisions travel as events in
// the propagation queue, never by recursion.
#include "EngineState.h"

namespace orch::runtime {

using plan::NodeKind;

namespace {

/// The order in which a node settles its operands: a filter settles its mask before its value;
/// every other node in operand order.
size_t settleRank(ChoiceKind choice, size_t position) {
  if (choice == ChoiceKind::Filter)
    return position == 1 ? 0 : 1;
  return position;
}

} // namespace

void LineageEngine::State::startDemand(EntityId entity) {
  const DomainLayout &shape = domainLayout(entities[entity].domain);
  for (NodeId node : shape.neverNeeded) {
    itemOf(entity, node).demand = Demand::NotNeeded;
    work.push_back(Event{entity, node, EventKind::NotNeeded});
  }
  for (NodeId choice : shape.alwaysNeededChoices)
    advanceChoice(entity, choice);
  for (NodeId grain : shape.alwaysNeededRecallables)
    recallOrNeedOperands(entity, grain);
}

void LineageEngine::State::recallOrNeedOperands(EntityId entity, NodeId node) {
  const Value *kept = options.recall(node.index, entities[entity].key);
  settleAllOperands(entity, node, kept == nullptr);
  if (!kept)
    return;
  setPhase(grainOf(entity, node), node, GrainPhase::Sealed);
  ++stats.grainsRecalled;
  setItem(entity, node, ItemOutcome::Present, *kept, kNoIndex);
}

void LineageEngine::State::settleDemand(EntityId entity, NodeId input, bool needed) {
  if (nodeLayout(input).demand != NodeDemand::Conditional)
    return;
  Item &item = itemOf(entity, input);
  if (item.demand == Demand::Needed)
    return;
  if (item.demand == Demand::NotNeeded || item.undecidedConsumers == 0)
    engineInvariantFailed("node " + std::to_string(input.index) + " settled once too often");
  --item.undecidedConsumers;
  if (needed) {
    item.demand = Demand::Needed;
    work.push_back(Event{entity, input, EventKind::Needed});
  } else if (item.undecidedConsumers == 0) {
    item.demand = Demand::NotNeeded;
    work.push_back(Event{entity, input, EventKind::NotNeeded});
  }
}

void LineageEngine::State::settleOperand(EntityId entity, NodeId node, size_t position,
                                         bool needed) {
  const plan::PlanNode &target = planNode(node);
  const ChoiceKind choice = nodeLayout(node).choice;
  const uint32_t operand = target.inputs[position];
  for (size_t other = 0; other < target.inputs.size(); ++other)
    if (target.inputs[other] == operand && settleRank(choice, other) < settleRank(choice, position))
      return;
  if (planNode(NodeId(operand)).domain == target.domain)
    settleDemand(entity, NodeId(operand), needed);
}

void LineageEngine::State::settleAllOperands(EntityId entity, NodeId node, bool needed) {
  for (size_t position = 0; position < planNode(node).inputs.size(); ++position)
    settleOperand(entity, node, position, needed);
}

void LineageEngine::State::becomeNeeded(EntityId entity, NodeId node) {
  switch (nodeLayout(node).choice) {
  case ChoiceKind::None:
    if (nodeLayout(node).recallable)
      recallOrNeedOperands(entity, node);
    else
      settleAllOperands(entity, node, true);
    break;
  case ChoiceKind::If:
  case ChoiceKind::Coalesce:
    settleOperand(entity, node, 0, true);
    advanceChoice(entity, node);
    break;
  case ChoiceKind::Filter:
    settleOperand(entity, node, 1, true);
    advanceChoice(entity, node);
    break;
  }
  // A reduce resolves as its members arrive (gather), not by evaluation.
  if (planNode(node).kind != NodeKind::Reduce)
    evaluate(entity, node);
}

void LineageEngine::State::becomeNotNeeded(EntityId entity, NodeId node) {
  // A node that is never needed was never counted among its operands' consumers.
  if (nodeLayout(node).demand != NodeDemand::Never)
    settleAllOperands(entity, node, false);
  Item &item = itemOf(entity, node);
  if (item.outcome != ItemOutcome::Unresolved) {
    // A reduce resolves whether or not it is needed; anything else waits for its demand.
    if (planNode(node).kind == NodeKind::Reduce)
      return;
    engineInvariantFailed("a resolved item of node " + std::to_string(node.index) +
                          " found not needed");
  }
  if (planNode(node).kind == NodeKind::Invoke) {
    setPhase(grainOf(entity, node), node, GrainPhase::Sealed);
    ++stats.grainsNotNeeded;
    ++loads[nodeLayout(node).call].notNeeded;
  }
  setItem(entity, node, ItemOutcome::NotNeeded, Value(), kNoIndex);
}

void LineageEngine::State::advanceChoice(EntityId entity, NodeId node) {
  const plan::PlanNode &target = planNode(node);
  auto operand = [&](size_t position) -> const Item & {
    return inputItem(entity, NodeId(target.inputs[position]));
  };
  uint8_t &step = itemOf(entity, node).choiceStep;
  switch (nodeLayout(node).choice) {
  case ChoiceKind::None:
    return;
  case ChoiceKind::If: {
    const Item &condition = operand(0);
    if (step != 0 || condition.outcome == ItemOutcome::Unresolved)
      return;
    step = 1;
    const uint32_t chosen = condition.outcome != ItemOutcome::Present
                                ? plan::kNone
                                : target.inputs[isTrue(condition) ? 1 : 2];
    settleOperand(entity, node, 1, target.inputs[1] == chosen);
    settleOperand(entity, node, 2, target.inputs[2] == chosen);
    return;
  }
  case ChoiceKind::Filter: {
    const Item &mask = operand(1);
    if (step != 0 || mask.outcome == ItemOutcome::Unresolved)
      return;
    step = 1;
    settleOperand(entity, node, 0, isTrue(mask) || isFailure(mask.outcome));
    return;
  }
  case ChoiceKind::Coalesce: {
    // `step` is the operand now needed; past the last one, the choice is made.
    const size_t last = target.inputs.size() - 1;
    while (step <= last) {
      const Item &current = operand(step);
      if (current.outcome == ItemOutcome::Unresolved)
        return;
      if (current.outcome == ItemOutcome::Dropped && step < last) {
        ++step;
        settleOperand(entity, node, step, true);
        continue;
      }
      for (size_t later = size_t(step) + 1; later <= last; ++later)
        settleOperand(entity, node, later, false);
      step = static_cast<uint8_t>(last + 1);
    }
    return;
  }
  }
}

} // namespace orch::runtime
