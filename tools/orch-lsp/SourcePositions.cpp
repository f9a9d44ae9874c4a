// UTF-8 bytes to UTF-16 code units and back, line by line.
#include "SourcePositions.h"

#include <algorithm>

namespace orch::lsp {
namespace {

/// Bytes in the UTF-8 sequence that starts with `lead`.
size_t sequenceLength(unsigned char lead) {
  if (lead < 0x80)
    return 1;
  if ((lead >> 5) == 0x6)
    return 2;
  if ((lead >> 4) == 0xE)
    return 3;
  if ((lead >> 3) == 0x1E)
    return 4;
  return 1;
}

} // namespace

SourcePositions::SourcePositions(std::string_view text) : text_(text) {
  lineStarts_.push_back(0);
  for (size_t i = 0; i < text.size(); ++i)
    if (text[i] == '\n')
      lineStarts_.push_back(i + 1);
}

std::string_view SourcePositions::lineText(uint32_t line) const {
  if (line >= lineStarts_.size())
    return {};
  const size_t start = lineStarts_[line];
  size_t end = line + 1 < lineStarts_.size() ? lineStarts_[line + 1] - 1 : text_.size();
  if (end > start && text_[end - 1] == '\r')
    --end;
  return text_.substr(start, end - start);
}

Position SourcePositions::toLsp(uint32_t line, uint32_t column) const {
  if (line == 0)
    return {};
  const std::string_view text = lineText(line - 1);
  const size_t bytes = std::min<size_t>(column > 0 ? column - 1 : 0, text.size());
  uint32_t units = 0;
  for (size_t i = 0; i < bytes;) {
    const size_t length = sequenceLength(static_cast<unsigned char>(text[i]));
    units += length == 4 ? 2 : 1;
    i += length;
  }
  return Position{line - 1, units};
}

Range SourcePositions::range(const SourceLocation &location) const {
  return Range{toLsp(location.line, location.column),
               toLsp(location.line, location.column + std::max<uint32_t>(location.length, 1))};
}

uint32_t SourcePositions::byteColumn(const Position &position) const {
  const std::string_view text = lineText(position.line);
  size_t i = 0;
  for (uint32_t units = 0; i < text.size() && units < position.character;) {
    const size_t length = sequenceLength(static_cast<unsigned char>(text[i]));
    units += length == 4 ? 2 : 1;
    i += length;
  }
  return uint32_t(std::min(i, text.size()) + 1);
}

size_t SourcePositions::offset(const Position &position) const {
  if (position.line >= lineStarts_.size())
    return text_.size();
  return lineStarts_[position.line] + byteColumn(position) - 1;
}

Position SourcePositions::end() const {
  const uint32_t last = uint32_t(lineStarts_.size() - 1);
  return toLsp(last + 1, uint32_t(lineText(last).size() + 1));
}

} // namespace orch::lsp
