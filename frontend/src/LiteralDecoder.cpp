// Decoding of string, number, duration and size literals.
#include "LiteralDecoder.h"

#include <array>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

namespace orch::frontend {
namespace {

std::string withoutUnderscores(std::string_view text) {
  std::string out;
  for (char c : text)
    if (c != '_')
      out += c;
  return out;
}

SourceLocation shifted(SourceLocation at, size_t offset, size_t length) {
  at.column += uint32_t(offset);
  at.length = uint32_t(length);
  return at;
}

void appendUtf8(std::string &out, uint32_t codePoint) {
  if (codePoint < 0x80) {
    out += char(codePoint);
  } else if (codePoint < 0x800) {
    out += char(0xC0 | (codePoint >> 6));
    out += char(0x80 | (codePoint & 0x3F));
  } else if (codePoint < 0x10000) {
    out += char(0xE0 | (codePoint >> 12));
    out += char(0x80 | ((codePoint >> 6) & 0x3F));
    out += char(0x80 | (codePoint & 0x3F));
  } else {
    out += char(0xF0 | (codePoint >> 18));
    out += char(0x80 | ((codePoint >> 12) & 0x3F));
    out += char(0x80 | ((codePoint >> 6) & 0x3F));
    out += char(0x80 | (codePoint & 0x3F));
  }
}

std::optional<uint32_t> hex4(std::string_view token, size_t at) {
  if (at + 4 > token.size())
    return std::nullopt;
  uint32_t value = 0;
  for (size_t i = at; i < at + 4; ++i) {
    char c = token[i];
    uint32_t digit;
    if (c >= '0' && c <= '9')
      digit = uint32_t(c - '0');
    else if (c >= 'a' && c <= 'f')
      digit = uint32_t(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F')
      digit = uint32_t(c - 'A' + 10);
    else
      return std::nullopt;
    value = value * 16 + digit;
  }
  return value;
}

/// Parses a non-negative decimal with an optional fraction; nullopt on overflow past 2^63.
std::optional<long double> decimalValue(std::string_view text) {
  std::string digits = withoutUnderscores(text);
  char *end = nullptr;
  long double value = std::strtold(digits.c_str(), &end);
  if (end == digits.c_str() || !std::isfinite(value))
    return std::nullopt;
  return value;
}

struct Unit {
  std::string_view suffix;
  int64_t scale;
};

std::optional<plan::StaticValue> scaledLiteral(std::string_view text, const Unit *units,
                                               size_t unitCount, const char *what,
                                               SourceLocation at, DiagnosticEngine &diags,
                                               bool isDuration) {
  size_t numberEnd = 0;
  while (numberEnd < text.size() && (std::isdigit(static_cast<unsigned char>(text[numberEnd])) ||
                                     text[numberEnd] == '_' || text[numberEnd] == '.'))
    ++numberEnd;
  std::string_view suffix = text.substr(numberEnd);
  for (size_t i = 0; i < unitCount; ++i) {
    if (units[i].suffix != suffix)
      continue;
    std::optional<long double> number = decimalValue(text.substr(0, numberEnd));
    long double scaled = number ? *number * (long double)units[i].scale : 0;
    if (!number || scaled >= (long double)std::numeric_limits<int64_t>::max()) {
      diags.error(at, std::string(what) + " literal '" + std::string(text) + "' is too large");
      return std::nullopt;
    }
    int64_t amount = int64_t(std::llround(scaled));
    if (isDuration)
      return plan::StaticValue(plan::Duration{amount});
    return plan::StaticValue(plan::ByteSize{amount});
  }
  diags.error(at, std::string("invalid ") + what + " unit in '" + std::string(text) + "'");
  return std::nullopt;
}

} // namespace

std::optional<plan::StaticValue> decodeStringLiteral(std::string_view token, SourceLocation at,
                                                     DiagnosticEngine &diags) {
  std::string out;
  bool ok = true;
  size_t end = token.size() >= 2 ? token.size() - 1 : token.size();
  for (size_t i = 1; i < end; ++i) {
    if (token[i] != '\\') {
      out += token[i];
      continue;
    }
    char escape = i + 1 < end ? token[i + 1] : '\0';
    switch (escape) {
    case '"':
    case '\\':
    case '/':
      out += escape;
      break;
    case 'b':
      out += '\b';
      break;
    case 'f':
      out += '\f';
      break;
    case 'n':
      out += '\n';
      break;
    case 'r':
      out += '\r';
      break;
    case 't':
      out += '\t';
      break;
    case 'u': {
      std::optional<uint32_t> unit = hex4(token.substr(0, end), i + 2);
      if (!unit) {
        diags.error(shifted(at, i, 2), "\\u must be followed by four hexadecimal digits");
        ok = false;
        break;
      }
      uint32_t codePoint = *unit;
      size_t consumed = 6;
      if (codePoint >= 0xD800 && codePoint <= 0xDBFF) {
        std::optional<uint32_t> low =
            token.substr(i + 6, 2) == "\\u" ? hex4(token.substr(0, end), i + 8) : std::nullopt;
        if (!low || *low < 0xDC00 || *low > 0xDFFF) {
          diags.error(shifted(at, i, 6), "unpaired UTF-16 surrogate in \\u escape");
          ok = false;
          break;
        }
        codePoint = 0x10000 + ((codePoint - 0xD800) << 10) + (*low - 0xDC00);
        consumed = 12;
      } else if (codePoint >= 0xDC00 && codePoint <= 0xDFFF) {
        diags.error(shifted(at, i, 6), "unpaired UTF-16 surrogate in \\u escape");
        ok = false;
        break;
      }
      appendUtf8(out, codePoint);
      i += consumed - 2;
      break;
    }
    default:
      diags.error(shifted(at, i, 2), "invalid escape sequence '\\" +
                                         std::string(1, escape ? escape : ' ') + "' in string");
      ok = false;
    }
    ++i;
  }
  if (!ok)
    return std::nullopt;
  return plan::StaticValue(std::move(out));
}

std::optional<plan::StaticValue> decodeIntLiteral(std::string_view digits, bool negative,
                                                  SourceLocation at, DiagnosticEngine &diags) {
  std::string text = withoutUnderscores(digits);
  uint64_t magnitude = 0;
  const uint64_t limit = negative ? uint64_t(std::numeric_limits<int64_t>::max()) + 1
                                  : uint64_t(std::numeric_limits<int64_t>::max());
  for (char c : text) {
    uint64_t digit = uint64_t(c - '0');
    if (magnitude > (limit - digit) / 10) {
      diags.error(at, "integer literal '" + std::string(negative ? "-" : "") + std::string(digits) +
                          "' does not fit in 64 bits");
      return std::nullopt;
    }
    magnitude = magnitude * 10 + digit;
  }
  int64_t value = negative ? int64_t(0 - magnitude) : int64_t(magnitude);
  return plan::StaticValue(value);
}

std::optional<plan::StaticValue> decodeFloatLiteral(std::string_view text, bool negative,
                                                    SourceLocation at, DiagnosticEngine &diags) {
  std::string digits = withoutUnderscores(text);
  char *end = nullptr;
  double value = std::strtod(digits.c_str(), &end);
  if (!std::isfinite(value)) {
    diags.error(at, "float literal '" + std::string(text) + "' is out of range");
    return std::nullopt;
  }
  return plan::StaticValue(negative ? -value : value);
}

std::optional<plan::StaticValue> decodeDurationLiteral(std::string_view text, SourceLocation at,
                                                       DiagnosticEngine &diags) {
  static constexpr std::array<Unit, 4> units = {
      {{"ms", 1'000'000}, {"s", 1'000'000'000}, {"m", 60'000'000'000}, {"h", 3600'000'000'000}}};
  return scaledLiteral(text, units.data(), units.size(), "duration", at, diags, true);
}

std::optional<plan::StaticValue> decodeSizeLiteral(std::string_view text, SourceLocation at,
                                                   DiagnosticEngine &diags) {
  static constexpr std::array<Unit, 9> units = {{{"B", 1},
                                                 {"KB", 1'000},
                                                 {"MB", 1'000'000},
                                                 {"GB", 1'000'000'000},
                                                 {"TB", 1'000'000'000'000},
                                                 {"KiB", int64_t(1) << 10},
                                                 {"MiB", int64_t(1) << 20},
                                                 {"GiB", int64_t(1) << 30},
                                                 {"TiB", int64_t(1) << 40}}};
  return scaledLiteral(text, units.data(), units.size(), "size", at, diags, false);
}

} // namespace orch::frontend
