// What the language server knows about one open document: the compiler's diagnostics, the
// names it declares, and every place a name, operator, domain or option is written. Built by
// running the real frontend and checking passes on the text; a file with errors still yields
// what its partial AST holds.
#pragma once

#include "orch/ir/Diagnostics.h"
#include "orch/plan/OperatorCatalog.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace orch::lsp {

enum class SymbolKind { Pipeline, Param, Source, Call, Binding, Sink, Domain };

struct Symbol {
  std::string name;
  SymbolKind kind = SymbolKind::Binding;
  /// The name where it is declared.
  SourceLocation nameLocation;
  /// The whole statement (its first line).
  SourceLocation statementLocation;
  /// A short description: an operator for sources, Calls and sinks.
  std::string detail;
};

enum class ReferenceKind { Value, Call, Operator, Domain, Option, Argument };

/// One written occurrence of something the editor can explain or jump from. Declarations
/// are occurrences too.
struct Reference {
  ReferenceKind kind = ReferenceKind::Value;
  std::string name;
  SourceLocation location;
  /// For arguments: the operator whose parameter it names.
  std::string operatorName;
};

struct DocumentIndex {
  std::vector<Diagnostic> diagnostics;
  std::vector<Symbol> symbols;
  std::vector<Reference> references;
  /// Declared Call name -> its operator.
  std::map<std::string, std::string> callOperators;
  /// Value name -> its type in its domain (`Page<Text>`), when type checking got that far.
  std::map<std::string, std::string> valueTypes;
  /// Domain -> the domain it is nested in ("" for a root), after domain inference.
  std::map<std::string, std::string> domainParents;
  /// The whole compiler accepted the file.
  bool compiled = false;
  /// The operators the document can use: the standard library's and its own declarations.
  std::shared_ptr<const plan::OperatorCatalog> catalog;

  const Symbol *findSymbol(const std::string &name, std::initializer_list<SymbolKind> kinds) const;
  /// The occurrence covering 1-based `line` and byte `column`, if any.
  const Reference *referenceAt(uint32_t line, uint32_t column) const;
};

DocumentIndex indexDocument(const std::string &text, const std::string &path,
                            const plan::OperatorCatalog &catalog = plan::standardCatalog());

} // namespace orch::lsp
