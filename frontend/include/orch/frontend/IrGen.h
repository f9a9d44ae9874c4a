// Lowers a checked AST (runFrontend succeeded) to the domain IR. Domains of values are left
// for the domain inference pass; everything else (types, Calls, constants, options, names,
// locations) is carried over.
#pragma once

#include "orch/frontend/Ast.h"
#include "orch/ir/Module.h"

#include <string>

namespace orch::frontend {

ir::Module generateIr(const ast::File &file, const std::string &sourcePath);

} // namespace orch::frontend
