// validUtf8 (Utf8.h): one pass, copying well-formed sequences as they are.
#include "orch/runtime/values/Utf8.h"

#include <cstdint>

namespace orch::runtime {
namespace {

/// The length of the well-formed sequence at `at`, or 0.
size_t sequenceLength(std::string_view text, size_t at) {
  const auto byte = [&](size_t i) { return uint8_t(text[i]); };
  const uint8_t first = byte(at);
  if (first < 0x80)
    return 1;
  size_t length;
  uint8_t low = 0x80, high = 0xBF;
  if (first >= 0xC2 && first <= 0xDF) {
    length = 2;
  } else if (first >= 0xE0 && first <= 0xEF) {
    length = 3;
    if (first == 0xE0)
      low = 0xA0; // no overlong forms
    if (first == 0xED)
      high = 0x9F; // no surrogates
  } else if (first >= 0xF0 && first <= 0xF4) {
    length = 4;
    if (first == 0xF0)
      low = 0x90;
    if (first == 0xF4)
      high = 0x8F; // nothing above U+10FFFF
  } else {
    return 0;
  }
  if (at + length > text.size())
    return 0;
  if (byte(at + 1) < low || byte(at + 1) > high)
    return 0;
  for (size_t i = 2; i < length; ++i)
    if (byte(at + i) < 0x80 || byte(at + i) > 0xBF)
      return 0;
  return length;
}

} // namespace

std::string validUtf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t at = 0; at < text.size();) {
    if (const size_t length = sequenceLength(text, at)) {
      out.append(text.substr(at, length));
      at += length;
    } else {
      out += "\xEF\xBF\xBD";
      ++at;
    }
  }
  return out;
}

} // namespace orch::runtime
