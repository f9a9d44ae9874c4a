// A stable, readable dump of the AST with types and locations (`orchc --emit=ast`).
#pragma once

#include "orch/frontend/Ast.h"

namespace llvm {
class raw_ostream;
}

namespace orch::frontend {

void printAst(const ast::File &file, llvm::raw_ostream &out);

} // namespace orch::frontend
