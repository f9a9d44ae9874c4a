// The helper operators that are also expressions: `math.gt(a, b)` is `a > b`. The compiler's
// helper-fusion pass turns their Calls into Compute nodes, and their operator implementations
// evaluate the same operation: one table, one implementation, the same value either way.
#pragma once

#include "orch/plan/ComputeOps.h"
#include "orch/plan/Type.h"

#include <array>
#include <string_view>

namespace orch::plan {

struct HelperOperator {
  const char *op;
  ComputeOp compute;
  /// Its inputs by parameter name, in the operation's operand order (also the parameters'
  /// order); null after the last.
  std::array<const char *, 2> inputs;
  TypeKind result;
};

inline constexpr std::array kHelperOperators = {
    HelperOperator{"text.len", ComputeOp::Length, {"text", nullptr}, TypeKind::Int},
    HelperOperator{"list.len", ComputeOp::Length, {"list", nullptr}, TypeKind::Int},
    HelperOperator{"text.nonempty", ComputeOp::NonBlank, {"text", nullptr}, TypeKind::Bool},
    HelperOperator{"math.gt", ComputeOp::Greater, {"a", "b"}, TypeKind::Bool},
    HelperOperator{"math.lt", ComputeOp::Less, {"a", "b"}, TypeKind::Bool},
};

inline const HelperOperator *findHelperOperator(std::string_view op) {
  for (const HelperOperator &helper : kHelperOperators)
    if (op == helper.op)
      return &helper;
  return nullptr;
}

} // namespace orch::plan
