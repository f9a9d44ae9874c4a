// Where a piece of .orch source came from: the buffer it lives in, 1-based line and column,
// and how many characters it spans. Every AST node and IR operation carries one.
#pragma once

#include <cstdint>

namespace orch {

struct SourceLocation {
  /// The llvm::SourceMgr buffer id (1-based); 0 means "no location".
  uint32_t bufferId = 0;
  uint32_t line = 0;
  uint32_t column = 0;
  uint32_t length = 0;

  bool isKnown() const { return bufferId != 0; }
  friend bool operator==(const SourceLocation &, const SourceLocation &) = default;
};

} // namespace orch
