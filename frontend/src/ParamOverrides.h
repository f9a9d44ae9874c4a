// `--set NAME=VALUE`: parsing the assignment, converting the text to the param's declared type,
// and reporting overrides of params the pipeline does not have. Private to the type checker.
#pragma once

#include "orch/frontend/Ast.h"
#include "orch/frontend/Sema.h"

#include <optional>
#include <string>
#include <unordered_map>

namespace orch::frontend {

/// `text` as a value of `type` (the param's declared type); nullopt after an error that points
/// at the param's declaration.
std::optional<plan::StaticValue> parseOverrideValue(const ast::ParamDecl &param,
                                                    const plan::Type &type, const std::string &text,
                                                    DiagnosticEngine &diags);

/// An error for each override that names no param of `file`, with the closest param name.
void reportOverridesOfUnknownParams(const ast::File &file,
                                    const std::unordered_map<std::string, std::string> &overrides,
                                    DiagnosticEngine &diags);

} // namespace orch::frontend
