// Operator binding: finding an operator in the catalog, matching a use's arguments to its
// parameters (positional, then named), checking inputs, constants and Call options. The type
// checker calls it for every source, `call`, sink and inline operator use; it calls back to
// type the argument expressions.
#pragma once

#include "orch/frontend/Ast.h"
#include "orch/frontend/Sema.h"

#include <functional>
#include <optional>

namespace orch::frontend {

/// Which parameters an argument list may fill.
enum class BindingSite {
  /// `call c = op(...)`: the static parameters only; inputs come where `c` is used.
  CallDeclaration,
  /// `c(...)`: the inputs only; statics were fixed by the declaration.
  CallUse,
  /// `op(...)` inline, sources and sinks: every parameter.
  Everything,
};

/// A literal, or a param's value; nullopt for anything computed per entity.
std::optional<plan::StaticValue> constantValue(const ast::Expr &expr);

/// `value` as a constant of type `to` (Int widens to Float), or nullopt if it is not one.
std::optional<plan::StaticValue> convertConstant(const plan::StaticValue &value,
                                                 const plan::Type &to);

class OperatorBinder {
public:
  /// Types an argument expression (and reports its errors); nullopt when it has no type.
  using TypeOf = std::function<std::optional<plan::Type>(ast::Expr &)>;

  OperatorBinder(const ast::File &file, const plan::OperatorCatalog &catalog,
                 DiagnosticEngine &diags, TypeOf typeOf)
      : file_(file), catalog_(catalog), diags_(diags), typeOf_(std::move(typeOf)) {}

  /// The operator of kind `wanted` called `name`, or null after an error (with the closest
  /// name, or where an operator of another kind belongs).
  const plan::OperatorSignature *lookup(const ast::OperatorName &name, plan::OperatorKind wanted);

  /// Matches arguments to parameters (positional first, then named), checks each against its
  /// parameter, and records the binding in `use.bound`; `typeVar` is what the signature's type
  /// variable stands for. Returns false after reporting.
  bool bindArguments(ast::OperatorUse &use, const plan::OperatorSignature &signature,
                     BindingSite site, std::optional<plan::Type> &typeVar);

  /// Checks a use's `with` options against the option table and the operator, and stores the
  /// accepted ones in `use.callOptions`.
  void checkOptions(ast::OperatorUse &use, const plan::OperatorSignature &signature);

private:
  /// Which parameters may vary per row, for a constant that was not one.
  static std::string perRowHint(const plan::OperatorParam &param,
                                const plan::OperatorSignature &signature);
  void reportWrongSite(const ast::Argument &argument, const plan::OperatorParam &param,
                       const std::string &op, BindingSite site);
  bool checkInput(ast::Expr &value, const plan::OperatorParam &param, const std::string &op,
                  std::optional<plan::Type> &typeVar);
  bool checkStatic(ast::Expr &value, const plan::OperatorParam &param, const std::string &op,
                   ast::OperatorUse &use);
  void reportOptionNotAccepted(const plan::OperatorSignature &signature, const ast::Option &option);
  bool checkOptionValue(const plan::CallOptionSpec &spec, const plan::StaticValue &value,
                        SourceLocation at);

  const ast::File &file_;
  const plan::OperatorCatalog &catalog_;
  DiagnosticEngine &diags_;
  TypeOf typeOf_;
};

} // namespace orch::frontend
