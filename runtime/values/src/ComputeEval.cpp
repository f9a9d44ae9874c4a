// Expression operations on run-time values (ComputeEval.h).
#include "orch/runtime/values/ComputeEval.h"

#include "orch/runtime/values/TextMeasures.h"

#include <charconv>
#include <cmath>
#include <cstdint>

namespace orch::runtime {

using plan::ComputeOp;

namespace {

ComputeOutcome ok(Value value) { return {std::move(value), std::nullopt}; }
ComputeOutcome fail(std::string why) { return {Value(), std::move(why)}; }

bool isNumber(const Value &value) {
  return value.kind() == Value::Kind::Int || value.kind() == Value::Kind::Float;
}

bool bothInts(const Value &a, const Value &b) {
  return a.kind() == Value::Kind::Int && b.kind() == Value::Kind::Int;
}

/// A value as it appears in a message: its JSON-like text, cut at 60 characters.
std::string shown(const Value &value) {
  std::string text = value.str();
  return text.size() > 60 ? text.substr(0, 57) + "..." : text;
}

ComputeOutcome arithmetic(ComputeOp op, const Value &a, const Value &b) {
  if (op == ComputeOp::Add && a.kind() == Value::Kind::String && b.kind() == Value::Kind::String)
    return ok(Value::string(a.asString() + b.asString()));
  if (!isNumber(a) || !isNumber(b))
    return fail(std::string("'") + plan::computeOpSpelling(op) + "' needs numbers, got " +
                shown(a) + " and " + shown(b));
  if (bothInts(a, b)) {
    const int64_t x = a.asInt(), y = b.asInt();
    int64_t result = 0;
    bool overflow = false;
    switch (op) {
    case ComputeOp::Add:
      overflow = __builtin_add_overflow(x, y, &result);
      break;
    case ComputeOp::Subtract:
      overflow = __builtin_sub_overflow(x, y, &result);
      break;
    case ComputeOp::Multiply:
      overflow = __builtin_mul_overflow(x, y, &result);
      break;
    case ComputeOp::Divide:
    case ComputeOp::Remainder:
      if (y == 0)
        return fail(op == ComputeOp::Divide ? "division by zero"
                                            : "remainder of a division by zero");
      if (x == INT64_MIN && y == -1)
        overflow = true;
      else
        result = op == ComputeOp::Divide ? x / y : x % y;
      break;
    default:
      break;
    }
    if (overflow)
      return fail("integer overflow in " + std::to_string(x) + " " + plan::computeOpSpelling(op) +
                  " " + std::to_string(y));
    return ok(Value::integer(result));
  }
  const double x = a.asFloat(), y = b.asFloat();
  switch (op) {
  case ComputeOp::Add:
    return ok(Value::real(x + y));
  case ComputeOp::Subtract:
    return ok(Value::real(x - y));
  case ComputeOp::Multiply:
    return ok(Value::real(x * y));
  case ComputeOp::Divide:
    if (y == 0)
      return fail("division by zero");
    return ok(Value::real(x / y));
  case ComputeOp::Remainder:
    if (y == 0)
      return fail("remainder of a division by zero");
    return ok(Value::real(std::fmod(x, y)));
  default:
    return fail("not arithmetic");
  }
}

/// -1, 0 or 1; nullopt when the two cannot be ordered (different kinds, NaN).
std::optional<int> compare(const Value &a, const Value &b) {
  if (bothInts(a, b))
    return a.asInt() < b.asInt() ? -1 : a.asInt() > b.asInt() ? 1 : 0;
  if (isNumber(a) && isNumber(b)) {
    const double x = a.asFloat(), y = b.asFloat();
    if (std::isnan(x) || std::isnan(y))
      return std::nullopt;
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.kind() == Value::Kind::String && b.kind() == Value::Kind::String) {
    const int order = a.asString().compare(b.asString());
    return order < 0 ? -1 : order > 0 ? 1 : 0;
  }
  if (a.kind() == Value::Kind::Bool && b.kind() == Value::Kind::Bool)
    return int(a.asBool()) - int(b.asBool());
  return std::nullopt;
}

ComputeOutcome comparison(ComputeOp op, const Value &a, const Value &b) {
  if (op == ComputeOp::Equal || op == ComputeOp::NotEqual) {
    std::optional<int> order = compare(a, b);
    const bool equal = order ? *order == 0 : a == b;
    return ok(Value::boolean(op == ComputeOp::Equal ? equal : !equal));
  }
  std::optional<int> order = compare(a, b);
  if (!order)
    return fail(std::string("cannot order ") + shown(a) + " and " + shown(b) + " with '" +
                plan::computeOpSpelling(op) + "'");
  switch (op) {
  case ComputeOp::Less:
    return ok(Value::boolean(*order < 0));
  case ComputeOp::LessEqual:
    return ok(Value::boolean(*order <= 0));
  case ComputeOp::Greater:
    return ok(Value::boolean(*order > 0));
  default:
    return ok(Value::boolean(*order >= 0));
  }
}

std::string numberText(double value) {
  char buffer[64];
  auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, value);
  std::string text(buffer, error == std::errc() ? end : buffer);
  // Keep a Float recognisable: 2.0 is "2.0", not "2".
  if (std::isfinite(value) && text.find_first_of(".eE") == std::string::npos)
    text += ".0";
  return text;
}

ComputeOutcome toText(const Value &value) {
  switch (value.kind()) {
  case Value::Kind::Null:
    return fail("no value to convert to a String (a missing or null field)");
  case Value::Kind::Bool:
    return ok(Value::string(value.asBool() ? "true" : "false"));
  case Value::Kind::Int:
    return ok(Value::string(std::to_string(value.asInt())));
  case Value::Kind::Float:
    return ok(Value::string(numberText(value.asFloat())));
  case Value::Kind::String:
    return ok(value);
  default:
    return ok(Value::string(value.str()));
  }
}

ComputeOutcome toInteger(const Value &value) {
  switch (value.kind()) {
  case Value::Kind::Bool:
    return ok(Value::integer(value.asBool() ? 1 : 0));
  case Value::Kind::Int:
    return ok(value);
  case Value::Kind::Float: {
    const double real = std::trunc(value.asFloat());
    if (!std::isfinite(real) || real < -9.2233720368547758e18 || real >= 9.2233720368547758e18)
      return fail(shown(value) + " does not fit in an Int");
    return ok(Value::integer(static_cast<int64_t>(real)));
  }
  case Value::Kind::String: {
    const std::string &text = value.asString();
    int64_t result = 0;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), result);
    if (error != std::errc() || end != text.data() + text.size() || text.empty())
      return fail("\"" + text.substr(0, 40) + "\" is not an Int");
    return ok(Value::integer(result));
  }
  case Value::Kind::Null:
    return fail("no value to convert to an Int (a missing or null field)");
  default:
    return fail(shown(value) + " is not an Int");
  }
}

ComputeOutcome toReal(const Value &value) {
  switch (value.kind()) {
  case Value::Kind::Bool:
    return ok(Value::real(value.asBool() ? 1 : 0));
  case Value::Kind::Int:
  case Value::Kind::Float:
    return ok(Value::real(value.asFloat()));
  case Value::Kind::String: {
    const std::string &text = value.asString();
    double result = 0;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), result);
    if (error != std::errc() || end != text.data() + text.size() || text.empty())
      return fail("\"" + text.substr(0, 40) + "\" is not a Float");
    return ok(Value::real(result));
  }
  case Value::Kind::Null:
    return fail("no value to convert to a Float (a missing or null field)");
  default:
    return fail(shown(value) + " is not a Float");
  }
}

ComputeOutcome cast(const Value &value, const plan::Type &type) {
  if (value.isNull() && type.kind() != plan::TypeKind::Json)
    return fail("is missing or null, expected " + type.str());
  if (type.kind() == plan::TypeKind::File && value.kind() == Value::Kind::String)
    return fail("is a String (\"" + value.asString().substr(0, 60) +
                "\"), not a File: a path becomes a File with file(...), which checks it exists");
  if (auto problem = checkValueType(value, type))
    return fail("does not have type " + type.str() + ": " + *problem);
  // An Int where a Float is expected is a Float from here on.
  if (type.kind() == plan::TypeKind::Float && value.kind() == Value::Kind::Int)
    return ok(Value::real(value.asFloat()));
  return ok(value);
}

} // namespace

ComputeOutcome evaluateCompute(ComputeOp op, std::span<const Value> operands,
                               const plan::Type &resultType) {
  switch (op) {
  case ComputeOp::Add:
  case ComputeOp::Subtract:
  case ComputeOp::Multiply:
  case ComputeOp::Divide:
  case ComputeOp::Remainder:
    return arithmetic(op, operands[0], operands[1]);
  case ComputeOp::Negate:
    if (operands[0].kind() == Value::Kind::Int) {
      if (operands[0].asInt() == INT64_MIN)
        return fail("integer overflow in -(" + std::to_string(operands[0].asInt()) + ")");
      return ok(Value::integer(-operands[0].asInt()));
    }
    if (operands[0].kind() == Value::Kind::Float)
      return ok(Value::real(-operands[0].asFloat()));
    return fail("'-' needs a number, got " + shown(operands[0]));
  case ComputeOp::Equal:
  case ComputeOp::NotEqual:
  case ComputeOp::Less:
  case ComputeOp::LessEqual:
  case ComputeOp::Greater:
  case ComputeOp::GreaterEqual:
    return comparison(op, operands[0], operands[1]);
  case ComputeOp::And:
  case ComputeOp::Or:
  case ComputeOp::Not:
    for (const Value &operand : operands)
      if (operand.kind() != Value::Kind::Bool)
        return fail(std::string("'") + plan::computeOpSpelling(op) + "' needs Bool, got " +
                    shown(operand));
    if (op == ComputeOp::Not)
      return ok(Value::boolean(!operands[0].asBool()));
    return ok(Value::boolean(op == ComputeOp::And ? operands[0].asBool() && operands[1].asBool()
                                                  : operands[0].asBool() || operands[1].asBool()));
  case ComputeOp::ToString:
    return toText(operands[0]);
  case ComputeOp::ToInt:
    return toInteger(operands[0]);
  case ComputeOp::ToFloat:
    return toReal(operands[0]);
  case ComputeOp::Cast:
    return cast(operands[0], resultType);
  case ComputeOp::Format: {
    if (operands[0].kind() != Value::Kind::String)
      return fail("the text of 'format' must be a String, got " + shown(operands[0]));
    const std::string &text = operands[0].asString();
    std::string out;
    size_t next = 1;
    for (size_t i = 0; i < text.size(); ++i) {
      const char c = text[i];
      if ((c == '{' || c == '}') && i + 1 < text.size() && text[i + 1] == c) {
        out += c;
        ++i;
      } else if (c == '{' && i + 1 < text.size() && text[i + 1] == '}') {
        if (next >= operands.size())
          return fail("the text of 'format' has more '{}' than values");
        ComputeOutcome piece = toText(operands[next++]);
        if (piece.failure)
          return piece;
        out += piece.value.asString();
        ++i;
      } else if (c == '{' || c == '}') {
        return fail("a lone '" + std::string(1, c) + "' in the text of 'format'");
      } else {
        out += c;
      }
    }
    if (next != operands.size())
      return fail("the text of 'format' has fewer '{}' than values");
    return ok(Value::string(std::move(out)));
  }
  case ComputeOp::Length:
    if (operands[0].kind() == Value::Kind::String)
      return ok(Value::integer(int64_t(countCodePoints(operands[0].asString()))));
    if (operands[0].kind() == Value::Kind::List)
      return ok(Value::integer(int64_t(operands[0].asList().size())));
    if (operands[0].kind() == Value::Kind::Bytes)
      return ok(Value::integer(int64_t(operands[0].asBytes().size())));
    return fail("'len' needs a String, Bytes or a List, got " + shown(operands[0]));
  case ComputeOp::NonBlank:
    if (operands[0].kind() != Value::Kind::String)
      return fail("'text.nonempty' needs a String, got " + shown(operands[0]));
    return ok(Value::boolean(hasNonBlank(operands[0].asString())));
  case ComputeOp::If:
  case ComputeOp::Coalesce:
  case ComputeOp::Ordinal:
    break;
  }
  return fail(std::string("'") + plan::computeOpSpelling(op) + "' is resolved by the engine");
}

} // namespace orch::runtime
