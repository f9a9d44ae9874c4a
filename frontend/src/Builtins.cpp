// The builtin functions of expressions: `name(...)` with one of these names is an expression
// operation, not an operator use.
#include "orch/frontend/Sema.h"

#include <utility>

namespace orch::frontend {

namespace {

constexpr std::pair<const char *, plan::ComputeOp> kBuiltins[] = {
    {"string", plan::ComputeOp::ToString}, {"int", plan::ComputeOp::ToInt},
    {"float", plan::ComputeOp::ToFloat},   {"coalesce", plan::ComputeOp::Coalesce},
    {"format", plan::ComputeOp::Format},   {"len", plan::ComputeOp::Length},
    {"ordinal", plan::ComputeOp::Ordinal},
};

} // namespace

std::vector<std::string> builtinFunctionNames() {
  std::vector<std::string> names;
  for (const auto &[builtin, op] : kBuiltins)
    names.push_back(builtin);
  return names;
}

std::optional<plan::ComputeOp> builtinFunction(const std::string &name) {
  for (const auto &[builtin, op] : kBuiltins)
    if (name == builtin)
      return op;
  return std::nullopt;
}

} // namespace orch::frontend
