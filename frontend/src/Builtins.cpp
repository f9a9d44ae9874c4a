// The builtin functions of expressions: `name(...)` with one of these names is an expression
// operation, not an operator use.
#include "orch/frontend/Sema.h"

#include <utility>

namespace orch::frontend {

std::optional<plan::ComputeOp> builtinFunction(const std::string &name) {
  static const std::pair<const char *, plan::ComputeOp> kBuiltins[] = {
      {"string", plan::ComputeOp::ToString}, {"int", plan::ComputeOp::ToInt},
      {"float", plan::ComputeOp::ToFloat},   {"coalesce", plan::ComputeOp::Coalesce},
      {"format", plan::ComputeOp::Format},   {"len", plan::ComputeOp::Length},
      {"ordinal", plan::ComputeOp::Ordinal},
  };
  for (const auto &[builtin, op] : kBuiltins)
    if (name == builtin)
      return op;
  return std::nullopt;
}

} // namespace orch::frontend
