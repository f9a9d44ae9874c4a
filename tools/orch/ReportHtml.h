// Small helpers the report's sections share: HTML escaping, number formatting, the palette.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdio>
#include <string>

namespace orch::report {

using Json = nlohmann::json;

inline const char *paletteColor(size_t index) {
  static const char *palette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                  "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
  return palette[index % 10];
}

inline std::string escape(const std::string &text) {
  std::string out;
  for (char c : text) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    case '\'':
      out += "&#39;";
      break;
    default:
      out += c;
    }
  }
  return out;
}

inline std::string number(double value, int decimals = 2) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

/// "1.2 MB", "340 kB", "17 B".
inline std::string bytes(double count) {
  const char *units[] = {"B", "kB", "MB", "GB", "TB"};
  int unit = 0;
  while (count >= 1000 && unit < 4) {
    count /= 1000;
    ++unit;
  }
  return number(count, unit == 0 ? 0 : 1) + " " + units[unit];
}

/// A value of a metrics file that older versions may lack.
template <typename T> T field(const Json &object, const char *name, T fallback) {
  auto found = object.find(name);
  return found == object.end() || found->is_null() ? fallback : found->get<T>();
}

} // namespace orch::report
