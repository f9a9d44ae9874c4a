// The canonical layout of .orch source (`orchc fmt`, the language server's formatting):
// one statement per line, fixed spacing, lists broken one item per line only when a line
// would pass kFormatLineWidth, at most one blank line between statements, trailing comments of
// consecutive one-line statements aligned. Comments are kept where they were;
// only whitespace (and trailing commas) change, so the plan is the same.
#pragma once

#include "orch/ir/Diagnostics.h"

#include <cstdint>
#include <optional>
#include <string>

namespace llvm {
class SourceMgr;
}

namespace orch::format {

inline constexpr unsigned kFormatLineWidth = 100;

/// The formatted text of the buffer, or nullopt when it has syntax errors (reported through
/// `diags`): a file that does not parse is never rewritten.
std::optional<std::string> formatSource(llvm::SourceMgr &sources, uint32_t bufferId,
                                        DiagnosticEngine &diags);

} // namespace orch::format
