// Entry points of the .orch frontend: load a source file and parse it, reporting every
// problem through the DiagnosticEngine.
#pragma once

#include "orch/ir/Diagnostics.h"

#include <cstdint>
#include <optional>
#include <string>

namespace llvm {
class SourceMgr;
}

namespace orch {

/// Reads `path` into `sources`; returns its buffer id, or reports why it could not be read.
std::optional<uint32_t> loadSourceFile(llvm::SourceMgr &sources, const std::string &path,
                                       DiagnosticEngine &diags);

/// Parses one buffer; returns false when a syntax error was reported. Reports as many errors
/// as the parser can recover from; never throws.
bool parseFile(llvm::SourceMgr &sources, uint32_t bufferId, DiagnosticEngine &diags);

} // namespace orch
