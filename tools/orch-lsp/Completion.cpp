// Completion: the context comes from the text before the cursor (the innermost open bracket
// and the dotted name being typed), the candidates from the catalog and the document index.
#include "Completion.h"

#include "orch/frontend/Parser.h"
#include "orch/frontend/Sema.h"
#include "orch/plan/CallOptions.h"
#include "orch/plan/Plan.h"

#include <cctype>
#include <set>

namespace orch::lsp {
namespace {

bool isNameCharacter(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
}

/// Whether the cursor is inside a Call's option block: the innermost unclosed bracket is a
/// `{` written right after a `)`. Strings and comments are skipped.
bool insideOptionBlock(std::string_view text) {
  std::vector<size_t> open;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"') {
      for (++i; i < text.size() && text[i] != '"' && text[i] != '\n'; ++i)
        if (text[i] == '\\')
          ++i;
    } else if (c == '/' && i + 1 < text.size() && text[i + 1] == '/') {
      while (i < text.size() && text[i] != '\n')
        ++i;
    } else if (c == '/' && i + 1 < text.size() && text[i + 1] == '*') {
      const size_t end = text.find("*/", i + 2);
      i = end == std::string_view::npos ? text.size() : end + 1;
    } else if (c == '(' || c == '{' || c == '<') {
      open.push_back(i);
    } else if ((c == ')' || c == '}' || c == '>') && !open.empty()) {
      open.pop_back();
    } else if (c == ';') {
      open.clear();
    }
  }
  if (open.empty() || text[open.back()] != '{')
    return false;
  size_t before = open.back();
  while (before > 0 && std::isspace(static_cast<unsigned char>(text[before - 1])))
    --before;
  if (before == 0 || text[before - 1] != ')')
    return false;
  // In a key position: nothing but a name since the last `{` or `,`.
  const size_t separator = text.find_last_of("{,:");
  return text[separator] != ':';
}

bool startsWith(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

} // namespace

CompletionResult completeAt(std::string_view text, const DocumentIndex &index,
                            const plan::OperatorCatalog &catalog) {
  CompletionResult result;
  size_t start = text.size();
  while (start > 0 && isNameCharacter(text[start - 1]))
    --start;
  result.prefix = std::string(text.substr(start));
  auto add = [&](std::string label, CompletionKind kind, std::string detail, std::string doc) {
    if (startsWith(label, result.prefix))
      result.candidates.push_back(
          CompletionCandidate{std::move(label), kind, std::move(detail), std::move(doc)});
  };

  if (insideOptionBlock(text)) {
    for (const plan::CallOptionSpec &spec : plan::callOptionSpecs())
      add(std::string(spec.name), CompletionKind::Option, plan::Type::scalar(spec.type).str(),
          std::string(spec.doc));
    return result;
  }

  std::set<std::string> seen;
  for (const plan::OperatorSignature &op : catalog.all())
    if (seen.insert(op.name).second)
      add(op.name, CompletionKind::Operator, plan::signatureText(op), op.doc);
  if (result.prefix.find('.') != std::string::npos)
    return result;
  for (const auto &[call, op] : index.callOperators)
    add(call, CompletionKind::Call, "call = " + op, "");
  for (const Symbol &symbol : index.symbols)
    if (symbol.kind == SymbolKind::Param || symbol.kind == SymbolKind::Source ||
        symbol.kind == SymbolKind::Binding) {
      auto type = index.valueTypes.find(symbol.name);
      add(symbol.name, CompletionKind::Value,
          type == index.valueTypes.end() ? std::string() : type->second, "");
    }
  // From the grammar, Builtins.cpp and the plan: a keyword or builtin added there is offered.
  for (const std::string &keyword : frontend::languageKeywords())
    add(keyword, CompletionKind::Keyword, "", "");
  for (const std::string &builtin : frontend::builtinFunctionNames())
    add(builtin, CompletionKind::Keyword, "builtin function", "");
  for (const char *runner : plan::kOperatorRunners)
    add(runner, CompletionKind::Keyword, "operator runner", "");
  return result;
}

} // namespace orch::lsp
