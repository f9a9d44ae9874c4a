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

struct Item {
  Value value;
  /// Failed and Suppressed items: index of the cause in their root's failures.
  uint32_t cause = kNoIndex;
  ItemOutcome outcome = ItemOutcome::Unresolved;
};

/// Computes the items of domain-free nodes (constants and what is computed from constants only)
/// into `values`; the reason when a constant expression fails (a division by zero).
std::optional<std::string> evaluateDomainFreeNodes(const plan::Plan &plan, const PlanLayout &layout,
                                                   IdVector<NodeId, Item> &values);

/// An expression's failure for the errors journal: "file.orch:LINE:COL: why", naming the Json
/// field a cast checked.
std::string describeComputeFailure(const plan::Plan &plan, NodeId node, const std::string &why);

} // namespace orch::runtime
