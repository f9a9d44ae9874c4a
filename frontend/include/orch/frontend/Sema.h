// Semantic analysis of a parsed file: name resolution, then type checking against the operator
// catalog. Each stage reports through the DiagnosticEngine and returns false on errors.
#pragma once

#include "orch/frontend/Ast.h"
#include "orch/ir/Diagnostics.h"
#include "orch/plan/OperatorCatalog.h"

#include <optional>
#include <string>
#include <vector>

namespace orch::frontend {

/// `orch run --set NAME=VALUE`: replaces the default of a param.
struct ParamOverride {
  std::string name;
  std::string value;
};

/// Splits a command line's `NAME=VALUE`; nullopt when there is no `=` or no name.
std::optional<ParamOverride> parseParamOverride(const std::string &assignment);

/// Binds every name use to its declaration. Reports undefined names, names bound twice, uses
/// before definition, cycles between bindings, and domains named twice.
bool resolveNames(ast::File &file, DiagnosticEngine &diags);

/// Assigns a type to every expression and checks operator calls (operators, argument count,
/// names and types, constants), records, projections, filters, expands, options and params.
/// Requires resolveNames to have succeeded.
bool checkTypes(ast::File &file, const plan::OperatorCatalog &catalog,
                const std::vector<ParamOverride> &overrides, DiagnosticEngine &diags);

/// Checks the file's `operator` declarations (names, parameters, types, runner, the script or
/// executable, which must exist) and sets `file.catalog` to `base` plus every declared operator
/// that checked out, with its plan record in OperatorDecl::external. Returns false on errors.
bool declareOperators(ast::File &file, const plan::OperatorCatalog &base, DiagnosticEngine &diags);

/// The type `typeExpr` spells (`List<Text>`, `{a: Int}`), or nullopt after reporting.
std::optional<plan::Type> resolveTypeExpr(const ast::TypeExpr &typeExpr, DiagnosticEngine &diags);

/// The candidate closest to `name` when it is close enough to be a likely typo, else "".
std::string closestSpelling(const std::string &name, const std::vector<std::string> &candidates);

/// "; did you mean 'batch'?" for the closest candidate, or "" when none is close: the tail of
/// an "unknown ..." message.
std::string didYouMean(const std::string &name, const std::vector<std::string> &candidates);

/// The expression operation `name(...)` stands for when `name` is a builtin function (`string`,
/// `int`, `float`, `coalesce`, `format`, `len`, `ordinal`), or nullopt.
std::optional<plan::ComputeOp> builtinFunction(const std::string &name);
inline bool isBuiltinFunction(const std::string &name) { return builtinFunction(name).has_value(); }
/// Every builtin function's name, in the order of Builtins.cpp's table.
std::vector<std::string> builtinFunctionNames();

} // namespace orch::frontend
