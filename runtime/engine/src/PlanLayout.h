// Per-domain and per-node tables the engine precomputes from a plan, so that no run-time step
// searches the graph: where each node's item sits in an entity, which grains an entity has,
// which reduces gather a domain, which child domains an entity may expand into.
#pragma once

#include "IdVector.h"

#include "orch/plan/Plan.h"
#include "orch/runtime/engine/EngineTypes.h"

#include <optional>
#include <string>
#include <vector>

namespace orch::runtime {

/// What a Bool, Int or Float counts for in the byte budget (as approximateBytes counts one).
inline constexpr uint64_t kScalarHeldBytes = 16;

/// Whether a node's items are needed (semantics.md, demand). Always: wherever its entity exists
/// (a sink reads it, another domain reads it, or an always-needed node reads it without a
/// choice). Conditional: a consumer chooses per entity (an if's branch, a coalesce's later
/// operand, a filter's value) or only such nodes read it. Never: nothing that reaches a sink
/// reads it. Sources, expands and broadcasts are always needed; demand is decided within a
/// domain, and what another domain reads (a reduce's members) is needed wherever it exists. A
/// reduce's own demand is tracked like any node's, but it resolves as its members arrive.
enum class NodeDemand : uint8_t { Always, Conditional, Never };

/// The consumers that read only some of their operands, depending on others.
enum class ChoiceKind : uint8_t { None, If, Coalesce, Filter };

struct DomainLayout {
  DomainId parent;
  uint32_t depth = 0;
  /// The expand node that opens this domain (none for a root domain).
  NodeId openedBy;
  /// This domain's position among its parent's child domains.
  uint32_t childSlot = kNoIndex;
  /// Nodes whose items live in this domain's entities; a node's itemSlot indexes this list.
  std::vector<NodeId> nodes;
  /// Invoke nodes of this domain; a node's grainSlot indexes this list.
  std::vector<NodeId> invokes;
  std::vector<NodeId> broadcasts;
  std::vector<DomainId> children;
  /// Reduce nodes (in the parent domain) whose input lives here; reduceSlot indexes this list.
  std::vector<NodeId> reducesOver;
  /// Domains from the root down to this one, inclusive.
  std::vector<DomainId> pathFromRoot;
  /// Some sink writes rows of this domain or of a domain below it.
  bool sinksAtOrBelow = false;
  /// Choice nodes of this domain that are always needed: each new entity starts their choice
  /// (one whose deciding operand is a constant decides at once).
  std::vector<NodeId> alwaysNeededChoices;
  /// Recallable Invoke nodes of this domain that are always needed: each new entity looks for
  /// their kept values at once, and needs their operands only where none is kept.
  std::vector<NodeId> alwaysNeededRecallables;
  /// Nodes of this domain that nothing needed reads: sealed NOT NEEDED as each entity starts.
  std::vector<NodeId> neverNeeded;
  /// One of the three lists above is not empty: a new entity has demand to start.
  bool startsDemand = false;
  /// Nodes of this domain that a sink reads, and child domains with sinks at or below them:
  /// what an entity of this domain adds to its root's count of pending sink inputs.
  uint32_t pendingSinkInputs = 0;
};

struct NodeLayout {
  uint32_t itemSlot = kNoIndex;
  uint32_t grainSlot = kNoIndex;
  uint32_t reduceSlot = kNoIndex;
  /// Invoke: its Call.
  CallId call;
  /// Invoke: for each of the Call's input labels, the position in this node's inputs.
  std::vector<uint32_t> inputOrder;
  /// A sink reads this node's items (a root finishes once all such items are terminal).
  bool sinkInput = false;
  /// Reduce: failed members are left out (and reported), not suppressing the list.
  bool skipsFailedMembers = false;
  /// Compute: its operation.
  plan::ComputeOp compute = plan::ComputeOp::Add;
  NodeDemand demand = NodeDemand::Always;
  ChoiceKind choice = ChoiceKind::None;
  /// Invoke, in a run that recalls kept values (EngineOptions::recall): an earlier run may have
  /// kept this grain's value, and then nothing needs its operands (for it).
  bool recallable = false;
  /// Conditional nodes: how many distinct consumers (of its own domain) may need it.
  uint8_t consumersThatMayNeed = 0;
  /// How many distinct consumers read this node's item when they all are of its own domain and
  /// no sink reads it (0 otherwise): once each has finished with it, its value is dropped, so
  /// that a rendered page does not outlive its OCR, nor an `if`'s branch the Call after it
  /// (LineageEngine.cpp, readerDone). A source row always stays: it names its row in failure
  /// reports.
  uint8_t readers = 0;
  /// Expand: the list it expands, in the parent, when nothing else reads it: dropped once the
  /// children hold their elements (none otherwise).
  NodeId listReleasedWhenMade;
};

struct CallLayout {
  /// The operator's dataflow inputs in the order batches carry them.
  std::vector<std::string> inputLabels;
  std::vector<NodeId> nodes;
  /// Positions in inputLabels of the per-row values it batches by (PlanCall::batchKeys).
  std::vector<uint32_t> batchKeyLabels;
  /// The Calls that read its results as they are (an OCR reading the renders).
  std::vector<CallId> readers;
  /// Its results stay until their row finishes (no node of it has NodeLayout::readers: a sink
  /// writes them, a broadcast or a reduce reads them).
  bool keepsResults = false;
  /// The most a grain can add to the values held where types bound it: its result and what
  /// expressions make from it (Bool, Int, Float, Duration and Size are 16 bytes, as heldBytes
  /// counts a scalar); 0 where they do not: a String, a List or a record from an operator
  /// (which may carry more fields than its type names), a String joined to the result, a value
  /// made for each child, a choice it decides (boundedGrowthPerGrain in PlanLayout.cpp).
  uint64_t growthBytesBound = 0;
  /// The same for a grain's inputs, all of them: what its copy to a worker can hold, where
  /// they are all of those types.
  uint64_t inputBytesBound = 0;
};

struct PlanLayout {
  IdVector<DomainId, DomainLayout> domains;
  IdVector<NodeId, NodeLayout> nodes;
  IdVector<CallId, CallLayout> calls;
  /// Domain-free nodes in plan order, evaluated once per run.
  std::vector<NodeId> domainFreeNodes;
};

/// `recallsGrains`: the run recalls values an earlier run kept (EngineOptions::recall), so the
/// operands of Calls that keep values are needed only where their grains' values are not kept.
PlanLayout buildPlanLayout(const plan::Plan &plan, bool recallsGrains = false);

/// Whether operand `position` of a `choice` node is read only when the node's choice says so.
bool isChosenOperand(ChoiceKind choice, size_t position);

/// Whether `ancestor` is `domain` or one of its ancestors.
bool isSameOrAncestorDomain(const PlanLayout &layout, DomainId ancestor, DomainId domain);

} // namespace orch::runtime
