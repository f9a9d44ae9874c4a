// Typing and printing of compile-time constants.
#include "orch/plan/StaticValue.h"

#include <array>
#include <cstdio>

namespace orch::plan {
namespace {

struct Unit {
  const char *suffix;
  int64_t scale;
};

std::string formatDuration(int64_t nanoseconds) {
  constexpr std::array<Unit, 4> units = {
      {{"h", 3600'000'000'000}, {"m", 60'000'000'000}, {"s", 1'000'000'000}, {"ms", 1'000'000}}};
  for (const Unit &unit : units)
    if (nanoseconds != 0 && nanoseconds % unit.scale == 0)
      return std::to_string(nanoseconds / unit.scale) + unit.suffix;
  if (nanoseconds == 0)
    return "0s";
  char text[64];
  std::snprintf(text, sizeof text, "%.6gms", double(nanoseconds) / 1e6);
  return text;
}

std::string formatSize(int64_t bytes) {
  constexpr std::array<Unit, 8> units = {{{"TB", 1'000'000'000'000},
                                          {"GB", 1'000'000'000},
                                          {"MB", 1'000'000},
                                          {"KB", 1'000},
                                          {"TiB", int64_t(1) << 40},
                                          {"GiB", int64_t(1) << 30},
                                          {"MiB", int64_t(1) << 20},
                                          {"KiB", int64_t(1) << 10}}};
  for (const Unit &unit : units)
    if (bytes != 0 && bytes % unit.scale == 0)
      return std::to_string(bytes / unit.scale) + unit.suffix;
  return std::to_string(bytes) + "B";
}

std::string formatFloat(double value) {
  char text[64];
  std::snprintf(text, sizeof text, "%.17g", value);
  std::string out = text;
  // Keep a float recognisable as one: 2 -> 2.0.
  if (out.find_first_of(".eEn") == std::string::npos)
    out += ".0";
  return out;
}

} // namespace

std::string quoteString(const std::string &text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\t':
      out += "\\t";
      break;
    case '\r':
      out += "\\r";
      break;
    case '\b':
      out += "\\b";
      break;
    case '\f':
      out += "\\f";
      break;
    default:
      if (static_cast<unsigned char>(c) < 0x20) {
        char escape[8];
        std::snprintf(escape, sizeof escape, "\\u%04x", unsigned(c));
        out += escape;
      } else {
        out += c;
      }
    }
  }
  return out + "\"";
}

Type typeOf(const StaticValue &value) {
  switch (value.index()) {
  case 0:
    return Type::scalar(TypeKind::Bool);
  case 1:
    return Type::scalar(TypeKind::Int);
  case 2:
    return Type::scalar(TypeKind::Float);
  case 3:
    return Type::scalar(TypeKind::String);
  case 4:
    return Type::scalar(TypeKind::Duration);
  default:
    return Type::scalar(TypeKind::Size);
  }
}

std::string formatStaticValue(const StaticValue &value) {
  if (auto *boolean = std::get_if<bool>(&value))
    return *boolean ? "true" : "false";
  if (auto *integer = std::get_if<int64_t>(&value))
    return std::to_string(*integer);
  if (auto *real = std::get_if<double>(&value))
    return formatFloat(*real);
  if (auto *text = std::get_if<std::string>(&value))
    return quoteString(*text);
  if (auto *duration = std::get_if<Duration>(&value))
    return formatDuration(duration->nanoseconds);
  return formatSize(std::get<ByteSize>(value).bytes);
}

} // namespace orch::plan
