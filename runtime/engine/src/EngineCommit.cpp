// The lineage engine's dispatch and commit rule: reserving batches by priority, validating and
// publishing reports, GroupFailure barriers, recovery policies and infrastructure failures.
#include "EngineState.h"

#include <algorithm>

namespace orch::runtime {
namespace {

/// The budget a Call not measured yet needs free for each grain of its first batch: a large
/// value (a page rendered at 600 dpi is about 100 MB).
constexpr uint64_t kFirstGrainRoom = uint64_t(128) << 20;

/// The room a grain of a Call not measured yet takes: kFirstGrainRoom, or what its types bound
/// (its growth, CallLayout::growthBytesBound, and its inputs' copies where they travel to a
/// worker: a scorer answering a Float about each image is bounded in process, not over ZeroMQ).
uint64_t firstGrainRoom(const CallLayout &call, bool copied) {
  if (call.growthBytesBound == 0 || (copied && call.inputBytesBound == 0))
    return kFirstGrainRoom;
  return call.growthBytesBound + (copied ? call.inputBytesBound : 0);
}

} // namespace

using plan::RecoveryPolicy;

bool LineageEngine::State::queuedGrainIs(const QueuedGrain &queued, GrainPhase phase) const {
  // The entity slot may have been released (its root finished) and reused since.
  const Entity &entity = entities[queued.entity];
  if (!entity.live || entity.domain != domainOf(queued.node))
    return false;
  const Grain &grain = grains[entity.grains + nodeLayout(queued.node).grainSlot];
  return grain.phase == phase && grain.ticket == queued.ticket;
}

bool LineageEngine::State::isLive(const QueuedGrain &queued) const {
  return queuedGrainIs(queued, GrainPhase::Ready);
}

bool LineageEngine::State::isStillInFlight(const QueuedGrain &queued) const {
  return queuedGrainIs(queued, GrainPhase::InFlight);
}

std::optional<Batch> LineageEngine::State::reserve(const ExecutorRoom &room) {
  auto live = [this](const QueuedGrain &grain) { return isLive(grain); };
  const std::function<bool(uint32_t)> &mayRun = room.canRun;
  auto copies = [&room](CallId call) {
    return !room.copiesInputs || room.copiesInputs(call.index);
  };
  bool madeChildren = false;
  RoomForCopies roomKept;
  for (;;) {
    roomKept.known = false;
    // The policy orders the Calls with work (by default: within the budget, retries before
    // fresh work before deferred recovery, then the oldest admission).
    CallCandidate best;
    BudgetVerdict bestVerdict;
    for (CallId c : queues.ids()) {
      if (mayRun && !mayRun(c.index)) {
        loads[c].heldBackNow = false;
        continue;
      }
      CallQueues &queue = queues[c];
      CallCandidate candidate;
      candidate.call = c;
      if (!queue.retry.empty()) {
        candidate.lane = Lane::Retry;
        candidate.admission = queue.retry.front().admission;
      } else if (const QueuedGrain *next = queue.fresh->peek(live)) {
        candidate.lane = Lane::Fresh;
        candidate.admission = next->admission;
      } else if (!queue.deferred.empty()) {
        candidate.lane = Lane::Deferred;
        candidate.admission = queue.deferred.front().admission;
      } else {
        loads[c].heldBackNow = false;
        continue;
      }
      const BudgetVerdict verdict = budgetVerdict(c, pendingGrains(queue, candidate.lane, c),
                                                  copies(c), room, roomKept, candidate.admission);
      candidate.rank = verdict.rank;
      loads[c].heldBackNow = candidate.rank == BudgetRank::HeldBack;
      if (loads[c].heldBackNow)
        continue;
      if (!best.call.valid() || policy->before(candidate, best)) {
        best = candidate;
        bestVerdict = verdict;
      }
    }
    if (!best.call.valid()) {
      // Nothing can go now: while fewer than a step's worth of grains wait, an expansion's
      // next children are made (one step per call), so that their Calls do not idle behind
      // another Call's backlog, nor are millions made at once while their readers are busy.
      if (!madeChildren && childrenWanted() && makeUnmadeChildren()) {
        madeChildren = true;
        continue;
      }
      return std::nullopt;
    }
    const CallId bestCall = best.call;
    const Lane bestLane = best.lane;
    CallQueues &queue = queues[bestCall];
    std::optional<Batch> batch;
    if (bestLane == Lane::Fresh) {
      std::vector<QueuedGrain> taken;
      const size_t limit =
          std::min(bestVerdict.grains,
                   static_cast<size_t>(std::max<int64_t>(1, planCall(bestCall).options.batch)));
      taken.reserve(limit);
      queue.fresh->pop(limit, live, taken);
      batch = dispatch(bestCall, std::move(taken), BatchRecovery{}, copies(bestCall));
    } else {
      std::deque<PendingBatch> &lane = bestLane == Lane::Retry ? queue.retry : queue.deferred;
      PendingBatch pending = std::move(lane.front());
      lane.pop_front();
      // Grains sealed by a barrier while they waited are no longer part of the batch.
      std::erase_if(pending.grains, [&](const QueuedGrain &grain) { return !isLive(grain); });
      if (pending.grains.empty())
        continue;
      batch = dispatch(bestCall, std::move(pending.grains), pending.recovery, copies(bestCall));
    }
    // Reserved as estimated for the batch chosen (at most as many grains as it took).
    outstanding.at(batch->id).reservedBytes = bestVerdict.growth;
    memory.reserved += bestVerdict.growth;
    memory.batchesPastBudget += bestVerdict.pastBudget;
    return batch;
  }
}

size_t LineageEngine::State::pendingGrains(const CallQueues &queue, Lane lane, CallId call) const {
  switch (lane) {
  case Lane::Retry:
    return queue.retry.front().grains.size();
  case Lane::Deferred:
    return queue.deferred.front().grains.size();
  default:
    return static_cast<size_t>(std::min<int64_t>(std::max<int64_t>(1, planCall(call).options.batch),
                                                 int64_t(loads[call].ready)));
  }
}

BudgetVerdict LineageEngine::State::budgetVerdict(CallId call, size_t grainCount, bool copied,
                                                  const ExecutorRoom &executor, RoomForCopies &room,
                                                  uint64_t admission) const {
  if (memory.limit == 0)
    return {BudgetRank::Fits};
  const CallLoad &load = loads[call];
  const uint64_t committed = memory.held() + memory.reserved;
  // Over the budget a batch that may add bytes waits for the batches in flight (they may give
  // bytes back); when nothing at all is in flight one runs, so that the run never stalls, and
  // a Call not measured yet goes before one known to add bytes (it may be the consumer).
  const bool idle = outstanding.empty();
  if (load.measuredGrains == 0) {
    // Until its first batch is back a Call's output size is unknown: its grains go while the
    // budget has kFirstGrainRoom free for each of them in flight (under a budget of megabytes
    // one grain at a time, under the default whole batches), and always one when none is out.
    // Its first wave could be any size: a wave of renders before one was measured took a
    // budget 1.36 times over, a first batch of 16 pages to a Python consumer 1.58 times; one
    // grain at a time under the default budget made the first row 60 ms later in the paper's
    // MinerU shape, five Calls in a row each waiting for its first batch. A Call whose growth
    // its types bound (a score, a count, a flag) needs no measuring: the bound is its room (a
    // 64-GPU OCR of Ints, held back for its first grain, made its first row a quarter later).
    if (committed < memory.limit) {
      const uint64_t copies = keepRoomForCopies(executor, room).ofReadyInputs;
      if (committed + copies < memory.limit) {
        const uint64_t perGrain = firstGrainRoom(layout.calls[call], copied);
        const uint64_t withRoom = (memory.limit - committed - copies) / perGrain;
        if (load.inFlight == 0 && measuresFirst(call, withRoom, executor))
          return {BudgetRank::Fits, 0, 1};
        if (load.inFlight == 0 || load.inFlight < withRoom)
          return {BudgetRank::Fits, 0,
                  static_cast<size_t>(
                      std::max<uint64_t>(1, withRoom - std::min(withRoom, load.inFlight)))};
      }
    }
    return {idle ? BudgetRank::Unmeasured : BudgetRank::HeldBack, 0, 1,
            committed + keepRoomForCopies(executor, room).ofReadyInputs >= memory.limit};
  }
  // While out, its inputs' copies (where they travel); once back, its growth.
  const double in = copied ? double(load.inputBytes) / double(load.measuredGrains) : 0.0;
  const uint64_t copies = static_cast<uint64_t>(in * double(grainCount));
  const double perGrain = growthPerGrain(call);
  if (consumes(call)) {
    // A Call that gives back as much as it takes drains the budget: it uses the room the
    // others leave it, and at least one grain of it runs at a time (the consumer never waits
    // on itself): as many as fit, one when none does.
    if (copies == 0 || committed + copies <= memory.limit)
      return {BudgetRank::Fits};
    if (load.inFlight > 0)
      return {BudgetRank::HeldBack};
    const double left = double(memory.limit - std::min(memory.limit, committed));
    const size_t fit = static_cast<size_t>(left / in);
    return {BudgetRank::Fits, 0, std::max<size_t>(1, fit), fit == 0};
  }
  const uint64_t growth = static_cast<uint64_t>(perGrain * double(grainCount));
  if (committed + copies + growth > memory.limit) {
    if (!idle)
      return {BudgetRank::HeldBack, growth};
    // Nothing is out: as many grains as fit go (one when none does), not a whole batch.
    const double left = double(memory.limit - std::min(memory.limit, committed));
    const size_t fit = std::max<size_t>(1, static_cast<size_t>(left / (perGrain + in)));
    return {BudgetRank::Grows, static_cast<uint64_t>(perGrain * double(std::min(fit, grainCount))),
            fit, committed + perGrain + in > double(memory.limit)};
  }
  // It leaves room for the ready inputs that consumers have free slots for, and for what it
  // makes itself, when its readers have slots free for that too (a render and the OCR
  // replicas waiting for pages).
  keepRoomForCopies(executor, room);
  uint64_t toCome = 0;
  if (!room.ofInputsToCome.empty())
    for (CallId reader : layout.calls[call].readers)
      toCome += room.ofInputsToCome[reader.index];
  const uint64_t kept = room.ofReadyInputs + std::min(growth, toCome) +
                        roomForOlderRows(admission, committed + copies + growth);
  // Values kept until their rows finish take at most half the budget, but the oldest row's:
  // the rest is for the work that finishes rows (16 rows each keeping a value all its pages
  // read filled an 8 MiB budget with them: 1.69 times).
  const bool keptFull = layout.calls[call].keepsResults &&
                        memory.kept + memory.reserved + growth > memory.limit / 2 &&
                        !liveByAdmission.empty() && admission != liveByAdmission.begin()->first;
  const bool fits = committed + kept + copies + growth <= memory.limit && !keptFull;
  return {fits   ? BudgetRank::Fits
          : idle ? BudgetRank::Grows
                 : BudgetRank::HeldBack,
          growth, SIZE_MAX, !fits && committed + copies + growth > memory.limit};
}

bool LineageEngine::State::measuresFirst(CallId call, uint64_t withRoom,
                                         const ExecutorRoom &executor) const {
  // The room holds grains back until a batch is measured, and leaves slots idle that a grain
  // could use: the first batch is one grain, back after a grain's time, not a whole batch's
  // (32 replicas of a 10 ms kernel in batches of 64 idled 0.3 s for a first batch of 30
  // pages). Not where a batch of one would take the slot of a batch that fits (one replica of
  // a Call whose batch has a fixed cost: its first row came after two batches, not one), nor
  // where every grain known fits.
  const CallLoad &load = loads[call];
  const uint32_t slots = executor.batchSlots ? executor.batchSlots(call.index) : 0;
  const uint64_t batch = uint64_t(std::max<int64_t>(1, planCall(call).options.batch));
  return withRoom < load.ready + load.waiting && withRoom + batch < uint64_t(slots) * batch;
}

uint64_t LineageEngine::State::roomForOlderRows(uint64_t admission, uint64_t committed) const {
  if (committed < memory.limit / 4)
    return 0;
  // The oldest rows are the ones looked at; past a few dozen the estimate is rough anyway.
  constexpr size_t kRowsLookedAt = 64;
  const uint64_t perRow = rowBytes.perRow(memory.largestRow);
  uint64_t room = 0;
  size_t looked = 0;
  for (auto it = liveByAdmission.begin();
       it != liveByAdmission.end() && it->first < admission && looked < kRowsLookedAt;
       ++it, ++looked)
    room += perRow - std::min(perRow, roots[it->second].heldBytes);
  return room;
}

bool LineageEngine::State::consumes(CallId call) const {
  // A Call that adds an eighth of what it reads, or less, is a consumer even when what it
  // reads stays (a checksum of pages a sink writes, or of the pages an `if` took beside the
  // value every page of its row shares): else, measured as adding bytes, it waited while its
  // producer ran on, alone, for older rows (2.9 times the budget).
  const CallLoad &load = loads[call];
  return growthPerGrain(call) <= double(load.inputBytes) / double(load.measuredGrains) / 8;
}

double LineageEngine::State::growthPerGrain(CallId call) const {
  const CallLoad &load = loads[call];
  return (double(load.outputBytes) - double(load.releasedBytes)) / double(load.measuredGrains);
}

const RoomForCopies &LineageEngine::State::keepRoomForCopies(const ExecutorRoom &room,
                                                             RoomForCopies &kept) const {
  if (kept.known)
    return kept;
  kept.known = true;
  kept.ofReadyInputs = 0;
  kept.ofInputsToCome.clear();
  if (memory.limit == 0 || !room.batchSlots)
    return kept;
  kept.ofInputsToCome.assign(loads.size(), 0);
  double ready = 0;
  for (CallId c : loads.ids()) {
    const CallLoad &load = loads[c];
    if (load.waiting + load.ready == 0 || (room.copiesInputs && !room.copiesInputs(c.index)))
      continue;
    if (load.measuredGrains == 0) {
      // Not measured yet: its first batch may take whatever comes (a page just rendered).
      if (load.inFlight == 0)
        kept.ofInputsToCome[c.index] = memory.limit;
      continue;
    }
    if (!consumes(c))
      continue;
    const uint64_t capacity =
        uint64_t(room.batchSlots(c.index)) *
        static_cast<uint64_t>(std::max<int64_t>(1, planCall(c).options.batch));
    if (capacity <= load.inFlight)
      continue;
    const uint64_t free = capacity - load.inFlight;
    const double in = double(load.inputBytes) / double(load.measuredGrains);
    const uint64_t readyGrains = std::min(free, load.ready);
    ready += double(readyGrains) * in;
    kept.ofInputsToCome[c.index] =
        static_cast<uint64_t>(double(std::min(free - readyGrains, load.waiting)) * in);
  }
  kept.ofReadyInputs = static_cast<uint64_t>(ready);
  return kept;
}

void LineageEngine::State::unreserve(const OutstandingBatch &batch) {
  memory.reserved -= std::min(memory.reserved, batch.reservedBytes);
  memory.inFlight -= std::min(memory.inFlight, batch.copiedBytes);
}

Batch LineageEngine::State::dispatch(CallId call, std::vector<QueuedGrain> queued,
                                     BatchRecovery recovery, bool copied) {
  Batch batch;
  batch.id = nextBatchId++;
  batch.call = call.index;
  batch.attempt = recovery.attempt;
  batch.alone = recovery.infrastructureAttempts > 0;
  const CallLayout &callLayout = layout.calls[call];
  batch.inputsPerGrain = static_cast<uint32_t>(callLayout.inputLabels.size());
  batch.grains.reserve(queued.size());
  batch.inputs.reserve(queued.size() * batch.inputsPerGrain);
  OutstandingBatch record;
  record.call = call;
  record.recovery = recovery;
  record.generations.reserve(queued.size());
  for (const QueuedGrain &entry : queued) {
    Grain &grain = grainOf(entry.entity, entry.node);
    setPhase(grain, entry.node, GrainPhase::InFlight);
    const Entity &entity = entities[entry.entity];
    const Root &root = roots[entity.root];
    // Written in place, field by field: a BatchGrain built on the stack and copied in was
    // stored and loaded back in pieces of other widths (stalls that showed in the profile).
    BatchGrain &out = batch.grains.emplace_back();
    out.grain = GrainRef{entry.node, entry.entity};
    out.generation = grain.generation;
    out.lineage.root = root.admission;
    out.lineage.ordinal = entity.ordinal;
    out.lineage.depth = domainLayout(entity.domain).depth;
    out.lineage.key = entity.key;
    out.lineage.sourceRow = root.sourceRow;
    out.lineage.source = root.source;
    const plan::PlanNode &node = planNode(entry.node);
    for (uint32_t position : nodeLayout(entry.node).inputOrder)
      batch.inputs.push_back(inputItem(entry.entity, NodeId(node.inputs[position])).value);
    record.generations.push_back(grain.generation);
  }
  if (memory.limit > 0) {
    for (const Value &input : batch.inputs)
      record.inputBytes += heldBytes(input);
    if (copied) {
      record.copiedBytes = record.inputBytes;
      memory.inFlight += record.copiedBytes;
      memory.largestBatchCopies = std::max(memory.largestBatchCopies, record.copiedBytes);
      memory.notePeak();
    }
  }
  record.grains = std::move(queued);
  // Held until the batch ends: the inputs that are, or may hold, a reference to a value a
  // worker keeps (a number or a text held here needs no holding).
  for (const Value &input : batch.inputs)
    if (input.kind() >= Value::Kind::List)
      record.inputs.push_back(input);
  outstanding.emplace(batch.id, std::move(record));
  ++stats.batchesDispatched;
  return batch;
}

namespace {

std::string describeGrain(const plan::Plan &plan, const GrainRef &grain) {
  const uint32_t node = grain.node.index;
  return "grain (node " + std::to_string(node) + ", entity " + std::to_string(grain.entity.index) +
         ")" +
         (node < plan.nodes.size() && !plan.nodes[node].name.empty()
              ? " of '" + plan.nodes[node].name + "'"
              : "");
}

} // namespace

CommitResult LineageEngine::State::commit(const BatchReport &report) {
  auto found = outstanding.find(report.batchId);
  if (found == outstanding.end()) {
    ++stats.staleReports;
    return {CommitStatus::Stale, "batch " + std::to_string(report.batchId) +
                                     " is not outstanding (already committed, or lost and "
                                     "re-queued)"};
  }
  OutstandingBatch batch = std::move(found->second);
  outstanding.erase(found);
  unreserve(batch);
  const std::string &callName = planCall(batch.call).name;
  if (report.batchError) {
    ++stats.batchErrors;
    return handleBatchError(std::move(batch), *report.batchError);
  }

  // 1. Exact coverage and generations: every dispatched grain reported once, nothing else.
  const size_t count = batch.grains.size();
  std::vector<uint32_t> entryOf(count, kNoIndex);
  std::string violation;
  if (report.grains.size() != count)
    violation = "it gave " + std::to_string(report.grains.size()) + " result(s) for a batch of " +
                std::to_string(count) + " item(s), not one per item";
  for (size_t i = 0; violation.empty() && i < report.grains.size(); ++i) {
    const GrainReport &entry = report.grains[i];
    auto matches = [&](size_t j) {
      return batch.grains[j].node == entry.grain.node &&
             batch.grains[j].entity == entry.grain.entity;
    };
    size_t j = i < count && matches(i) ? i : count;
    for (size_t k = 0; j == count && k < count; ++k)
      if (matches(k))
        j = k;
    if (j == count)
      violation = describeGrain(plan, entry.grain) + " was not in the batch";
    else if (entryOf[j] != kNoIndex)
      violation = describeGrain(plan, entry.grain) + " was reported twice";
    else if (entry.generation != batch.generations[j])
      violation = describeGrain(plan, entry.grain) + " was reported with generation " +
                  std::to_string(entry.generation) + ", dispatched with " +
                  std::to_string(batch.generations[j]);
    else
      entryOf[j] = static_cast<uint32_t>(i);
  }
  // 2. Values validated before anything changes.
  for (size_t j = 0; violation.empty() && j < count; ++j) {
    const GrainReport &entry = report.grains[entryOf[j]];
    if (entry.kind != RowResultKind::Value)
      continue;
    if (auto problem = checkValueType(entry.value, planNode(entry.grain.node).type))
      violation = describeGrain(plan, entry.grain) + ": " + *problem;
  }
  if (!violation.empty()) {
    ++stats.contractViolations;
    const std::string message = "call '" + callName + "' broke its contract: " + violation;
    failGrains(batch, FailureKind::ContractViolation, message);
    propagate();
    return {CommitStatus::ContractViolation, message};
  }
  // Grains whose root finished early while the batch ran were cancelled: their reports go.
  std::vector<bool> current(count);
  for (size_t j = 0; j < count; ++j) {
    current[j] = isStillInFlight(batch.grains[j]);
    if (current[j] &&
        grainOf(batch.grains[j].entity, batch.grains[j].node).generation != batch.generations[j])
      engineInvariantFailed("an outstanding batch holds a grain of another generation");
  }

  // 3. GroupFailure barriers first, so that siblings in this very batch are discarded too.
  std::vector<uint32_t> causes(count, kNoIndex);
  for (size_t j = 0; j < count; ++j) {
    const GrainReport &entry = report.grains[entryOf[j]];
    if (!current[j] || entry.kind != RowResultKind::GroupFailure)
      continue;
    const EntityId entity = batch.grains[j].entity;
    causes[j] = recordFailure(entity, FailureKind::GroupFailure, batch.call, entry.message);
    installBarrier(entity, batch.call, causes[j]);
  }
  // 4. Publish, then propagate once. What the grains gave back is measured for the budget.
  if (memory.limit > 0) {
    CallLoad &load = loads[batch.call];
    load.measuredGrains += count;
    load.inputBytes += batch.inputBytes;
    for (size_t j = 0; j < count; ++j)
      if (report.grains[entryOf[j]].kind == RowResultKind::Value)
        load.outputBytes += heldBytes(report.grains[entryOf[j]].value);
  }
  const uint64_t releasedBefore = bytesReleasedByGrains;
  for (size_t j = 0; j < count; ++j) {
    if (!current[j])
      continue;
    const GrainReport &entry = report.grains[entryOf[j]];
    const EntityId entity = batch.grains[j].entity;
    const NodeId node = batch.grains[j].node;
    setPhase(grainOf(entity, node), node, GrainPhase::Sealed);
    ++stats.grainsRun;
    switch (entry.kind) {
    case RowResultKind::Value:
      // A part of a batch that failed whole gave its value: rescued by splitting.
      loads[batch.call].rescuedGrains += batch.recovery.splitting;
      if (const Barrier *barrier = barrierFor(entity, batch.call)) {
        suppressByBarrier(entity, node, barrier->cause);
      } else {
        if (options.onGrainValue) {
          const Root &root = roots[entities[entity].root];
          options.onGrainValue(node.index, entities[entity].key, root.source, root.sourceRow,
                               entry.value);
        }
        setItem(entity, node, ItemOutcome::Present, entry.value, kNoIndex);
      }
      break;
    case RowResultKind::RecordFailure:
      setItem(entity, node, ItemOutcome::Failed, Value(),
              recordFailure(entity, FailureKind::RecordFailure, batch.call, entry.message));
      break;
    case RowResultKind::GroupFailure:
      setItem(entity, node, ItemOutcome::Failed, Value(), causes[j]);
      break;
    }
  }
  if (memory.limit > 0)
    loads[batch.call].releasedBytes += bytesReleasedByGrains - releasedBefore;
  ++stats.batchesCommitted;
  // What expressions make from these results (a page's text joined to its document's, the
  // records of the children an expansion makes) is growth of this Call's grains: the budget
  // holds them back for it, as it cannot hold back the expressions themselves.
  const uint64_t computedBefore = memory.computed;
  propagate();
  if (memory.limit > 0 && memory.computed > computedBefore)
    loads[batch.call].outputBytes += memory.computed - computedBefore;
  return {CommitStatus::Committed, ""};
}

void LineageEngine::State::installBarrier(EntityId entity, CallId call, uint32_t cause) {
  const EntityId parent = entities[entity].parent;
  if (!parent.valid() || barrierFor(entity, call))
    return;
  const DomainId domain = entities[entity].domain;
  Expansion &expansion = expansions[expansionOf(parent, domain)];
  expansion.barriers.push_back(Barrier{call, cause});
  // Siblings already ready for this Call never reach the operator.
  for (EntityId sibling : expansion.children)
    for (NodeId node : domainLayout(domain).invokes) {
      if (nodeLayout(node).call != call)
        continue;
      Grain &grain = grainOf(sibling, node);
      if (grain.phase == GrainPhase::Ready)
        sealByBarrier(grain, sibling, node, cause);
    }
}

void LineageEngine::State::failGrains(const OutstandingBatch &batch, FailureKind kind,
                                      const std::string &message) {
  for (const QueuedGrain &queued : batch.grains) {
    if (!isStillInFlight(queued))
      continue;
    Grain &grain = grainOf(queued.entity, queued.node);
    setPhase(grain, queued.node, GrainPhase::Sealed);
    setItem(queued.entity, queued.node, ItemOutcome::Failed, Value(),
            recordFailure(queued.entity, kind, batch.call, message));
  }
}

void LineageEngine::State::requeue(CallId call, std::vector<QueuedGrain> grainsToRun, bool deferred,
                                   BatchRecovery recovery) {
  PendingBatch pending;
  pending.recovery = recovery;
  pending.admission = UINT64_MAX;
  for (QueuedGrain queued : grainsToRun) {
    Grain &grain = grainOf(queued.entity, queued.node);
    if (const Barrier *barrier = barrierFor(queued.entity, call)) {
      sealByBarrier(grain, queued.entity, queued.node, barrier->cause);
      continue;
    }
    setPhase(grain, queued.node, GrainPhase::Ready);
    ++grain.generation;
    grain.ticket = nextTicket++;
    queued.ticket = grain.ticket;
    pending.admission = std::min(pending.admission, queued.admission);
    pending.grains.push_back(queued);
  }
  if (pending.grains.empty())
    return;
  (deferred ? queues[call].deferred : queues[call].retry).push_back(std::move(pending));
}

CommitResult LineageEngine::State::handleBatchError(OutstandingBatch batch,
                                                    const std::string &message) {
  const plan::PlanCall &call = planCall(batch.call);
  const std::string what = "call '" + call.name + "' failed a batch of " +
                           std::to_string(batch.grains.size()) + ": " + message;
  narrowDown(std::move(batch), message, FailureKind::OperatorError, what);
  return {CommitStatus::BatchError, what};
}

void LineageEngine::State::narrowDown(OutstandingBatch batch, const std::string &message,
                                      FailureKind kind, const std::string &what) {
  const plan::PlanCall &call = planCall(batch.call);
  // Grains cancelled while the batch ran (their root finished early) take no further part.
  std::erase_if(batch.grains, [&](const QueuedGrain &grain) { return !isStillInFlight(grain); });
  if (batch.grains.empty())
    return;
  BatchRecovery next = batch.recovery;
  const uint32_t retries = static_cast<uint32_t>(std::max<int64_t>(0, call.options.retries));
  if (!next.splitting && next.attempt < retries) {
    // 1. The Call's immediate retries of the whole batch (every policy, abort included).
    ++stats.batchRetries;
    ++loads[batch.call].retries;
    ++next.attempt;
    requeue(batch.call, std::move(batch.grains), false, next);
  } else if (call.options.recovery == RecoveryPolicy::Abort) {
    abortRun(what + " (recovery \"abort\"" +
             (retries ? ", after " + std::to_string(retries) + " retries)" : ")"));
    return;
  } else if (!next.splitting && !next.deferredRetried &&
             call.options.recovery == RecoveryPolicy::Isolate) {
    // 2. isolate: one more try of the whole batch, behind fresh work.
    ++stats.batchRetries;
    ++loads[batch.call].retries;
    ++next.attempt;
    next.deferredRetried = true;
    requeue(batch.call, std::move(batch.grains), true, next);
  } else if (batch.grains.size() > 1) {
    // 3. Bisect, without further retries, down to the single grains that still fail: a grain
    // never fails because it shared a batch with a failing one.
    bisect(std::move(batch), next, message);
  } else {
    loads[batch.call].failedAlone += next.splitting;
    std::string final = message;
    if (next.attempt > 0)
      final += " (after " + std::to_string(next.attempt) + " retries)";
    failGrains(batch, kind, final);
  }
  propagate();
}

void LineageEngine::State::bisect(OutstandingBatch batch, BatchRecovery next,
                                  const std::string &cause) {
  ++stats.batchSplits;
  ++loads[batch.call].splitBatches;
  if (firstSplitCause[batch.call.index].empty())
    firstSplitCause[batch.call.index] = cause;
  const size_t half = batch.grains.size() / 2;
  std::vector<QueuedGrain> second(batch.grains.begin() + static_cast<std::ptrdiff_t>(half),
                                  batch.grains.end());
  batch.grains.resize(half);
  next.splitting = true;
  requeue(batch.call, std::move(batch.grains), true, next);
  requeue(batch.call, std::move(second), true, next);
}

bool LineageEngine::State::failBatch(uint64_t batchId, const std::string &reason, BatchLoss loss) {
  auto found = outstanding.find(batchId);
  if (found == outstanding.end())
    return false;
  OutstandingBatch batch = std::move(found->second);
  outstanding.erase(found);
  unreserve(batch);
  const std::string what = "call '" + planCall(batch.call).name + "' lost a batch of " +
                           std::to_string(batch.grains.size()) + ": " + reason;
  switch (loss) {
  case BatchLoss::Crash:
  case BatchLoss::Timeout:
    // The operator's own doing, on some grain of the batch: narrowed down like an exception.
    ++(loss == BatchLoss::Crash ? stats.batchCrashes : stats.batchTimeouts);
    narrowDown(std::move(batch), reason,
               loss == BatchLoss::Crash ? FailureKind::Crash : FailureKind::Timeout, what);
    return true;
  case BatchLoss::Bystander:
    // Not its doing: it runs again as it was, ahead of fresh work.
    std::erase_if(batch.grains, [&](const QueuedGrain &grain) { return !isStillInFlight(grain); });
    requeue(batch.call, std::move(batch.grains), false, batch.recovery);
    propagate();
    return true;
  case BatchLoss::None:
  case BatchLoss::Infrastructure:
    break;
  }
  ++stats.infrastructureFailures;
  std::erase_if(batch.grains, [&](const QueuedGrain &grain) { return !isStillInFlight(grain); });
  BatchRecovery next = batch.recovery;
  if (next.infrastructureAttempts < options.infrastructureRetries) {
    ++next.infrastructureAttempts;
    requeue(batch.call, std::move(batch.grains), false, next);
  } else if (batch.grains.size() > 1) {
    // Lost again and again: a grain that takes its worker down with it (a native operator
    // crashing its process) is found by bisection, so its batch-mates are written.
    bisect(std::move(batch), next, reason);
  } else {
    loads[batch.call].failedAlone += next.splitting;
    failGrains(batch, FailureKind::Infrastructure,
               reason + " (after " + std::to_string(options.infrastructureRetries) + " re-runs)");
  }
  propagate();
  return true;
}

} // namespace orch::runtime
