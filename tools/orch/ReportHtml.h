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

/// `text` escaped, with places a narrow column may break it: before '@' and after '.', '/' and
/// '_' ("test.identity@sink0" as "test.identity" and "@sink0").
inline std::string breakable(const std::string &text) {
  std::string out;
  for (char c : text) {
    const std::string one(1, c);
    out += c == '@' ? "<wbr>" + escape(one) : escape(one);
    if (c == '.' || c == '/' || c == '_')
      out += "<wbr>";
  }
  return out;
}

inline std::string number(double value, int decimals = 2) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

/// "1.2 MiB", "340.0 KiB", "17 B": binary units, as the summary and --value-budget use them.
inline std::string bytes(double count) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (count >= 1024 && unit < 4) {
    count /= 1024;
    ++unit;
  }
  return number(count, unit == 0 ? 0 : 1) + " " + units[unit];
}

/// An SVG drawing of `width` x `height` units that shrinks with a narrow page (it never makes
/// the page scroll sideways) and keeps its proportions.
inline std::string svgStart(int width, int height, int fontSize) {
  return "<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 " + std::to_string(width) + " " +
         std::to_string(height) + "' width='" + std::to_string(width) + "' height='" +
         std::to_string(height) +
         "' style='max-width:100%;height:auto' font-family='sans-serif' font-size='" +
         std::to_string(fontSize) + "'>";
}

/// About how wide `text` is in an SVG drawing at `fontSize` (sans-serif averages a little over
/// half the size per character): enough to keep labels apart.
inline int textWidth(const std::string &text, int fontSize) {
  return int(double(text.size()) * fontSize * 0.62) + 1;
}

/// `text` escaped for an SVG label at most `width` wide: cut with "…" when longer, the whole
/// text then in a tooltip (a <title> inside the label).
inline std::string fitted(const std::string &text, int width, int fontSize) {
  if (textWidth(text, fontSize) <= width)
    return escape(text);
  size_t keep = text.size();
  while (keep > 1 && textWidth(text.substr(0, keep), fontSize) + fontSize > width)
    --keep;
  // Not inside a UTF-8 sequence.
  while (keep > 1 && (static_cast<unsigned char>(text[keep]) & 0xC0) == 0x80)
    --keep;
  return escape(text.substr(0, keep)) + "\u2026<title>" + escape(text) + "</title>";
}

/// A value of a metrics file that older versions may lack.
template <typename T> T field(const Json &object, const char *name, T fallback) {
  auto found = object.find(name);
  return found == object.end() || found->is_null() ? fallback : found->get<T>();
}

} // namespace orch::report
