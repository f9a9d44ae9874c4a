// Small queries over AST nodes.
#include "orch/frontend/Ast.h"

namespace orch::ast {

const Identifier *declaredName(const Statement &statement) {
  if (auto *param = std::get_if<ParamDecl>(&statement.node))
    return &param->name;
  if (auto *source = std::get_if<SourceDecl>(&statement.node))
    return &source->name;
  if (auto *call = std::get_if<CallDecl>(&statement.node))
    return &call->name;
  if (auto *binding = std::get_if<BindingDecl>(&statement.node))
    return &binding->name;
  return nullptr;
}

} // namespace orch::ast
