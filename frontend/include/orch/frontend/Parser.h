// Entry points of the .orch frontend: load a source file and parse it, reporting every
// problem through the DiagnosticEngine.
#pragma once

#include "orch/frontend/Ast.h"
#include "orch/ir/Diagnostics.h"

#include <memory>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace llvm {
class SourceMgr;
}

namespace orch::frontend {

/// Reads `path` into `sources`; returns its buffer id, or reports why it could not be read.
std::optional<uint32_t> loadSourceFile(llvm::SourceMgr &sources, const std::string &path,
                                       DiagnosticEngine &diags);

struct ParseResult {
  /// The AST; present even after syntax errors (with ErrorExpr where the parser recovered),
  /// absent only when the input could not be read as text at all.
  std::unique_ptr<ast::File> file;
  /// No syntax or literal error was reported.
  bool ok = false;
};

/// Parses one buffer, reporting as many errors as the parser can recover from, in source
/// order. Never throws.
ParseResult parseFile(llvm::SourceMgr &sources, uint32_t bufferId, DiagnosticEngine &diags);

/// The language's keywords, from the grammar's lexer ("pipeline", "param", ..., "else"), in
/// the grammar's order: what an editor completes and highlights.
std::vector<std::string> languageKeywords();

} // namespace orch::frontend
