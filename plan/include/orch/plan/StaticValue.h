// Compile-time constants: literal arguments of operators, Call options and params.
#pragma once

#include "orch/plan/Type.h"

#include <cstdint>
#include <string>
#include <variant>

namespace orch::plan {

struct Duration {
  int64_t nanoseconds = 0;
  friend bool operator==(const Duration &, const Duration &) = default;
};

struct ByteSize {
  int64_t bytes = 0;
  friend bool operator==(const ByteSize &, const ByteSize &) = default;
};

using StaticValue = std::variant<bool, int64_t, double, std::string, Duration, ByteSize>;

/// A constant argument of an operator: `dpi: 150`.
struct NamedConstant {
  std::string name;
  StaticValue value;
  friend bool operator==(const NamedConstant &, const NamedConstant &) = default;
};

Type typeOf(const StaticValue &value);

/// The value as .orch source would spell it: `"a\n"`, `42`, `2.5`, `250ms`, `512MB`.
std::string formatStaticValue(const StaticValue &value);

/// `text` in double quotes with escapes valid in both .orch and JSON (`\n`, `\"`, `\u001b`).
std::string quoteString(const std::string &text);

} // namespace orch::plan
