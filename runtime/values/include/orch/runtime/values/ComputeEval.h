// The value of an expression operation (plan/ComputeOps.h) on present operands: arithmetic with
// overflow and division checks, comparisons, logic, conversions and the checked cast. What
// cannot be computed (a division by zero, "abc" as an Int, a missing Json field) is a reason,
// which the engine records as the row's RecordFailure. If and coalesce are not strict: the
// engine resolves them itself (they wait only for the operands they need).
#pragma once

#include "orch/plan/ComputeOps.h"
#include "orch/runtime/values/Value.h"

#include <optional>
#include <span>
#include <string>

namespace orch::runtime {

struct ComputeOutcome {
  Value value;
  /// Set when the operation fails for these operands: why, without the location.
  std::optional<std::string> failure;
};

/// `op` on `operands` (all present), producing a value of `resultType`.
ComputeOutcome evaluateCompute(plan::ComputeOp op, std::span<const Value> operands,
                               const plan::Type &resultType);

} // namespace orch::runtime
