// Names, spellings and arities of the expression operations.
#include "orch/plan/ComputeOps.h"

#include <algorithm>
#include <array>

namespace orch::plan {
namespace {

struct ComputeOpInfo {
  ComputeOp op;
  const char *name;
  const char *spelling;
  size_t arity; // 0: one or more
};

constexpr std::array kComputeOps = {
    ComputeOpInfo{ComputeOp::Add, "add", "+", 2},
    ComputeOpInfo{ComputeOp::Subtract, "subtract", "-", 2},
    ComputeOpInfo{ComputeOp::Multiply, "multiply", "*", 2},
    ComputeOpInfo{ComputeOp::Divide, "divide", "/", 2},
    ComputeOpInfo{ComputeOp::Remainder, "remainder", "%", 2},
    ComputeOpInfo{ComputeOp::Negate, "negate", "-", 1},
    ComputeOpInfo{ComputeOp::Equal, "equal", "==", 2},
    ComputeOpInfo{ComputeOp::NotEqual, "not_equal", "!=", 2},
    ComputeOpInfo{ComputeOp::Less, "less", "<", 2},
    ComputeOpInfo{ComputeOp::LessEqual, "less_equal", "<=", 2},
    ComputeOpInfo{ComputeOp::Greater, "greater", ">", 2},
    ComputeOpInfo{ComputeOp::GreaterEqual, "greater_equal", ">=", 2},
    ComputeOpInfo{ComputeOp::And, "and", "and", 2},
    ComputeOpInfo{ComputeOp::Or, "or", "or", 2},
    ComputeOpInfo{ComputeOp::Not, "not", "not", 1},
    ComputeOpInfo{ComputeOp::If, "if", "if", 3},
    ComputeOpInfo{ComputeOp::Coalesce, "coalesce", "coalesce", 0},
    ComputeOpInfo{ComputeOp::ToString, "string", "string", 1},
    ComputeOpInfo{ComputeOp::ToInt, "int", "int", 1},
    ComputeOpInfo{ComputeOp::ToFloat, "float", "float", 1},
    ComputeOpInfo{ComputeOp::Cast, "cast", "as", 1},
    ComputeOpInfo{ComputeOp::Ordinal, "ordinal", "ordinal", 1},
    ComputeOpInfo{ComputeOp::Length, "length", "len", 1},
    ComputeOpInfo{ComputeOp::NonBlank, "non_blank", "text.nonempty", 1},
    ComputeOpInfo{ComputeOp::Format, "format", "format", 0},
};

const ComputeOpInfo &infoOf(ComputeOp op) { return kComputeOps[static_cast<size_t>(op)]; }

} // namespace

constexpr bool tableFollowsTheEnum() {
  for (size_t i = 0; i < kComputeOps.size(); ++i)
    if (static_cast<size_t>(kComputeOps[i].op) != i)
      return false;
  return kComputeOps.size() == static_cast<size_t>(ComputeOp::Format) + 1;
}
static_assert(tableFollowsTheEnum(), "kComputeOps lists every ComputeOp in enum order");

const char *computeOpName(ComputeOp op) { return infoOf(op).name; }

std::optional<ComputeOp> computeOpNamed(std::string_view name) {
  for (const ComputeOpInfo &info : kComputeOps)
    if (name == info.name)
      return info.op;
  return std::nullopt;
}

const char *computeOpSpelling(ComputeOp op) { return infoOf(op).spelling; }

std::optional<size_t> computeOpArity(ComputeOp op) {
  const size_t arity = infoOf(op).arity;
  return arity == 0 ? std::nullopt : std::optional<size_t>(arity);
}

std::optional<size_t> formatHoles(std::string_view text) {
  size_t holes = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '{' && text[i] != '}')
      continue;
    if (i + 1 < text.size() && text[i + 1] == text[i]) {
      ++i; // `{{` or `}}`
    } else if (text[i] == '{' && i + 1 < text.size() && text[i + 1] == '}') {
      ++holes;
      ++i;
    } else {
      return std::nullopt;
    }
  }
  return holes;
}

std::optional<size_t> expectedComputeOperands(std::string_view name, size_t given) {
  std::optional<ComputeOp> op = computeOpNamed(name);
  if (!op)
    return std::nullopt;
  std::optional<size_t> arity = computeOpArity(*op);
  return arity ? *arity : std::max<size_t>(1, given);
}

} // namespace orch::plan
