// Text measures shared by operators and expressions (TextMeasures.h).
#include "orch/runtime/values/TextMeasures.h"

#include <algorithm>

namespace orch::runtime {

size_t countCodePoints(std::string_view text) {
  return size_t(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

bool hasNonBlank(std::string_view text) {
  return std::any_of(text.begin(), text.end(), [](char c) {
    return !(c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v');
  });
}

} // namespace orch::runtime
