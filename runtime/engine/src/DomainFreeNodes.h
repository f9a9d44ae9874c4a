// Items, and the nodes whose items are the same in every domain: constants and what is computed
// from constants only, evaluated once per run (and once when a plan is checked).
#pragma once

#include "IdVector.h"
#include "PlanLayout.h"

#include "orch/plan/Plan.h"
#include "orch/runtime/values/Value.h"

#include <optional>
#include <string>

namespace orch::runtime {

/// Whether some consumer needs an item (semantics.md, demand). Items of nodes that are always
/// needed start Needed; those of conditionally needed nodes start Undecided and move once.
enum class Demand : uint8_t { Needed, Undecided, NotNeeded };

struct Item {
  Value value;
  /// Failed and Suppressed items: index of the cause in their root's failures. A present item
  /// counted by its input (countedByInput): that input's position among the node's inputs.
  uint32_t cause = kNoIndex;
  ItemOutcome outcome : 3 = ItemOutcome::Unresolved;
  Demand demand : 2 = Demand::Needed;
  /// Its value is one of its inputs' (a filter's, an if's): that input's item (at `cause`)
  /// counts the bytes, and outlives this one (it counts this one among its readers until it
  /// goes).
  bool countedByInput : 1 = false;
  /// Its consumers have been visited since it resolved (its value may go once unread).
  bool visited : 1 = false;
  /// Undecided items: consumers that have not yet said whether they read it.
  uint8_t undecidedConsumers : 7 = 0;
  /// Readers (NodeLayout::readers) still to finish with its value.
  uint8_t readersLeft = 0;
  /// A choice node's own item (if, coalesce, filter): how far its choice has got
  /// (EngineDemand.cpp).
  uint8_t choiceStep = 0;
};
static_assert(sizeof(Item) <= 32, "an item stays within 32 bytes: a million pages hold many");

/// Computes the items of domain-free nodes (constants and what is computed from constants only)
/// into `values`; the reason when a constant expression fails (a division by zero).
std::optional<std::string> evaluateDomainFreeNodes(const plan::Plan &plan, const PlanLayout &layout,
                                                   IdVector<NodeId, Item> &values);

/// An expression's failure for the errors journal: "file.orch:LINE:COL: why", naming the Json
/// field a cast checked.
std::string describeComputeFailure(const plan::Plan &plan, NodeId node, const std::string &why);

} // namespace orch::runtime
