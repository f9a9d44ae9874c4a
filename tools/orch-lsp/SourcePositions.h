// Converts between Orch source locations (1-based lines, 1-based byte columns) and LSP
// positions (0-based lines, 0-based UTF-16 code units).
#pragma once

#include "orch/ir/SourceLocation.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace orch::lsp {

struct Position {
  uint32_t line = 0;
  uint32_t character = 0;
  friend bool operator==(const Position &, const Position &) = default;
};

struct Range {
  Position start;
  Position end;
};

class SourcePositions {
public:
  explicit SourcePositions(std::string_view text);

  /// The LSP position of byte column `column` (1-based) on line `line` (1-based).
  Position toLsp(uint32_t line, uint32_t column) const;
  /// The range a location covers (its length counted in bytes).
  Range range(const SourceLocation &location) const;
  /// The 1-based byte column of an LSP position on its line (clamped to the line's end).
  uint32_t byteColumn(const Position &position) const;
  /// The byte offset of an LSP position in the text.
  size_t offset(const Position &position) const;
  /// The position just past the last character.
  Position end() const;

private:
  std::string_view lineText(uint32_t zeroBasedLine) const;

  std::string_view text_;
  std::vector<size_t> lineStarts_;
};

} // namespace orch::lsp
