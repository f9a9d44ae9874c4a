// The lineage engine: admission, entities and items, propagation to a fixed point, finished
// roots and their rows. Dispatch and the commit rule are in EngineCommit.cpp.
#include "EngineState.h"
#include "KeyedReadyQueue.h"
#include "orch/runtime/engine/RowInProgress.h"

#include <algorithm>
#include <stdexcept>

namespace orch::runtime {

using plan::NodeKind;

void engineInvariantFailed(const std::string &what) {
  throw std::logic_error("orch: lineage engine invariant broken (a bug in Orch): " + what);
}

namespace {

uint64_t mixKey(uint64_t value) {
  value += 0x9e3779b97f4a7c15ULL;
  value = (value ^ (value >> 30)) * 0xbf58476d1ce4e5b9ULL;
  value = (value ^ (value >> 27)) * 0x94d049bb133111ebULL;
  return value ^ (value >> 31);
}

/// A finished row that never ran (a source error, an abort): failed with one cause.
RootResult failedRoot(uint64_t admission, uint32_t source, uint64_t sourceRow,
                      std::vector<Failure> failures) {
  RootResult result;
  result.admission = admission;
  result.source = source;
  result.sourceRow = sourceRow;
  result.status = RootStatus::Failed;
  result.failures = std::move(failures);
  return result;
}

/// Failures from the lowest ordinal path up (a stable sort: equal paths keep the order they
/// happened in), so that the first one, the root's cause, does not depend on timing.
void orderFailuresByPath(RootResult &result) {
  std::vector<uint32_t> order(result.failures.size());
  for (uint32_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return result.failures[a].path < result.failures[b].path;
  });
  std::vector<uint32_t> newIndex(order.size());
  std::vector<Failure> sorted;
  sorted.reserve(order.size());
  for (uint32_t i = 0; i < order.size(); ++i) {
    newIndex[order[i]] = i;
    sorted.push_back(std::move(result.failures[order[i]]));
  }
  result.failures = std::move(sorted);
  for (SinkRow &row : result.rows)
    if (row.failure != kNoIndex)
      row.failure = newIndex[row.failure];
  for (SkippedMember &skipped : result.skippedMembers)
    skipped.cause = newIndex[skipped.cause];
  // Members left out in path order, whatever order their reduces resolved in.
  std::sort(result.skippedMembers.begin(), result.skippedMembers.end(),
            [](const SkippedMember &a, const SkippedMember &b) { return a.path < b.path; });
}

/// Each failed row's cause is the failure with the lowest ordinal path under the row's entity
/// among those known when its root finished (semantics.md, the cause rule), so that a row, its
/// root and the errors journal name the same cause whatever order failures arrived in.
/// `result.failures` must be ordered by path.
void attributeRowsToLowestFailures(RootResult &result) {
  for (SinkRow &row : result.rows) {
    if (row.status != RowStatus::Failed)
      continue;
    auto lowest = std::lower_bound(result.failures.begin(), result.failures.end(), row.path,
                                   [](const Failure &failure, const std::vector<uint32_t> &path) {
                                     return failure.path < path;
                                   });
    if (lowest != result.failures.end() && lowest->path.size() >= row.path.size() &&
        std::equal(row.path.begin(), row.path.end(), lowest->path.begin()))
      row.failure = uint32_t(lowest - result.failures.begin());
  }
}

} // namespace

LineageEngine::State::State(const plan::Plan &plan_, EngineOptions options_)
    : plan(plan_), options(std::move(options_)),
      layout(buildPlanLayout(plan_, bool(options.recall))), items(plan_.domains.size()),
      grains(plan_.domains.size()), expansionRefs(plan_.domains.size()),
      nextSourceRow(plan_.sources.size(), 0), unsealedGrains(plan_.domains.size(), 0),
      unexpanded(plan_.domains.size(), 0), parked(plan_.domains.size()) {
  for (const DomainLayout &domain : layout.domains) {
    itemsPerDomain.push_back(static_cast<uint32_t>(domain.nodes.size()));
    grainsPerDomain.push_back(static_cast<uint32_t>(domain.invokes.size()));
    childrenPerDomain.push_back(static_cast<uint32_t>(domain.children.size()));
  }
  policy = makeDispatchPolicy(options);
  for (uint32_t c = 0; c < plan.calls.size(); ++c)
    queues.push_back(CallQueues{makeFreshQueue(CallId(c)), {}, {}, {}});
  loads.resize(plan.calls.size());
  firstSplitCause.resize(plan.calls.size());
  memory.limit = options.valueBudgetBytes;
  domainFree.resize(plan.nodes.size());
  if (std::optional<std::string> problem = evaluateDomainFreeNodes(plan, layout, domainFree))
    engineInvariantFailed("a constant expression failed after checkPlanRunnable: " + *problem);
  setUpSequencers();
  filterOf.resize(plan.nodes.size(), kNoIndex);
  for (uint32_t n = 0; n < plan.nodes.size(); ++n)
    if (plan.nodes[n].kind == NodeKind::Filter) {
      filterOf[NodeId(n)] = uint32_t(filters.size());
      filters.push_back(
          FilterProgress{plan.nodes[n].name, plan.nodes[n].line, plan.nodes[n].column, 0, 0, 0});
    }
}

// --- Entities and items -------------------------------------------------------------------

EntityId LineageEngine::State::createEntity(DomainId domain, EntityId parent, uint32_t ordinal,
                                            RootId root, uint64_t key) {
  const EntityId id = allocateSlot(entities, freeEntities);
  Entity &entity = entities[id];
  entity.parent = parent;
  entity.ordinal = ordinal;
  entity.root = root;
  entity.domain = domain;
  entity.live = true;
  entity.key = key;
  const DomainLayout &shape = layout.domains[domain];
  entity.items = items.allocate(domain, itemsPerDomain[domain]);
  entity.grains = grains.allocate(domain, grainsPerDomain[domain]);
  entity.expansions = expansionRefs.allocate(domain, childrenPerDomain[domain]);
  for (uint32_t i = 0; i < itemsPerDomain[domain]; ++i) {
    Item &item = items[entity.items + i];
    item = Item{};
    const NodeLayout &node = nodeLayout(shape.nodes[i]);
    if (node.demand == NodeDemand::Conditional) {
      item.demand = Demand::Undecided;
      item.undecidedConsumers = node.consumersThatMayNeed;
    }
    item.readersLeft = node.readers;
  }
  for (uint32_t g = 0; g < grainsPerDomain[domain]; ++g) {
    Grain &grain = grains[entity.grains + g];
    grain.phase = GrainPhase::Waiting;
    grain.ticket = 0;
    ++loads[nodeLayout(shape.invokes[g]).call].waiting;
  }
  for (uint32_t c = 0; c < childrenPerDomain[domain]; ++c) {
    expansionRefs[entity.expansions + c] = ExpansionId();
    ++unexpanded[shape.children[c]];
  }
  unsealedGrains[domain] += grainsPerDomain[domain];
  roots[root].unresolved += itemsPerDomain[domain];
  roots[root].pendingSinkInputs += shape.pendingSinkInputs;
  ++stats.entitiesCreated;
  if (shape.startsDemand)
    startDemand(id);
  return id;
}

Item &LineageEngine::State::itemOf(EntityId entity, NodeId node) {
  return items[entities[entity].items + nodeLayout(node).itemSlot];
}

const Item &LineageEngine::State::inputItem(EntityId entity, NodeId node) const {
  const DomainId domain = domainOf(node);
  if (!domain.valid())
    return domainFree[node];
  EntityId at = entity;
  while (entities[at].domain != domain) {
    at = entities[at].parent;
    if (!at.valid())
      engineInvariantFailed("node " + std::to_string(node.index) + " read outside its lineage");
  }
  return items[entities[at].items + nodeLayout(node).itemSlot];
}

Grain &LineageEngine::State::grainOf(EntityId entity, NodeId node) {
  return grains[entities[entity].grains + nodeLayout(node).grainSlot];
}

ExpansionId LineageEngine::State::expansionOf(EntityId entity, DomainId childDomain) const {
  return expansionRefs[entities[entity].expansions + domainLayout(childDomain).childSlot];
}

std::vector<uint32_t> LineageEngine::State::pathOf(EntityId entity) const {
  std::vector<uint32_t> path;
  for (EntityId at = entity; entities[at].parent.valid(); at = entities[at].parent)
    path.push_back(entities[at].ordinal);
  std::reverse(path.begin(), path.end());
  return path;
}

uint32_t LineageEngine::State::recordFailure(EntityId entity, FailureKind kind, CallId call,
                                             std::string message) {
  Root &root = roots[entities[entity].root];
  root.failures.push_back(Failure{kind, call.valid() ? planCall(call).name : std::string(),
                                  pathOf(entity), std::move(message)});
  return static_cast<uint32_t>(root.failures.size() - 1);
}

namespace {

/// Nodes whose value may be one of their inputs' as it is (a filter's, an if's).
bool passesInputsOn(NodeKind kind) {
  return kind == NodeKind::Filter || kind == NodeKind::Broadcast || kind == NodeKind::Project ||
         kind == NodeKind::Compute || kind == NodeKind::Dedup;
}

} // namespace

void LineageEngine::State::setItem(EntityId entity, NodeId node, ItemOutcome outcome, Value value,
                                   uint32_t cause) {
  Item &item = itemOf(entity, node);
  if (item.outcome != ItemOutcome::Unresolved)
    engineInvariantFailed("item of node " + std::to_string(node.index) + " resolved twice (" +
                          itemOutcomeName(item.outcome) + ", then " + itemOutcomeName(outcome) +
                          ")");
  if (isFailure(outcome) && cause == kNoIndex)
    engineInvariantFailed("a failed item without a cause");
  item.outcome = outcome;
  item.value = std::move(value);
  item.cause = isFailure(outcome) ? cause : kNoIndex;
  const uint64_t bytes = heldBytes(item.value); // walks a list: once
  // A filter's or a choice's value is one of its inputs': counted there once. Which one is
  // kept (in `cause`, unused by a present item): another input may come to hold the same
  // value later (a dedup deciding after an `if` took the coalesce beside it). A record's
  // fields are its inputs' values: they count there (a record of a page and its document's
  // image per page counted both again, and computed nodes are not held back by the budget).
  const plan::PlanNode &planned = planNode(node);
  if (planned.kind == NodeKind::Record) {
    item.countedByInput = bytes > 16 && std::any_of(planned.inputs.begin(), planned.inputs.end(),
                                                    [&](uint32_t input) {
                                                      return recordKeeps(entity, NodeId(input));
                                                    });
  } else if (passesInputsOn(planned.kind) && bytes > 16) {
    const uint32_t sharedAt = sharedInputPosition(entity, node);
    item.countedByInput = sharedAt != kNoIndex;
    if (item.countedByInput)
      item.cause = sharedAt;
  }
  // The inputs it has finished reading go first: a page is not counted twice while its text
  // is set. Those whose values it passes on stay while it does.
  const bool keepsAnInput = item.countedByInput; // else keepsInput is false for every input
  forEachDistinctInput(node, [&](NodeId input) {
    if (!keepsAnInput || !keepsInput(entity, node, input))
      readerDone(entity, input);
  });
  const uint64_t counted = item.countedByInput                ? 0
                           : planned.kind == NodeKind::Reduce ? reducedListBytes(item.value)
                                                              : bytes;
  holdBytes(entities[entity].root, counted);
  if (madeByExpression(planned.kind))
    memory.computed += counted;
  if (nodeLayout(node).readers == 0)
    memory.kept += counted;
  // The event keeps the root unresolved until its consumers have been visited.
  work.push_back(Event{entity, node});
}

uint32_t LineageEngine::State::sharedInputPosition(EntityId entity, NodeId node) const {
  const Value &value = inputItem(entity, node).value;
  const std::vector<uint32_t> &inputs = planNode(node).inputs;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (value.sharesPayloadWith(inputItem(entity, NodeId(inputs[i])).value))
      return static_cast<uint32_t>(i);
  return kNoIndex;
}

void LineageEngine::State::readerDone(EntityId entity, NodeId input) {
  // Only an input of the reader's own entity counts its readers (NodeLayout::readers).
  if (nodeLayout(input).readers == 0 || domainOf(input) != entities[entity].domain)
    return;
  Item &item = itemOf(entity, input);
  if (item.readersLeft == 0)
    engineInvariantFailed("node " + std::to_string(input.index) + " read once too often");
  if (--item.readersLeft == 0 && item.visited)
    dropValue(entity, input);
}

uint64_t LineageEngine::State::countedBytes(NodeId node, const Item &item) const {
  if (item.countedByInput)
    return 0;
  return planNode(node).kind == NodeKind::Reduce ? reducedListBytes(item.value)
                                                 : heldBytes(item.value);
}

bool LineageEngine::State::recordKeeps(EntityId entity, NodeId input) const {
  return heldBytes(inputItem(entity, input).value) > 16;
}

bool LineageEngine::State::keepsInput(EntityId entity, NodeId node, NodeId input) const {
  const Item &item = inputItem(entity, node);
  if (!item.countedByInput)
    return false;
  if (planNode(node).kind == NodeKind::Record)
    return recordKeeps(entity, input);
  return NodeId(planNode(node).inputs[item.cause]) == input;
}

template <typename Visit>
void LineageEngine::State::forEachDistinctInput(NodeId node, Visit &&visit) {
  const std::vector<uint32_t> &inputs = planNode(node).inputs;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (std::find(inputs.begin(), inputs.begin() + i, inputs[i]) == inputs.begin() + i)
      visit(NodeId(inputs[i]));
}

void LineageEngine::State::dropValue(EntityId entity, NodeId node) {
  Item &item = itemOf(entity, node);
  const uint64_t bytes = countedBytes(node, item);
  releaseItemBytes(entities[entity].root, node, bytes);
  bytesReleasedByGrains += bytes;
  // The values it passed on let go of it, back along a chain of filters and choices.
  if (item.countedByInput)
    forEachDistinctInput(node, [&](NodeId input) {
      if (keepsInput(entity, node, input))
        readerDone(entity, input);
    });
  itemOf(entity, node).value = Value();
}

void LineageEngine::State::releaseExpandedList(EntityId entity, NodeId expandNode) {
  const NodeId list = nodeLayout(expandNode).listReleasedWhenMade;
  if (!list.valid())
    return;
  Item &item = itemOf(entity, list);
  const uint64_t bytes = countedBytes(list, item);
  releaseItemBytes(entities[entity].root, list, bytes);
  forgetKept(list, bytes);
  item.value = Value();
}

void LineageEngine::State::forgetKept(NodeId node, uint64_t bytes) {
  if (nodeLayout(node).readers != 0)
    return;
  if (bytes > memory.kept)
    engineInvariantFailed("more kept bytes released than held");
  memory.kept -= bytes;
}

void LineageEngine::State::setPhase(Grain &grain, NodeId node, GrainPhase to) {
  if (!isLegalGrainTransition(grain.phase, to))
    engineInvariantFailed(std::string("grain transition ") + grainPhaseName(grain.phase) + " -> " +
                          grainPhaseName(to) + " of node " + std::to_string(node.index));
  CallLoad &load = loads[nodeLayout(node).call];
  auto counter = [&](GrainPhase phase) -> uint64_t & {
    switch (phase) {
    case GrainPhase::Waiting:
      return load.waiting;
    case GrainPhase::Ready:
      return load.ready;
    case GrainPhase::InFlight:
      return load.inFlight;
    case GrainPhase::Sealed:
      break;
    }
    return load.sealed;
  };
  --counter(grain.phase);
  ++counter(to);
  if (to == GrainPhase::Sealed)
    --unsealedGrains[domainOf(node)];
  grain.phase = to;
  ++stats.grainTransitions;
}

// --- Propagation --------------------------------------------------------------------------

void LineageEngine::State::propagate() {
  // Each event names its row for the crash quarantine (RowInProgress.h) while it is handled.
  const RowInProgressScope restoredAfter;
  for (;;) {
    do {
      // `work` may grow while an event is processed: index, never iterate.
      for (size_t next = 0; next < work.size(); ++next)
        processEvent(Event(work[next]));
      work.clear();
    } while (releaseParkedReduces());
    // Dedup decisions the new outcomes allow, in source order, and what they resolve.
    if (advanceSequencers())
      continue;
    if (rootsToFinish.empty())
      break;
    // Finished roots may let a sequencer pass them: look again after they go.
    std::vector<RootId> finishing;
    finishing.swap(rootsToFinish);
    for (RootId root : finishing)
      finishRoot(root);
  }
}

void LineageEngine::State::processEvent(const Event &event) {
  const Root &owner = roots[entities[event.entity].root];
  currentRowInProgress = RowInProgress{RowActivity::Computing, owner.source, owner.sourceRow};
  switch (event.kind) {
  case EventKind::Needed:
    becomeNeeded(event.entity, event.node);
    return;
  case EventKind::NotNeeded:
    becomeNotNeeded(event.entity, event.node);
    return;
  case EventKind::Resolved:
    break;
  }
  const DomainId domain = entities[event.entity].domain;
  for (uint32_t index : planNode(event.node).consumers) {
    const NodeId consumer(index);
    if (domainOf(consumer) == domain) {
      evaluate(event.entity, consumer);
      continue;
    }
    const plan::PlanNode &target = planNode(consumer);
    switch (target.kind) {
    case NodeKind::Expand:
      materialise(event.entity, consumer);
      break;
    case NodeKind::Reduce:
      gather(event.entity, consumer);
      break;
    case NodeKind::Broadcast:
      broadcastDown(event.entity, consumer);
      break;
    default:
      engineInvariantFailed(std::string("a ") + plan::nodeKindName(target.kind) +
                            " consumer in another domain");
    }
  }
  // Its readers may all have finished already (failed by another input): it goes now.
  Item &item = itemOf(event.entity, event.node);
  item.visited = true;
  if (item.readersLeft == 0 && nodeLayout(event.node).readers > 0)
    dropValue(event.entity, event.node);
  const RootId root = entities[event.entity].root;
  if (nodeLayout(event.node).sinkInput)
    sinkInputResolved(root);
  if (--roots[root].unresolved == 0)
    queueRootFinish(root);
}

void LineageEngine::State::sinkInputResolved(RootId rootId) {
  Root &root = roots[rootId];
  if (--root.pendingSinkInputs == 0 && domainLayout(entities[root.entity].domain).sinksAtOrBelow)
    queueRootFinish(rootId);
}

void LineageEngine::State::queueRootFinish(RootId root) {
  if (roots[root].finishing)
    return;
  roots[root].finishing = true;
  rootsToFinish.push_back(root);
}

namespace {

/// The readiness rule over a node's inputs (semantics.md): a failure wins, then waiting, then
/// a drop; otherwise every input is present.
struct InputSummary {
  ItemOutcome outcome = ItemOutcome::Present;
  uint32_t cause = kNoIndex;
};

} // namespace

void LineageEngine::State::evaluate(EntityId entity, NodeId node) {
  const plan::PlanNode &target = planNode(node);
  auto input = [&](size_t i) -> const Item & {
    return inputItem(entity, NodeId(target.inputs[i]));
  };
  // Demand: an item no consumer has said it needs is not computed (EngineDemand.cpp).
  if (itemOf(entity, node).demand != Demand::Needed)
    return;
  if (target.kind == NodeKind::Invoke) {
    evaluateInvoke(entity, node);
    return;
  }
  advanceChoice(entity, node);
  if (itemOf(entity, node).outcome != ItemOutcome::Unresolved)
    return;
  if (target.kind == NodeKind::Broadcast) {
    const Item &source = input(0);
    if (source.outcome != ItemOutcome::Unresolved)
      setItem(entity, node, source.outcome, source.value, source.cause);
    return;
  }
  if (target.kind == NodeKind::Filter) {
    evaluateFilter(entity, node);
    return;
  }
  if (target.kind == NodeKind::Compute && (nodeLayout(node).compute == plan::ComputeOp::If ||
                                           nodeLayout(node).compute == plan::ComputeOp::Coalesce)) {
    evaluateChoice(entity, node);
    return;
  }
  InputSummary summary;
  bool waiting = false;
  for (size_t i = 0; i < target.inputs.size(); ++i) {
    const Item &item = input(i);
    if (isFailure(item.outcome)) {
      setItem(entity, node, ItemOutcome::Suppressed, Value(), item.cause);
      return;
    }
    if (item.outcome == ItemOutcome::Unresolved)
      waiting = true;
    else if (item.outcome == ItemOutcome::Dropped)
      summary.outcome = ItemOutcome::Dropped;
  }
  if (waiting)
    return;
  if (summary.outcome == ItemOutcome::Dropped) {
    setItem(entity, node, ItemOutcome::Dropped, Value(), kNoIndex);
    return;
  }
  switch (target.kind) {
  case NodeKind::Project: {
    const Value &record = input(0).value;
    if (const Value *field = record.field(target.field)) {
      setItem(entity, node, ItemOutcome::Present, *field, kNoIndex);
    } else if (plan.nodes[target.inputs[0]].type.kind() == plan::TypeKind::Json) {
      setItem(entity, node, ItemOutcome::Present, Value(), kNoIndex);
    } else {
      uint32_t cause = recordFailure(entity, FailureKind::ContractViolation, CallId(),
                                     "value " + record.str().substr(0, 120) + " has no field '" +
                                         target.field + "'");
      setItem(entity, node, ItemOutcome::Failed, Value(), cause);
    }
    return;
  }
  case NodeKind::Record: {
    RecordFields fields;
    fields.reserve(target.inputs.size());
    for (size_t i = 0; i < target.inputs.size(); ++i)
      fields.emplace_back(target.labels[i], input(i).value);
    setItem(entity, node, ItemOutcome::Present, Value::record(std::move(fields)), kNoIndex);
    return;
  }
  case NodeKind::Dedup:
    // Its key is known: decided now (order "arrival"), or when the cursor reaches it.
    if (DedupSequencer &sequencer = sequencers[sequencerOf[node]]; sequencer.byArrival)
      decide(sequencer, entity);
    return;
  case NodeKind::Compute: {
    std::vector<Value> operands;
    operands.reserve(target.inputs.size());
    for (size_t i = 0; i < target.inputs.size(); ++i)
      operands.push_back(input(i).value);
    if (nodeLayout(node).compute == plan::ComputeOp::Ordinal) {
      setItem(entity, node, ItemOutcome::Present, Value::integer(int64_t(entities[entity].ordinal)),
              kNoIndex);
      return;
    }
    ComputeOutcome outcome = evaluateCompute(nodeLayout(node).compute, operands, target.type);
    if (outcome.failure) {
      const uint32_t cause = recordFailure(entity, FailureKind::RecordFailure, CallId(),
                                           describeComputeFailure(plan, node, *outcome.failure));
      setItem(entity, node, ItemOutcome::Failed, Value(), cause);
    } else {
      setItem(entity, node, ItemOutcome::Present, std::move(outcome.value), kNoIndex);
    }
    return;
  }
  default:
    engineInvariantFailed(std::string("evaluate of a ") + plan::nodeKindName(target.kind));
  }
}

void LineageEngine::State::evaluateChoice(EntityId entity, NodeId node) {
  const plan::PlanNode &target = planNode(node);
  auto input = [&](size_t i) -> const Item & {
    return inputItem(entity, NodeId(target.inputs[i]));
  };
  auto take = [&](const Item &chosen) {
    if (chosen.outcome == ItemOutcome::Unresolved)
      return;
    setItem(entity, node, isFailure(chosen.outcome) ? ItemOutcome::Suppressed : chosen.outcome,
            chosen.value, chosen.cause);
  };
  if (nodeLayout(node).compute == plan::ComputeOp::If) {
    // The condition decides which branch is waited for; the other one does not matter.
    const Item &condition = input(0);
    if (condition.outcome != ItemOutcome::Present)
      take(condition);
    else
      take(isTrue(condition) ? input(1) : input(2));
    return;
  }
  // coalesce: the first operand that is not dropped, in order; a failure is not skipped.
  for (size_t i = 0; i < target.inputs.size(); ++i) {
    const Item &candidate = input(i);
    if (candidate.outcome != ItemOutcome::Dropped) {
      take(candidate);
      return;
    }
  }
  setItem(entity, node, ItemOutcome::Dropped, Value(), kNoIndex);
}

void LineageEngine::State::evaluateFilter(EntityId entity, NodeId node) {
  // semantics.md: a dropped value stays dropped whatever the mask; otherwise the mask decides
  // first (a false or dropped mask drops the value without needing it), then a failed value or
  // mask suppresses.
  const plan::PlanNode &filter = planNode(node);
  const Item &value = inputItem(entity, NodeId(filter.inputs[0]));
  const Item &mask = inputItem(entity, NodeId(filter.inputs[1]));
  if (value.outcome == ItemOutcome::Dropped) {
    setItem(entity, node, ItemOutcome::Dropped, Value(), kNoIndex);
    return;
  }
  if (mask.outcome == ItemOutcome::Unresolved)
    return;
  const bool maskTrue = isTrue(mask);
  FilterProgress &counts = filters[filterOf[node]];
  if (!maskTrue && !isFailure(mask.outcome)) {
    ++counts.dropped;
    setItem(entity, node, ItemOutcome::Dropped, Value(), kNoIndex);
  } else if (value.outcome == ItemOutcome::Unresolved) {
    return;
  } else if (isFailure(value.outcome)) {
    ++counts.failed;
    setItem(entity, node, ItemOutcome::Suppressed, Value(), value.cause);
  } else if (isFailure(mask.outcome)) {
    ++counts.failed;
    setItem(entity, node, ItemOutcome::Suppressed, Value(), mask.cause);
  } else {
    ++counts.kept;
    setItem(entity, node, ItemOutcome::Present, value.value, kNoIndex);
  }
}

void LineageEngine::State::evaluateInvoke(EntityId entity, NodeId node) {
  Grain &grain = grainOf(entity, node);
  if (grain.phase != GrainPhase::Waiting)
    return;
  bool waiting = false, dropped = false;
  for (uint32_t input : planNode(node).inputs) {
    const Item &item = inputItem(entity, NodeId(input));
    if (isFailure(item.outcome)) {
      skipGrain(grain, entity, node, ItemOutcome::Suppressed, item.cause);
      return;
    }
    waiting |= item.outcome == ItemOutcome::Unresolved;
    dropped |= item.outcome == ItemOutcome::Dropped;
  }
  if (waiting)
    return;
  if (dropped) {
    skipGrain(grain, entity, node, ItemOutcome::Dropped, kNoIndex);
    return;
  }
  makeReady(entity, node);
}

void LineageEngine::State::skipGrain(Grain &grain, EntityId entity, NodeId node,
                                     ItemOutcome outcome, uint32_t cause) {
  setPhase(grain, node, GrainPhase::Sealed);
  ++stats.grainsSkipped;
  ++loads[nodeLayout(node).call].skipped;
  setItem(entity, node, outcome, Value(), cause);
}

void LineageEngine::State::sealByBarrier(Grain &grain, EntityId entity, NodeId node,
                                         uint32_t cause) {
  setPhase(grain, node, GrainPhase::Sealed);
  suppressByBarrier(entity, node, cause);
}

void LineageEngine::State::suppressByBarrier(EntityId entity, NodeId node, uint32_t cause) {
  ++stats.grainsSuppressedByBarrier;
  ++loads[nodeLayout(node).call].suppressedByBarrier;
  setItem(entity, node, ItemOutcome::Suppressed, Value(), cause);
}

const Barrier *LineageEngine::State::barrierFor(EntityId entity, CallId call) const {
  const EntityId parent = entities[entity].parent;
  if (!parent.valid())
    return nullptr;
  const ExpansionId expansion = expansionOf(parent, entities[entity].domain);
  for (const Barrier &barrier : expansions[expansion].barriers)
    if (barrier.call == call)
      return &barrier;
  return nullptr;
}

void LineageEngine::State::makeReady(EntityId entity, NodeId node) {
  const CallId call = nodeLayout(node).call;
  Grain &grain = grainOf(entity, node);
  if (const Barrier *barrier = barrierFor(entity, call)) {
    sealByBarrier(grain, entity, node, barrier->cause);
    return;
  }
  setPhase(grain, node, GrainPhase::Ready);
  grain.ticket = nextTicket++;
  const Entity &owner = entities[entity];
  const bool keyed = !layout.calls[call].batchKeyLabels.empty(); // batched by per-row values
  queues[call].fresh->push(QueuedGrain{node, entity, grain.ticket, roots[owner.root].admission,
                                       owner.parent, owner.parent.valid() && owner.ordinal == 0,
                                       keyed ? keySlotOf(entity, node) : 0});
}

std::unique_ptr<ReadyQueue> LineageEngine::State::makeFreshQueue(CallId call) const {
  const uint64_t seed = options.seed + call.index;
  if (layout.calls[call].batchKeyLabels.empty())
    return policy->makeQueue(seed);
  const DispatchPolicy *chosen = policy.get();
  return std::make_unique<KeyedReadyQueue>([chosen, seed] { return chosen->makeQueue(seed); });
}

uint32_t LineageEngine::State::keySlotOf(EntityId entity, NodeId node) {
  const CallId call = nodeLayout(node).call;
  const std::vector<uint32_t> &keyLabels = layout.calls[call].batchKeyLabels;
  std::string key;
  for (uint32_t label : keyLabels) {
    const uint32_t input = planNode(node).inputs[nodeLayout(node).inputOrder[label]];
    key += inputItem(entity, NodeId(input)).value.str();
    key += '\x1f';
  }
  std::unordered_map<std::string, uint32_t> &slots = queues[call].keySlots;
  return slots.emplace(std::move(key), uint32_t(slots.size())).first->second;
}

void LineageEngine::State::materialise(EntityId parent, NodeId expandNode) {
  const DomainId childDomain = domainOf(expandNode);
  const DomainLayout &childShape = domainLayout(childDomain);
  const uint32_t refSlot = entities[parent].expansions + childShape.childSlot;
  if (expansionRefs[refSlot].valid())
    engineInvariantFailed("an entity expanded twice into one domain");
  const ExpansionId id = allocateSlot(expansions, freeExpansions);
  expansionRefs[refSlot] = id;
  const std::vector<NodeId> &reduces = childShape.reducesOver;
  {
    Expansion &expansion = expansions[id];
    expansion.parent = parent;
    expansion.domain = childDomain;
    expansion.node = expandNode;
    expansion.reduces.assign(reduces.size(), ReduceProgress{});
  }
  // Copy the handle: creating children may move the item pool.
  const Item source = inputItem(parent, NodeId(planNode(expandNode).inputs[0]));
  const RootId root = entities[parent].root;
  if (source.outcome != ItemOutcome::Present) {
    --unexpanded[childDomain];
    const bool dropped = source.outcome == ItemOutcome::Dropped;
    expansions[id].outcome = dropped ? ItemOutcome::Dropped : ItemOutcome::Failed;
    for (NodeId reduce : reduces)
      resolveReduce(id, reduce, dropped ? ItemOutcome::Dropped : ItemOutcome::Suppressed, Value(),
                    dropped ? kNoIndex : source.cause);
    if (childShape.sinksAtOrBelow) {
      roots[root].lostSinkRows |= !dropped;
      sinkInputResolved(root);
    }
    return;
  }
  const uint32_t count = static_cast<uint32_t>(source.value.asList().size());
  Expansion &expansion = expansions[id];
  expansion.outcome = ItemOutcome::Present;
  expansion.total = count;
  expansion.elements = source.value;
  expansion.children.reserve(count);
  for (ReduceProgress &progress : expansion.reduces)
    progress.pending = count;
  // The root is not done while children are still to be made. The pools grow once, for all
  // of them, not by doublings step after step (each a copy of everything made so far).
  ++roots[root].unresolved;
  reserveEntities(childDomain, count);
  makeChildren(id, childrenPerStep());
  if (expansions[id].children.size() < count)
    unmade.push_back(UnmadeChildren{id, parent, entities[parent].key});
}

void LineageEngine::State::makeChildren(ExpansionId id, uint32_t budget) {
  const EntityId parent = expansions[id].parent;
  const DomainId childDomain = expansions[id].domain;
  const NodeId expandNode = expansions[id].node;
  const DomainLayout &childShape = domainLayout(childDomain);
  const uint32_t from = static_cast<uint32_t>(expansions[id].children.size());
  const uint32_t to = expansions[id].total - from > budget ? from + budget : expansions[id].total;
  const uint32_t count = to - from;
  const RootId root = entities[parent].root;
  const uint64_t parentKey = entities[parent].key;
  reserveEntities(childDomain, count);
  for (uint32_t ordinal = from; ordinal < to; ++ordinal) {
    const EntityId child =
        createEntity(childDomain, parent, ordinal, root, mixKey(parentKey ^ (ordinal + 1)));
    expansions[id].children.push_back(child);
  }
  // Copy the handle: setting items may release the list the expansion was made from.
  const Value elements = expansions[id].elements;
  const ValueList &list = elements.asList();
  for (uint32_t ordinal = from; ordinal < to; ++ordinal) {
    const EntityId child = expansions[id].children[ordinal];
    setItem(child, expandNode, ItemOutcome::Present, list[ordinal], kNoIndex);
    for (NodeId broadcast : childShape.broadcasts)
      evaluate(child, broadcast);
  }
  if (to == expansions[id].total)
    expansionMade(id);
}

void LineageEngine::State::reserveEntities(DomainId domain, uint32_t count) {
  if (count > freeEntities.size())
    growFor(entities, entities.size() + (count - freeEntities.size()));
  items.reserveFor(domain, count, itemsPerDomain[domain]);
  grains.reserveFor(domain, count, grainsPerDomain[domain]);
  expansionRefs.reserveFor(domain, count, childrenPerDomain[domain]);
}

void LineageEngine::State::expansionMade(ExpansionId id) {
  Expansion &expansion = expansions[id];
  expansion.elements = Value();
  const EntityId parent = expansion.parent;
  const RootId root = entities[parent].root;
  // Every child exists now: the domain's barrier (GatherMode::GlobalBarrier) may count them.
  --unexpanded[expansion.domain];
  if (expansion.total == 0)
    for (NodeId reduce : domainLayout(expansion.domain).reducesOver)
      resolveReduce(id, reduce, ItemOutcome::Present, Value::list({}), kNoIndex);
  // The children hold their elements: the list goes if nothing else reads it.
  releaseExpandedList(parent, expansions[id].node);
  if (domainLayout(expansions[id].domain).sinksAtOrBelow)
    sinkInputResolved(root);
  if (--roots[root].unresolved == 0)
    queueRootFinish(root);
}

bool LineageEngine::State::makeUnmadeChildren() {
  while (!unmade.empty()) {
    const UnmadeChildren next = unmade.front();
    const Expansion &expansion = expansions[next.expansion];
    if (expansion.parent != next.parent || !entities[next.parent].live ||
        entities[next.parent].key != next.parentKey ||
        expansion.children.size() >= expansion.total) {
      unmade.pop_front(); // its root finished early and released it
      continue;
    }
    const Root &owner = roots[entities[next.parent].root];
    const RowInProgressScope restoredAfter(RowActivity::Computing, owner.source, owner.sourceRow);
    makeChildren(next.expansion, childrenPerStep());
    if (expansions[next.expansion].children.size() >= expansions[next.expansion].total)
      unmade.pop_front();
    propagate();
    return true;
  }
  return false;
}

void LineageEngine::State::gather(EntityId child, NodeId reduceNode) {
  const ExpansionId expansionId = expansionOf(entities[child].parent, entities[child].domain);
  ReduceProgress &progress = expansions[expansionId].reduces[nodeLayout(reduceNode).reduceSlot];
  const NodeId member(planNode(reduceNode).inputs[0]);
  if (progress.resolved)
    return;
  if (progress.pending == 0)
    engineInvariantFailed("a reduce gathered more members than its expansion has");
  --progress.pending;
  const bool skipsFailed = nodeLayout(reduceNode).skipsFailedMembers;
  if (const Item &arrived = inputItem(child, member); isFailure(arrived.outcome)) {
    if (!skipsFailed) {
      // Suppressed at once, whatever the other members still do (semantics.md).
      resolveReduce(expansionId, reduceNode, ItemOutcome::Suppressed, Value(), arrived.cause);
      return;
    }
    progress.skipped.push_back(SkippedMember{pathOf(child), arrived.cause});
  }
  const std::vector<EntityId> &children = expansions[expansionId].children;
  while (progress.cursor < children.size()) {
    const Item &next = inputItem(children[progress.cursor], member);
    if (next.outcome == ItemOutcome::Unresolved)
      break;
    if (next.outcome == ItemOutcome::Present)
      progress.gathered.push_back(next.value);
    ++progress.cursor;
  }
  if (progress.pending == 0)
    resolveReduce(expansionId, reduceNode, ItemOutcome::Present,
                  Value::list(std::move(progress.gathered)), kNoIndex);
}

void LineageEngine::State::resolveReduce(ExpansionId expansion, NodeId reduceNode,
                                         ItemOutcome outcome, Value value, uint32_t cause) {
  Expansion &record = expansions[expansion];
  ReduceProgress &progress = record.reduces[nodeLayout(reduceNode).reduceSlot];
  progress.resolved = true;
  if (!progress.skipped.empty() && outcome == ItemOutcome::Present)
    roots[entities[record.parent].root].skippedMembers.push_back(
        Root::SkippedBy{record.parent, reduceNode, std::move(progress.skipped)});
  // A reduce no consumer needed may have been sealed NOT NEEDED before its members finished.
  if (itemOf(record.parent, reduceNode).outcome != ItemOutcome::Unresolved)
    return;
  if (options.gather == GatherMode::GlobalBarrier) {
    parked[record.domain].push_back(ParkedReduce{record.parent, entities[record.parent].key,
                                                 reduceNode, outcome, std::move(value), cause});
    return;
  }
  setItem(record.parent, reduceNode, outcome, std::move(value), cause);
}

bool LineageEngine::State::releaseParkedReduces() {
  if (options.gather != GatherMode::GlobalBarrier || !admissionClosed)
    return false;
  bool released = false;
  for (DomainId domain : parked.ids()) {
    if (parked[domain].empty())
      continue;
    // Every member of this domain must exist (all parents expanded) and have finished.
    if (unexpanded[domain] != 0 || unsealedGrains[domain] != 0)
      continue;
    std::vector<ParkedReduce> ready = std::move(parked[domain]);
    parked[domain].clear();
    for (ParkedReduce &reduce : ready)
      if (entities[reduce.parent].live && entities[reduce.parent].key == reduce.key)
        if (itemOf(reduce.parent, reduce.node).outcome == ItemOutcome::Unresolved)
          setItem(reduce.parent, reduce.node, reduce.outcome, std::move(reduce.value),
                  reduce.cause);
    released = true;
  }
  return released;
}

void LineageEngine::State::broadcastDown(EntityId ancestor, NodeId broadcastNode) {
  const std::vector<DomainId> &path = domainLayout(domainOf(broadcastNode)).pathFromRoot;
  for (EntityId entity :
       descendantsAlong(ancestor, path, domainLayout(entities[ancestor].domain).depth + 1))
    evaluate(entity, broadcastNode);
}

std::vector<EntityId> LineageEngine::State::descendantsAlong(EntityId entity,
                                                             const std::vector<DomainId> &path,
                                                             size_t from) const {
  // Breadth first keeps ordinal order: parents are visited in order and each parent's children
  // are appended in ordinal order. Entities that have not expanded yet add nothing.
  std::vector<EntityId> level{entity}, next;
  for (size_t depth = from; depth < path.size(); ++depth) {
    next.clear();
    for (EntityId parent : level) {
      const ExpansionId expansion = expansionOf(parent, path[depth]);
      if (expansion.valid())
        next.insert(next.end(), expansions[expansion].children.begin(),
                    expansions[expansion].children.end());
    }
    level.swap(next);
  }
  return level;
}

// --- Finished roots ---------------------------------------------------------------------------

void LineageEngine::State::collectRows(const Root &root, RootResult &result) const {
  const DomainId rootDomain = entities[root.entity].domain;
  for (uint32_t s = 0; s < plan.sinks.size(); ++s) {
    const plan::PlanSink &sink = plan.sinks[s];
    const std::vector<DomainId> &path = domainLayout(DomainId(sink.domain)).pathFromRoot;
    if (path.front() != rootDomain)
      continue;
    auto emit = [&](EntityId entity) {
      SinkRow row;
      row.sink = s;
      row.path = pathOf(entity);
      row.status = RowStatus::Written;
      for (uint32_t input : sink.inputs) {
        const Item &item = inputItem(entity, NodeId(input));
        if (isFailure(item.outcome)) {
          row.status = RowStatus::Failed;
          row.failure = item.cause;
          break;
        }
        if (item.outcome == ItemOutcome::Dropped)
          row.status = RowStatus::Dropped;
        else if (item.outcome == ItemOutcome::Unresolved)
          engineInvariantFailed("a finished root with an unresolved sink input");
        row.values.push_back(item.value);
      }
      if (row.status != RowStatus::Written)
        row.values.clear();
      result.rows.push_back(std::move(row));
    };
    for (EntityId entity : descendantsAlong(root.entity, path, 1))
      emit(entity);
  }
}

void LineageEngine::State::releaseEntityTree(EntityId rootEntity) {
  std::vector<EntityId> pending{rootEntity};
  while (!pending.empty()) {
    const EntityId id = pending.back();
    pending.pop_back();
    Entity &entity = entities[id];
    const DomainId domain = entity.domain;
    const DomainLayout &shape = domainLayout(domain);
    for (uint32_t c = 0; c < childrenPerDomain[domain]; ++c) {
      const ExpansionId expansion = expansionRefs[entity.expansions + c];
      if (!expansion.valid()) {
        // A root that finished early or was aborted: this entity never expanded.
        --unexpanded[shape.children[c]];
        continue;
      }
      if (expansions[expansion].children.size() < expansions[expansion].total)
        --unexpanded[shape.children[c]]; // children were still to be made
      pending.insert(pending.end(), expansions[expansion].children.begin(),
                     expansions[expansion].children.end());
      expansions[expansion] = Expansion{};
      freeExpansions.push_back(expansion);
    }
    for (uint32_t i = 0; i < itemsPerDomain[domain]; ++i) {
      Item &item = items[entity.items + i];
      const uint64_t bytes = countedBytes(shape.nodes[i], item);
      releaseItemBytes(entity.root, shape.nodes[i], bytes);
      forgetKept(shape.nodes[i], bytes);
      item.value = Value();
    }
    for (uint32_t g = 0; g < grainsPerDomain[domain]; ++g) {
      Grain &grain = grains[entity.grains + g];
      const NodeId node = shape.invokes[g];
      if (grain.phase != GrainPhase::Sealed) {
        // A root that finished early or was aborted: the grain is cancelled. Queue entries go
        // stale with the entity; an in-flight grain's report is discarded at commit.
        ++loads[nodeLayout(node).call].cancelled;
        ++stats.grainsCancelled;
        setPhase(grain, node, GrainPhase::Sealed);
      }
    }
    items.release(domain, entity.items, itemsPerDomain[domain]);
    grains.release(domain, entity.grains, grainsPerDomain[domain]);
    expansionRefs.release(domain, entity.expansions, childrenPerDomain[domain]);
    entity.live = false;
    freeEntities.push_back(id);
  }
}

void LineageEngine::State::finishRoot(RootId rootId) {
  Root &root = roots[rootId];
  currentRowInProgress = RowInProgress{RowActivity::Computing, root.source, root.sourceRow};
  RootResult result;
  result.admission = root.admission;
  result.source = root.source;
  result.sourceRow = root.sourceRow;
  collectRows(root, result);
  result.failures = std::move(root.failures);
  // Members left out by reduces some consumer needed (not by one a choice did not take).
  for (Root::SkippedBy &skipped : root.skippedMembers)
    if (itemOf(skipped.parent, skipped.reduce).demand == Demand::Needed)
      result.skippedMembers.insert(result.skippedMembers.end(), skipped.members.begin(),
                                   skipped.members.end());
  orderFailuresByPath(result);
  attributeRowsToLowestFailures(result);
  bool anyFailed = false, anyWritten = false;
  for (const SinkRow &row : result.rows) {
    anyFailed |= row.status == RowStatus::Failed;
    anyWritten |= row.status == RowStatus::Written;
  }
  // Rows lost to a failed expansion fail the root even when its other rows were written
  // (nothing is silently lost). A failure that reached no sink input or expansion of sink rows
  // was in work no row needed (a reduce that a choice did not take): it does not fail it.
  result.status = anyFailed || root.lostSinkRows ? RootStatus::Failed
                  : anyWritten                   ? RootStatus::Written
                                                 : RootStatus::Dropped;
  // A failed row reports its failures, not members left out of rows that were not written.
  if (result.status == RootStatus::Failed)
    result.skippedMembers.clear();
  else
    result.duplicates = std::move(root.duplicates);
  sequencerRootFinished(root.source, root.sourceRow, result.status == RootStatus::Failed);
  for (const DuplicateRow &duplicate : result.duplicates) {
    ++stats.duplicates;
    ++sequencers[sequencerOf[NodeId(duplicate.node)]].progress.duplicates;
  }
  // In entity order, whichever Dedup node decided first.
  std::stable_sort(result.duplicates.begin(), result.duplicates.end(),
                   [](const DuplicateRow &a, const DuplicateRow &b) {
                     return std::tie(a.path, a.dedup) < std::tie(b.path, b.dedup);
                   });
  stats.membersSkipped += result.skippedMembers.size();
  retireRoot(rootId, std::move(result));
}

void LineageEngine::State::retireRoot(RootId root, RootResult result) {
  releaseEntityTree(roots[root].entity);
  rowBytes.finishedPeaks += roots[root].peakHeldBytes;
  ++rowBytes.finishedRows;
  liveByAdmission.erase(roots[root].admission);
  roots[root] = Root{};
  freeRoots.push_back(root);
  --liveRootCount;
  ++stats.rootsFinished;
  finished.push_back(std::move(result));
}

void LineageEngine::State::abortRun(const std::string &reason) {
  if (!abortReason)
    abortReason = reason;
  // Admission stays open: the rows the source still has are failed as they are admitted, so
  // that every row is accounted for.
  failLiveRoots(FailureKind::Aborted, reason);
}

void LineageEngine::State::failLiveRoots(FailureKind kind, const std::string &reason) {
  outstanding.clear();
  memory.reserved = 0;
  memory.inFlight = 0;
  for (CallId call : queues.ids()) {
    CallQueues &queue = queues[call];
    queue.fresh = makeFreshQueue(call);
    queue.keySlots.clear();
    queue.retry.clear();
    queue.deferred.clear();
  }
  for (auto &domain : parked)
    domain.clear();
  work.clear();
  rootsToFinish.clear();
  for (RootId r : roots.ids()) {
    Root &root = roots[r];
    if (!root.live)
      continue;
    // The stop is its cause, before what failed under it meanwhile (a page a reduce would
    // skip): it is unfinished (stoppedByTheRun), and a resumed run runs it again.
    root.failures.insert(root.failures.begin(), Failure{kind, "", {}, reason});
    sequencerRootFinished(root.source, root.sourceRow, true);
    retireRoot(r,
               failedRoot(root.admission, root.source, root.sourceRow, std::move(root.failures)));
  }
}

// --- Public interface ---------------------------------------------------------------------

LineageEngine::LineageEngine(const plan::Plan &plan, EngineOptions options)
    : state_(std::make_unique<State>(plan, std::move(options))) {}

LineageEngine::~LineageEngine() = default;

bool LineageEngine::canAdmit() const {
  const State &s = *state_;
  if (s.admissionClosed)
    return false;
  // The flat-record baseline admits everything: its reduces wait for the whole child domain.
  if (s.abortReason || s.options.gather == GatherMode::GlobalBarrier)
    return true;
  if (s.liveRootCount >= s.options.maxLiveRoots)
    return false;
  // Over the byte budget the roots already started finish first (one always runs); below it
  // a row comes in while the live rows and it fit at what a row holds at its most (the mean
  // over finished rows; before one finished, the most a row holds yet): a row's values that
  // stay until it finishes (what a sink writes, what a broadcast or a reduce reads) are not
  // released by running its Calls.
  if (s.memory.limit == 0 || s.liveRootCount == 0)
    return true;
  const MemoryAccount &memory = s.memory;
  const uint64_t committed = memory.held() + memory.reserved;
  if (committed >= memory.limit)
    return false;
  const uint64_t perRow = s.rowBytes.perRow(s.memory.largestRow);
  const uint64_t expected = std::max(memory.items, perRow * s.liveRootCount) + perRow;
  return committed - memory.items + expected <= memory.limit;
}

const MemoryAccount &LineageEngine::memory() const { return state_->memory; }

void LineageEngine::setExternalBytes(uint64_t bytes) {
  State &s = *state_;
  s.memory.external = bytes;
  s.memory.notePeak();
}

uint64_t LineageEngine::admitRoot(uint32_t source, Value row) {
  State &s = *state_;
  if (source >= s.plan.sources.size())
    engineInvariantFailed("admission from source " + std::to_string(source));
  const uint64_t admission = s.nextAdmission++;
  const uint64_t sourceRow = s.nextSourceRow[source]++;
  ++s.stats.rootsAdmitted;
  if (s.abortReason) {
    RootResult result = failedRoot(admission, source, sourceRow,
                                   {Failure{FailureKind::Aborted, "", {}, *s.abortReason}});
    ++s.stats.rootsFinished;
    s.finished.push_back(std::move(result));
    return admission;
  }
  if (s.admissionClosed)
    engineInvariantFailed("admission after closeAdmission");
  const RootId rootId = allocateSlot(s.roots, s.freeRoots);
  Root &root = s.roots[rootId];
  root.admission = admission;
  root.source = source;
  root.sourceRow = sourceRow;
  root.live = true;
  root.unresolved = 0;
  ++s.liveRootCount;
  s.liveByAdmission.emplace_hint(s.liveByAdmission.end(), admission, rootId);
  const plan::PlanSource &planSource = s.plan.sources[source];
  const DomainId domain(planSource.domain);
  // The key names the row in its source (not its admission, which a resumed run changes), so
  // that an entity is the same one across runs.
  const EntityId entity = s.createEntity(domain, EntityId(), static_cast<uint32_t>(sourceRow),
                                         rootId, mixKey(uint64_t(source) << 48 ^ sourceRow));
  s.roots[rootId].entity = entity;
  s.sequencerAdmitted(source, rootId);
  s.setItem(entity, NodeId(planSource.node), ItemOutcome::Present, std::move(row), kNoIndex);
  for (NodeId broadcast : s.domainLayout(domain).broadcasts)
    s.evaluate(entity, broadcast);
  s.propagate();
  return admission;
}

void LineageEngine::skipSourceRow(uint32_t source) {
  State &s = *state_;
  if (source >= s.plan.sources.size())
    engineInvariantFailed("skipping a row of source " + std::to_string(source));
  ++s.nextSourceRow[source];
  // A sequencer may have waited for this row.
  if (!s.sequencers.empty())
    s.propagate();
}

uint64_t LineageEngine::admitFailedRow(uint32_t source, std::string message, FailureKind kind) {
  State &s = *state_;
  const uint64_t admission = s.nextAdmission++;
  RootResult result = failedRoot(admission, source, s.nextSourceRow[source]++,
                                 {Failure{kind, "", {}, std::move(message)}});
  ++s.stats.rootsAdmitted;
  ++s.stats.rootsFinished;
  s.finished.push_back(std::move(result));
  if (!s.sequencers.empty())
    s.propagate();
  return admission;
}

void LineageEngine::interrupt(const std::string &reason) {
  State &s = *state_;
  s.admissionClosed = true;
  s.failLiveRoots(FailureKind::Interrupted, reason);
}

void LineageEngine::closeAdmission() {
  State &s = *state_;
  s.admissionClosed = true;
  s.propagate();
}

std::optional<Batch> LineageEngine::reserveBatch(const std::function<bool(uint32_t)> &mayRun) {
  ExecutorRoom room;
  room.canRun = mayRun;
  return state_->reserve(room);
}

std::optional<Batch> LineageEngine::reserveBatch(const ExecutorRoom &room) {
  return state_->reserve(room);
}

CommitResult LineageEngine::commit(const BatchReport &report) { return state_->commit(report); }

bool LineageEngine::failBatch(uint64_t batchId, const std::string &reason, BatchLoss loss) {
  return state_->failBatch(batchId, reason, loss);
}

std::vector<RootResult> LineageEngine::takeFinishedRoots() {
  std::vector<RootResult> done;
  done.swap(state_->finished);
  return done;
}

bool LineageEngine::complete() const {
  const State &s = *state_;
  return s.admissionClosed && s.liveRootCount == 0;
}

const std::optional<std::string> &LineageEngine::abortReason() const { return state_->abortReason; }

bool LineageEngine::State::hasQueuedGrains() {
  for (CallQueues &queue : queues)
    if (!queue.retry.empty() || !queue.deferred.empty() ||
        queue.fresh->peek([&](const QueuedGrain &grain) { return isLive(grain); }))
      return true;
  return false;
}

bool LineageEngine::State::childrenWanted() const {
  if (unmade.empty())
    return false;
  uint64_t ready = 0;
  for (const CallLoad &load : loads)
    ready += load.ready;
  return ready < childrenPerStep();
}

bool LineageEngine::hasReadyWork() {
  State &s = *state_;
  if (s.hasQueuedGrains())
    return true;
  // One step of an expansion's children (the next ones are made by the next calls).
  s.makeUnmadeChildren();
  return s.hasQueuedGrains() || !s.unmade.empty();
}

bool LineageEngine::makingChildren() const { return state_->childrenWanted(); }

std::optional<std::string> LineageEngine::deadlockReport() {
  const State &s = *state_;
  if (complete() || !s.outstanding.empty() || hasReadyWork() || canAdmit())
    return std::nullopt;
  if (s.liveRootCount == 0)
    return std::nullopt;
  std::string text = "deadlock: nothing is ready or running, but " +
                     std::to_string(s.liveRootCount) + " root(s) are unfinished";
  if (!s.admissionClosed)
    text += " and admission is paused at the bound of " + std::to_string(s.options.maxLiveRoots) +
            " live roots";
  for (CallId c : s.loads.ids()) {
    const CallLoad &load = s.loads[c];
    if (load.waiting + load.ready + load.inFlight != 0)
      text += "; call '" + s.planCall(c).name + "': " + std::to_string(load.waiting) +
              " waiting, " + std::to_string(load.ready) + " ready, " +
              std::to_string(load.inFlight) + " in flight";
  }
  size_t parkedCount = 0;
  for (const auto &domain : s.parked)
    parkedCount += domain.size();
  if (parkedCount)
    text += "; " + std::to_string(parkedCount) + " reduce(s) held at the global barrier";
  for (const DedupSequencer &sequencer : s.sequencers)
    if (!sequencer.byArrival)
      text += "; dedup '" + sequencer.progress.name + "' waits at source row " +
              std::to_string(sequencer.nextRow);
  return text;
}

const std::vector<std::string> &LineageEngine::callInputLabels(uint32_t call) const {
  return state_->layout.calls[CallId(call)].inputLabels;
}

size_t LineageEngine::liveRoots() const { return state_->liveRootCount; }

const std::string &LineageEngine::firstSplitCause(uint32_t call) const {
  return state_->firstSplitCause[call];
}

const std::vector<FilterProgress> &LineageEngine::filterProgress() const { return state_->filters; }

std::vector<DedupProgress> LineageEngine::dedupProgress() const {
  std::vector<DedupProgress> progress;
  for (const DedupSequencer &sequencer : state_->sequencers)
    progress.push_back(sequencer.progress);
  return progress;
}
const EngineStats &LineageEngine::stats() const { return state_->stats; }
const CallLoad &LineageEngine::callLoad(uint32_t call) const { return state_->loads[CallId(call)]; }

size_t LineageEngine::stateBytes() const {
  const State &s = *state_;
  size_t bytes = (s.entities.size() - s.freeEntities.size()) * sizeof(Entity);
  bytes += (s.items.size() - s.items.freeSlots(s.itemsPerDomain)) * sizeof(Item);
  bytes += (s.grains.size() - s.grains.freeSlots(s.grainsPerDomain)) * sizeof(Grain);
  bytes += (s.expansionRefs.size() - s.expansionRefs.freeSlots(s.childrenPerDomain)) *
           sizeof(ExpansionId);
  for (const Expansion &expansion : s.expansions) {
    if (!expansion.parent.valid())
      continue;
    bytes += sizeof(Expansion) + expansion.children.capacity() * sizeof(EntityId) +
             expansion.reduces.capacity() * sizeof(ReduceProgress) +
             expansion.barriers.capacity() * sizeof(Barrier);
    for (const ReduceProgress &progress : expansion.reduces)
      bytes += progress.gathered.capacity() * sizeof(Value);
  }
  bytes += (s.roots.size() - s.freeRoots.size()) * sizeof(Root);
  for (const CallQueues &queue : s.queues)
    bytes += queue.fresh->bytes();
  for (const auto &[id, batch] : s.outstanding)
    bytes += sizeof(OutstandingBatch) + batch.grains.capacity() * sizeof(QueuedGrain) +
             batch.generations.capacity() * sizeof(uint32_t);
  return bytes;
}

} // namespace orch::runtime
