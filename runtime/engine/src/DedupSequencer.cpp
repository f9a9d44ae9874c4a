// Deduplication in the engine (docs/runtime.md, "Deduplication"): each Dedup node decides its
// domain's entities one at a time in source order (source row, then ordinal path), as soon as
// every earlier entity is decided and the entity's own key is known: no barrier, and the same
// survivors whatever the executor, policy or timing. A survivor enters the node's index; a
// duplicate is DROPPED and recorded with its survivor under its root.
#include "EngineState.h"

#include "orch/runtime/values/MinHash.h"

#include <cstring>

namespace orch::runtime {
namespace {

/// What an exact key is compared by: a hash of its bytes (text and bytes as they are, anything
/// else as its JSON text), seeded by its kind.
KeyHash exactKeyOf(const Value &value) {
  const uint64_t kind = uint64_t(value.kind());
  if (value.kind() == Value::Kind::String)
    return hashKey(value.asString(), kind);
  if (value.kind() == Value::Kind::Bytes)
    return hashKey(value.asBytes(), kind);
  return hashKey(value.str(), kind);
}

std::string fingerprintOf(const KeyHash &key) {
  std::string bytes(sizeof key.low + sizeof key.high, '\0');
  std::memcpy(bytes.data(), &key.low, sizeof key.low);
  std::memcpy(bytes.data() + sizeof key.low, &key.high, sizeof key.high);
  return bytes;
}

KeyHash keyOf(const std::string &fingerprint) {
  KeyHash key;
  if (fingerprint.size() == sizeof key.low + sizeof key.high) {
    std::memcpy(&key.low, fingerprint.data(), sizeof key.low);
    std::memcpy(&key.high, fingerprint.data() + sizeof key.low, sizeof key.high);
  }
  return key;
}

/// A `dedup.minhash` result: its minima, then (confirm: "exact") its sorted shingle hashes.
struct SignatureParts {
  std::vector<uint32_t> minima, shingles;
};
SignatureParts splitSignature(std::string_view bytes, const NearIndex &index) {
  SignatureParts parts;
  parts.minima = decodeSignature(bytes);
  if (index.exact() && parts.minima.size() >= index.permutations()) {
    parts.shingles.assign(parts.minima.begin() + index.permutations(), parts.minima.end());
    parts.minima.resize(index.permutations());
  }
  return parts;
}

template <typename T> T setting(const plan::PlanNode &node, const char *name, T otherwise) {
  for (const plan::NamedConstant &constant : node.constants)
    if (constant.name == name)
      if (const T *value = std::get_if<T>(&constant.value))
        return *value;
  return otherwise;
}

} // namespace

void LineageEngine::State::setUpSequencers() {
  sequencerOf.assign(plan.nodes.size(), kNoIndex);
  for (uint32_t n = 0; n < plan.nodes.size(); ++n) {
    const plan::PlanNode &node = plan.nodes[n];
    if (node.kind != plan::NodeKind::Dedup)
      continue;
    DedupSequencer sequencer;
    sequencer.node = NodeId(n);
    sequencer.path = domainLayout(DomainId(node.domain)).pathFromRoot;
    for (uint32_t s = 0; s < plan.sources.size(); ++s)
      if (plan.sources[s].domain == sequencer.path.front().index) {
        sequencer.source = s;
        break;
      }
    if (node.field == plan::kDedupHamming)
      sequencer.hammingIndex.emplace(uint32_t(setting<int64_t>(node, "distance", 6)));
    sequencer.byArrival = setting<std::string>(node, "order", "source") == "arrival";
    if (node.field == plan::kDedupNear)
      sequencer.nearIndex.emplace(uint32_t(setting<int64_t>(node, "permutations", 128)),
                                  uint32_t(setting<int64_t>(node, "bands", 16)),
                                  setting<double>(node, "threshold", 0.8),
                                  setting<std::string>(node, "confirm", "estimate") == "exact");
    sequencer.progress.name = node.name.empty() ? "dedup." + node.field : node.name;
    sequencer.progress.kind = node.field;
    sequencerOf[NodeId(n)] = uint32_t(sequencers.size());
    sequencers.push_back(std::move(sequencer));
  }
  // A resumed run: the survivors an earlier run indexed first, then its decisions by entity.
  for (const DedupDecision &decision : options.dedupHistory) {
    if (decision.node >= plan.nodes.size() || sequencerOf[NodeId(decision.node)] == kNoIndex)
      continue;
    DedupSequencer &sequencer = sequencers[sequencerOf[NodeId(decision.node)]];
    const uint32_t survivor = decision.survivor ? indexSurvivor(sequencer, decision) : kNoIndex;
    // A row the earlier run finished does not run again: its survivors are all it leaves.
    if (decision.rowDone)
      continue;
    if (decision.survivor)
      sequencer.earlierRuns[decision.sourceRow].push_back(survivor);
    DedupDecision &kept = sequencer.history.emplace(decision.key, decision).first->second;
    kept.fingerprint.clear(); // indexed already
  }
  std::vector<DedupDecision>().swap(options.dedupHistory);
  for (DedupSequencer &sequencer : sequencers)
    sequencer.unfinished.clear(); // an earlier run's rows are finished unless they run again
}

void LineageEngine::State::sequencerAdmitted(uint32_t source, RootId root) {
  const uint64_t row = roots[root].sourceRow;
  for (DedupSequencer &sequencer : sequencers) {
    if (sequencer.source != source)
      continue;
    if (!sequencer.byArrival)
      sequencer.admitted.push_back({row, root, roots[root].admission});
    // A row an earlier run decided runs again: its survivors wait for its end once more.
    if (auto earlier = sequencer.earlierRuns.find(row); earlier != sequencer.earlierRuns.end()) {
      sequencer.unfinished[row] = std::move(earlier->second);
      sequencer.earlierRuns.erase(earlier);
    }
  }
}

void LineageEngine::State::sequencerRootFinished(uint32_t source, uint64_t sourceRow, bool failed) {
  for (DedupSequencer &sequencer : sequencers) {
    if (sequencer.source != source)
      continue;
    auto found = sequencer.unfinished.find(sourceRow);
    if (found == sequencer.unfinished.end())
      continue;
    if (failed) {
      for (uint32_t survivor : found->second)
        sequencer.retracted[survivor] = true;
      sequencer.progress.retracted += found->second.size();
    }
    sequencer.unfinished.erase(found);
  }
}

std::optional<uint32_t>
LineageEngine::State::earliestSurvivor(const DedupSequencer &sequencer,
                                       const std::vector<uint32_t> &candidates, uint64_t row,
                                       const std::vector<uint32_t> &path, bool &waits) const {
  std::optional<uint32_t> earliest;
  std::vector<uint32_t> earliestPath;
  for (uint32_t survivor : candidates) {
    if (sequencer.retracted[survivor])
      continue;
    if (sequencer.byArrival) {
      // The first to arrive: candidates come by survivor number.
      waits = false;
      return survivor;
    }
    const uint64_t survivorRow = sequencer.survivors.row(survivor);
    std::vector<uint32_t> survivorPath = sequencer.survivors.path(survivor);
    // Only what comes before it in source order (a retried row is not a duplicate of a later
    // row that was kept while it had failed).
    if (std::tie(survivorRow, survivorPath) >= std::tie(row, path))
      continue;
    const uint64_t earliestRow = earliest ? sequencer.survivors.row(*earliest) : 0;
    if (!earliest || std::tie(survivorRow, survivorPath) < std::tie(earliestRow, earliestPath)) {
      earliest = survivor;
      earliestPath = std::move(survivorPath);
    }
  }
  const uint64_t earliestRow = earliest ? sequencer.survivors.row(*earliest) : row;
  // Under the global barrier (the flat-record ablation) no row finishes before every grain of
  // a child domain is sealed, this one's included: waiting would deadlock, so it does not wait.
  waits = !sequencer.byArrival && options.gather != GatherMode::GlobalBarrier &&
          earliestRow != row && sequencer.unfinished.count(earliestRow);
  return earliest;
}

bool LineageEngine::State::advanceSequencers() {
  const size_t before = work.size();
  for (DedupSequencer &sequencer : sequencers)
    if (!sequencer.byArrival)
      advanceSequencer(sequencer);
  return work.size() != before;
}

void LineageEngine::State::advanceSequencer(DedupSequencer &sequencer) {
  const size_t depth = sequencer.path.size() - 1;
  // Leaves the cursor's current entity for the next one: its next sibling, or the next row.
  auto stepPast = [&] {
    sequencer.frames.pop_back();
    if (!sequencer.frames.empty()) {
      ++sequencer.frames.back().next;
      return;
    }
    sequencer.admitted.pop_front();
    ++sequencer.nextRow;
  };
  for (;;) {
    if (sequencer.frames.empty()) {
      while (!sequencer.admitted.empty() && sequencer.admitted.front().row < sequencer.nextRow)
        sequencer.admitted.pop_front();
      if (!sequencer.admitted.empty() && sequencer.admitted.front().row == sequencer.nextRow) {
        const DedupSequencer::AdmittedRow &row = sequencer.admitted.front();
        if (!roots[row.root].live || roots[row.root].admission != row.admission) {
          // It finished before the cursor reached it: nothing of it is indexed.
          sequencer.admitted.pop_front();
          ++sequencer.nextRow;
          continue;
        }
        sequencer.frames.push_back({roots[row.root].entity, 0});
        continue;
      }
      // Rows the source skipped (done in an earlier run) or could not read: passed.
      const uint64_t admittedUpTo = nextSourceRow[sequencer.source];
      if (sequencer.nextRow < admittedUpTo) {
        const uint64_t next =
            sequencer.admitted.empty() ? admittedUpTo : sequencer.admitted.front().row;
        sequencer.nextRow = next;
        continue;
      }
      return; // the next row is not admitted yet
    }
    const DedupSequencer::AdmittedRow &current = sequencer.admitted.front();
    if (!roots[current.root].live || roots[current.root].admission != current.admission) {
      // The row finished (failed, or its rows were known) while the cursor was in it.
      sequencer.frames.clear();
      sequencer.admitted.pop_front();
      ++sequencer.nextRow;
      continue;
    }
    DedupSequencer::Frame &top = sequencer.frames.back();
    const size_t level = sequencer.frames.size() - 1;
    if (level == depth) {
      if (!decideAtCursor(sequencer, top.entity))
        return;
      stepPast();
      continue;
    }
    const ExpansionId expansion = expansionOf(top.entity, sequencer.path[level + 1]);
    if (!expansion.valid())
      return; // not expanded yet
    const Expansion &record = expansions[expansion];
    if (top.next >= record.children.size() && record.children.size() < record.total)
      return; // its next children are not made yet
    if (record.outcome != ItemOutcome::Present || top.next >= record.children.size()) {
      stepPast();
      continue;
    }
    sequencer.frames.push_back({record.children[top.next], 0});
  }
}

bool LineageEngine::State::decideAtCursor(DedupSequencer &sequencer, EntityId entity) {
  const Item &item = itemOf(entity, sequencer.node);
  if (item.outcome != ItemOutcome::Unresolved)
    return true; // decided without the index: its key was dropped, failed or not needed
  if (item.demand != Demand::Needed)
    return false;
  for (uint32_t input : planNode(sequencer.node).inputs)
    if (inputItem(entity, NodeId(input)).outcome != ItemOutcome::Present)
      return false;
  return decide(sequencer, entity);
}

bool LineageEngine::State::decide(DedupSequencer &sequencer, EntityId entity) {
  const plan::PlanNode &node = planNode(sequencer.node);
  const Entity &owner = entities[entity];
  const RootId rootId = owner.root;
  DedupDecision decision;
  if (auto earlier = sequencer.history.find(owner.key); earlier != sequencer.history.end()) {
    decision = earlier->second;
  } else {
    decision.node = sequencer.node.index;
    decision.key = owner.key;
    decision.source = roots[rootId].source;
    decision.sourceRow = roots[rootId].sourceRow;
    decision.path = pathOf(entity);
    std::vector<uint32_t> candidates;
    std::vector<double> similarities;
    if (sequencer.hammingIndex) {
      const std::string &text = inputItem(entity, NodeId(node.inputs[0])).value.asString();
      const std::optional<uint64_t> hash = parseHexHash(text);
      if (!hash) {
        const uint32_t cause =
            recordFailure(entity, FailureKind::RecordFailure, CallId(),
                          "dedup.hamming: \"" + text.substr(0, 40) +
                              "\" is not a perceptual hash (1 to 16 hex digits)");
        setItem(entity, sequencer.node, ItemOutcome::Failed, Value(), cause);
        return true;
      }
      for (const HammingIndex::Match &match : sequencer.hammingIndex->find(*hash)) {
        candidates.push_back(match.survivor);
        similarities.push_back(1.0 - double(match.distance) / 64);
      }
      decision.fingerprint.assign(reinterpret_cast<const char *>(&*hash), sizeof *hash);
    } else if (!sequencer.nearIndex) {
      const KeyHash key = exactKeyOf(inputItem(entity, NodeId(node.inputs[0])).value);
      candidates = sequencer.exact.find(key);
      similarities.assign(candidates.size(), 1.0);
      decision.fingerprint = fingerprintOf(key);
    } else {
      const Value &signature = inputItem(entity, NodeId(node.inputs[1])).value;
      const SignatureParts parts = splitSignature(signature.asBytes(), *sequencer.nearIndex);
      const std::vector<uint32_t> &minima = parts.minima;
      if (minima.size() != sequencer.nearIndex->permutations()) {
        const uint32_t cause =
            recordFailure(entity, FailureKind::ContractViolation, CallId(),
                          "the signature has " + std::to_string(minima.size()) + " minima, not " +
                              std::to_string(sequencer.nearIndex->permutations()));
        setItem(entity, sequencer.node, ItemOutcome::Failed, Value(), cause);
        return true;
      }
      for (const NearIndex::Match &match : sequencer.nearIndex->find(minima, parts.shingles)) {
        candidates.push_back(match.survivor);
        similarities.push_back(match.similarity);
      }
      decision.fingerprint = signature.asBytes();
    }
    bool waits = false;
    const std::optional<uint32_t> survivor =
        earliestSurvivor(sequencer, candidates, decision.sourceRow, decision.path, waits);
    if (waits)
      return false;
    decision.survivor = !survivor;
    if (survivor) {
      decision.survivorRow = sequencer.survivors.row(*survivor);
      decision.survivorPath = sequencer.survivors.path(*survivor);
      decision.similarity =
          similarities[std::find(candidates.begin(), candidates.end(), *survivor) -
                       candidates.begin()];
      decision.fingerprint.clear();
    } else {
      sequencer.unfinished[decision.sourceRow].push_back(indexSurvivor(sequencer, decision));
    }
    if (options.onDedupDecision)
      options.onDedupDecision(decision);
  }
  sequencer.history.erase(owner.key);
  ++sequencer.progress.decided;
  if (decision.survivor) {
    setItem(entity, sequencer.node, ItemOutcome::Present,
            inputItem(entity, NodeId(node.inputs[0])).value, kNoIndex);
    return true;
  }
  // Counted when its root finishes and is not failed (a failed row's duplicates are its
  // failure's business), with the line of the errors journal.
  roots[rootId].duplicates.push_back(
      DuplicateRow{sequencer.progress.name, sequencer.node.index, std::move(decision.path),
                   decision.survivorRow, std::move(decision.survivorPath), decision.similarity});
  setItem(entity, sequencer.node, ItemOutcome::Dropped, Value(), kNoIndex);
  return true;
}

uint32_t LineageEngine::State::indexSurvivor(DedupSequencer &sequencer,
                                             const DedupDecision &decision) {
  const uint32_t survivor = sequencer.survivors.add(decision.sourceRow, decision.path);
  sequencer.retracted.push_back(false);
  if (sequencer.hammingIndex) {
    uint64_t hash = 0;
    std::memcpy(&hash, decision.fingerprint.data(),
                std::min(sizeof hash, decision.fingerprint.size()));
    sequencer.hammingIndex->insert(hash, survivor);
  } else if (sequencer.nearIndex) {
    const SignatureParts parts = splitSignature(decision.fingerprint, *sequencer.nearIndex);
    sequencer.nearIndex->insert(parts.minima, survivor, parts.shingles);
  } else
    sequencer.exact.insert(keyOf(decision.fingerprint), survivor);
  const uint64_t bytes =
      sequencer.survivors.bytes() + (sequencer.hammingIndex ? sequencer.hammingIndex->bytes()
                                     : sequencer.nearIndex  ? sequencer.nearIndex->bytes()
                                                            : sequencer.exact.bytes());
  memory.indexes += bytes - sequencer.countedBytes;
  memory.notePeak();
  sequencer.countedBytes = bytes;
  sequencer.progress.indexed = sequencer.survivors.size();
  sequencer.progress.indexBytes = bytes;
  return survivor;
}

} // namespace orch::runtime
