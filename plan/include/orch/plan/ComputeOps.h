// The operations of expression nodes (NodeKind::Compute): arithmetic, comparisons, logic,
// conversions, the conditional, coalesce and the run-time checked cast. The engine evaluates
// them per entity, in place: they never become batches. A Compute node names its operation in
// its `field` (the names below), and its result type is the node's type.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace orch::plan {

enum class ComputeOp : unsigned char {
  Add,
  Subtract,
  Multiply,
  Divide,
  Remainder,
  Negate,
  Equal,
  NotEqual,
  Less,
  LessEqual,
  Greater,
  GreaterEqual,
  And,
  Or,
  Not,
  /// `if c then a else b`: waits only for `c` and the branch it chooses.
  If,
  /// `coalesce(a, b, ...)`: the first operand that is present (not dropped by a filter).
  Coalesce,
  /// `string(x)`, `int(x)`, `float(x)`: conversions (a text that is no number fails the row).
  ToString,
  ToInt,
  ToFloat,
  /// `x as T` on a Json value: checked against T when it runs.
  Cast,
  /// `ordinal(x)`: the position of x's entity, a root's row number in its source or a child's
  /// index among its siblings (from 0).
  Ordinal,
  /// `len(x)`: a text's length in Unicode code points, or a list's number of elements (what
  /// text.len and list.len compute; helper fusion evaluates those Calls as this).
  Length,
  /// Whether a text has a character other than ASCII whitespace (text.nonempty, fused).
  NonBlank,
  /// `format("{}-p{}.png", a, b)`: the text with each `{}` replaced by the next value as
  /// string() writes it (`{{` and `}}` are braces).
  Format,
};

/// The name plans carry ("add", "less_equal", "if", "cast", ...).
const char *computeOpName(ComputeOp op);
std::optional<ComputeOp> computeOpNamed(std::string_view name);
/// How the operation is written in .orch source ("+", "<=", "if", "coalesce", "as", ...).
const char *computeOpSpelling(ComputeOp op);
/// How many operands it takes; nullopt for coalesce and format (one or more).
std::optional<size_t> computeOpArity(ComputeOp op);
/// The number of `{}` in a format text; nullopt when a brace is neither `{}`, `{{` nor `}}`.
std::optional<size_t> formatHoles(std::string_view text);

/// How many operands a node of operation `name` must have, given that it has `given`; nullopt
/// when `name` is no operation.
std::optional<size_t> expectedComputeOperands(std::string_view name, size_t given);

} // namespace orch::plan
