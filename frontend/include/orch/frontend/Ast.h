// The typed AST of a .orch file. The parser builds it (one transform function per grammar
// rule); name resolution and type checking fill in the fields marked "resolved".
#pragma once

#include "orch/ir/SourceLocation.h"
#include "orch/plan/CallOptions.h"
#include "orch/plan/ComputeOps.h"
#include "orch/plan/OperatorCatalog.h"
#include "orch/plan/Plan.h"
#include "orch/plan/StaticValue.h"
#include "orch/plan/Type.h"

#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

namespace orch::ast {

struct Expr;
struct Statement;
using ExprPtr = std::unique_ptr<Expr>;

struct Identifier {
  std::string name;
  SourceLocation location;
};

/// `ocr` (a declared Call) or `pdf.render` (an operator of the catalog).
struct OperatorName {
  std::string text;
  SourceLocation location;
};

struct Argument {
  /// Set for `name: value`, empty for a positional argument.
  std::optional<Identifier> name;
  ExprPtr value;
  SourceLocation location;
};

struct Option {
  Identifier name;
  /// Null for `none` (and for a value that did not parse).
  ExprPtr value;
  /// Written as the word `none` (`timeout: none`).
  bool none = false;
};

/// An argument matched to the parameter it fills (resolved).
struct BoundParam {
  const plan::OperatorParam *param = nullptr;
  /// The argument's expression; null when a static parameter took its default.
  const Expr *expr = nullptr;
  /// For static parameters: the constant, after params are substituted.
  std::optional<plan::StaticValue> value;
};

/// An operator applied to arguments with options: shared by sources, Calls, sinks and inline
/// invocations.
struct OperatorUse {
  OperatorName op;
  std::vector<Argument> arguments;
  std::vector<Option> options;
  bool hasOptionBlock = false;
  // resolved
  const plan::OperatorSignature *signature = nullptr;
  std::vector<BoundParam> bound;
  plan::CallOptions callOptions;
};

struct TypeExpr;
struct TypeField {
  Identifier name;
  std::unique_ptr<TypeExpr> type;
};

/// `Text`, `List<Text>`, `Page<Text>` (a type in a domain) or `{a: Int, b: Text}`.
struct TypeExpr {
  SourceLocation location;
  Identifier name;
  std::vector<TypeExpr> arguments;
  bool isRecord = false;
  std::vector<TypeField> fields;
};

struct Literal {
  plan::StaticValue value;
};

struct NameRef {
  Identifier name;
  // resolved: the param, source or binding it names
  const Statement *target = nullptr;
};

struct Projection {
  ExprPtr base;
  Identifier field;
};

struct RecordField {
  Identifier name;
  ExprPtr value;
};

struct Record {
  std::vector<RecordField> fields;
};

struct Invoke {
  OperatorUse use;
  // resolved: the declared Call it invokes, if any (its static arguments and options apply)
  const Statement *call = nullptr;
  /// Name resolution reported its callee (a value used as a Call, a Call used too early): the
  /// operator catalog is not searched for it again.
  bool calleeReported = false;
};

struct Expand {
  ExprPtr input;
  Identifier domain;
};

struct ReduceOption {
  Identifier name;
  ExprPtr value;
};

/// How a reduce treats a failed or suppressed member: the list is suppressed (the default), or
/// the member is left out like a dropped one and reported (`failed: "skip"`).
enum class FailedMembers { Suppress, Skip };

struct Reduce {
  ExprPtr input;
  std::vector<ReduceOption> options;
  // resolved: from the `failed` option
  FailedMembers failed = FailedMembers::Suppress;
};

struct Filter {
  ExprPtr value;
  ExprPtr mask;
};

struct Broadcast {
  ExprPtr value;
  ExprPtr like;
};

/// An expression operation (plan/ComputeOps.h): `a + b`, `not c`, `if c then a else b`,
/// `coalesce(a, b)`, `string(x)`, `x as T`.
struct Compute {
  plan::ComputeOp op = plan::ComputeOp::Add;
  std::vector<ExprPtr> operands;
  /// `x as T`: the type.
  std::optional<TypeExpr> castType;
};

/// Stands where the parser recovered from a syntax error.
struct ErrorExpr {};

struct Expr {
  SourceLocation location;
  std::variant<NameRef, Literal, Projection, Record, Invoke, Expand, Reduce, Filter, Broadcast,
               Compute, ErrorExpr>
      node;
  // resolved
  std::optional<plan::Type> type;
};

struct ParamDecl {
  Identifier name;
  TypeExpr type;
  ExprPtr value;
  // resolved: the declared type, and the value after `--set` overrides
  std::optional<plan::Type> declaredType;
  std::optional<plan::StaticValue> resolvedValue;
};

struct SourceDecl {
  Identifier name;
  OperatorUse use;
  /// `as DOMAIN`; without it the domain is named after the source.
  std::optional<Identifier> domain;
};

struct CallDecl {
  Identifier name;
  OperatorUse use;
};

struct SinkDecl {
  OperatorUse use;
};

struct BindingDecl {
  Identifier name;
  std::optional<TypeExpr> type;
  ExprPtr value;
};

/// `const threshold: Float = 0.5` in an operator declaration.
struct OperatorParamDecl {
  Identifier name;
  bool constant = false;
  /// `grouped`: an input whose grains batch only with grains of the same value.
  std::optional<Identifier> modifier;
  TypeExpr type;
  /// A literal, or null.
  ExprPtr defaultValue;
};

/// `class: "Scorer"`, `"models/quality.py"` or `args: ["--fast"]` of a runner.
struct RunnerArgument {
  std::optional<Identifier> name;
  /// Literals; one unless `isList`.
  std::vector<ExprPtr> values;
  bool isList = false;
  SourceLocation location;
};

/// `operator quality.score(text: String) -> Float = python("models/quality.py", class: "S");`
struct OperatorDecl {
  OperatorName name;
  std::vector<OperatorParamDecl> params;
  TypeExpr result;
  Identifier runner;
  std::vector<RunnerArgument> arguments;
  SourceLocation location;
  // resolved: what the plan records (set when the declaration checked out)
  std::optional<plan::PlanExternalOperator> external;
};

struct Statement {
  SourceLocation location;
  std::variant<ParamDecl, SourceDecl, CallDecl, SinkDecl, BindingDecl, OperatorDecl> node;
  /// The parser recovered from a syntax error inside it: the name it declares is known (so
  /// that its uses are not reported again), nothing else of it is checked.
  bool broken = false;
};

struct File {
  uint32_t bufferId = 0;
  /// The file's name as given to the compiler (relative paths in it are relative to its folder).
  std::string path;
  Identifier pipelineName;
  std::vector<std::unique_ptr<Statement>> statements;
  // resolved: every domain the file names (sources' and expands'), in source order
  std::vector<Identifier> domains;
  /// resolved: what operator uses bind against: the catalog the frontend was given plus the
  /// file's own operator declarations (OperatorUse::signature points into it).
  std::shared_ptr<const plan::OperatorCatalog> catalog;
};

/// The name a statement binds (params, sources, Calls, bindings); null for sinks.
const Identifier *declaredName(const Statement &statement);

/// Lambdas as one visitor, for `std::visit`: a node kind without a lambda does not compile, so
/// that a new kind of expression or statement is handled everywhere or nowhere.
template <typename... Cases> struct Overloaded : Cases... { using Cases::operator()...; };
template <typename... Cases> Overloaded(Cases...) -> Overloaded<Cases...>;

/// For `if constexpr` chains over a variant's alternatives: `static_assert(kNoCase<Node>)` in
/// the last `else` fails to compile when a new alternative has no branch.
template <typename Node> inline constexpr bool kNoCase = false;

/// Calls `visit(Expr &)` on each direct subexpression of `expr`, in source order.
template <typename Visit> void forEachChild(Expr &expr, Visit &&visit) {
  auto each = [&](ExprPtr &child) {
    if (child)
      visit(*child);
  };
  auto arguments = [&](OperatorUse &use) {
    for (Argument &argument : use.arguments)
      each(argument.value);
    for (Option &option : use.options)
      each(option.value);
  };
  std::visit(
      [&](auto &node) {
        using Node = std::decay_t<decltype(node)>;
        if constexpr (std::is_same_v<Node, Projection>)
          each(node.base);
        else if constexpr (std::is_same_v<Node, Record>)
          for (RecordField &field : node.fields)
            each(field.value);
        else if constexpr (std::is_same_v<Node, Invoke>)
          arguments(node.use);
        else if constexpr (std::is_same_v<Node, Expand> || std::is_same_v<Node, Reduce>)
          each(node.input);
        else if constexpr (std::is_same_v<Node, Filter>) {
          each(node.value);
          each(node.mask);
        } else if constexpr (std::is_same_v<Node, Broadcast>) {
          each(node.value);
          each(node.like);
        } else if constexpr (std::is_same_v<Node, Compute>) {
          for (ExprPtr &operand : node.operands)
            each(operand);
        } else if constexpr (!std::is_same_v<Node, NameRef> && !std::is_same_v<Node, Literal> &&
                             !std::is_same_v<Node, ErrorExpr>) {
          static_assert(kNoCase<Node>, "forEachChild: an expression kind without a case");
        }
      },
      expr.node);
}

/// Calls `visit(Expr &)` on each top-level expression of a statement: arguments, options,
/// a binding's value, a param's literal.
template <typename Visit> void forEachExpr(Statement &statement, Visit &&visit) {
  auto use = [&](OperatorUse &operatorUse) {
    for (Argument &argument : operatorUse.arguments)
      if (argument.value)
        visit(*argument.value);
    for (Option &option : operatorUse.options)
      if (option.value)
        visit(*option.value);
  };
  if (auto *param = std::get_if<ParamDecl>(&statement.node)) {
    if (param->value)
      visit(*param->value);
  } else if (auto *source = std::get_if<SourceDecl>(&statement.node)) {
    use(source->use);
  } else if (auto *call = std::get_if<CallDecl>(&statement.node)) {
    use(call->use);
  } else if (auto *sink = std::get_if<SinkDecl>(&statement.node)) {
    use(sink->use);
  } else if (auto *binding = std::get_if<BindingDecl>(&statement.node)) {
    if (binding->value)
      visit(*binding->value);
  }
}

} // namespace orch::ast
