// What hovering over an occurrence shows (Markdown), and where "go to definition" leads.
#pragma once

#include "DocumentIndex.h"

#include <optional>
#include <string>

namespace orch::lsp {

std::optional<std::string> hoverMarkdown(const DocumentIndex &index, const Reference &reference,
                                         const plan::OperatorCatalog &catalog);

/// Where the value, Call or domain of `reference` is declared; nullopt for operators, options
/// and arguments (they are declared by the operator library).
std::optional<SourceLocation> definitionOf(const DocumentIndex &index, const Reference &reference);

} // namespace orch::lsp
