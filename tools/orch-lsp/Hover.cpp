// Hover texts: a value's type in its domain; an operator's signature, doc and options; a Call's
// operator; a domain's place in the tree; an option's or a parameter's meaning.
#include "Hover.h"

#include "orch/plan/CallOptions.h"

namespace orch::lsp {
namespace {

std::string codeBlock(const std::string &code) { return "```orch\n" + code + "\n```\n"; }

const plan::OperatorSignature *findOperator(const plan::OperatorCatalog &catalog,
                                            const std::string &name) {
  for (plan::OperatorKind kind :
       {plan::OperatorKind::Transform, plan::OperatorKind::Source, plan::OperatorKind::Sink})
    if (const plan::OperatorSignature *op = catalog.find(kind, name))
      return op;
  return nullptr;
}

std::string operatorMarkdown(const plan::OperatorSignature &op) {
  std::string text = codeBlock(plan::signatureText(op));
  text += "\n*" + std::string(plan::operatorKindName(op.kind)) + "*";
  if (!op.doc.empty())
    text += ": " + op.doc + ".";
  if (op.gpu)
    text += " Runs on a GPU with `gpus: …` when one is present, on the CPU otherwise.";
  if (!op.options.empty()) {
    text += "\n\nCall options:";
    for (const std::string &option : op.options)
      text += " `" + option + "`";
  }
  if (!op.failures.empty())
    text += "\n\nFails: " + op.failures;
  return text;
}

std::string valueMarkdown(const DocumentIndex &index, const Reference &reference) {
  const Symbol *symbol = index.findSymbol(
      reference.name, {SymbolKind::Param, SymbolKind::Source, SymbolKind::Binding});
  auto type = index.valueTypes.find(reference.name);
  std::string code = reference.name;
  if (type != index.valueTypes.end())
    code += ": " + type->second;
  std::string what = "value";
  if (symbol && symbol->kind == SymbolKind::Param)
    what = "param (a constant; override with `--set " + reference.name + "=…`)";
  else if (symbol && symbol->kind == SymbolKind::Source)
    what = "source, read by `" + symbol->detail + "`";
  else if (symbol)
    what = "binding";
  std::string text = codeBlock(code) + "\n" + what;
  if (type != index.valueTypes.end()) {
    const size_t angle = type->second.find('<');
    if (angle != std::string::npos && index.domainParents.count(type->second.substr(0, angle)))
      text += ", one per entity of domain `" + type->second.substr(0, angle) + "`";
  }
  if (!symbol)
    text += "\n\n(not declared in this file)";
  return text;
}

std::string domainMarkdown(const DocumentIndex &index, const Reference &reference) {
  std::string text = codeBlock("domain " + reference.name);
  auto parent = index.domainParents.find(reference.name);
  if (parent != index.domainParents.end())
    text += parent->second.empty() ? "\nroot domain: one entity per source row"
                                   : "\nnested in `" + parent->second +
                                         "`: one entity per element its expand produces";
  else if (const Symbol *symbol = index.findSymbol(reference.name, {SymbolKind::Domain}))
    text += "\n" + symbol->detail;
  return text;
}

} // namespace

std::optional<std::string> hoverMarkdown(const DocumentIndex &index, const Reference &reference,
                                         const plan::OperatorCatalog &catalog) {
  switch (reference.kind) {
  case ReferenceKind::Value:
    return valueMarkdown(index, reference);
  case ReferenceKind::Domain:
    return domainMarkdown(index, reference);
  case ReferenceKind::Operator: {
    const plan::OperatorSignature *op = findOperator(catalog, reference.name);
    if (!op)
      return codeBlock(reference.name) + "\nunknown operator (see `orch operators`)";
    return operatorMarkdown(*op);
  }
  case ReferenceKind::Call: {
    auto op = index.callOperators.find(reference.name);
    if (op == index.callOperators.end())
      return std::nullopt;
    std::string text = codeBlock("call " + reference.name + " = " + op->second) +
                       "\na declared Call: one configuration of `" + op->second + "`\n\n---\n";
    if (const plan::OperatorSignature *signature = findOperator(catalog, op->second))
      text += operatorMarkdown(*signature);
    return text;
  }
  case ReferenceKind::Option: {
    const plan::CallOptionSpec *spec = plan::findCallOption(reference.name);
    if (!spec)
      return codeBlock(reference.name) + "\nunknown Call option";
    return codeBlock(reference.name + ": " + plan::Type::scalar(spec->type).str()) +
           "\nCall option: " + std::string(spec->doc);
  }
  case ReferenceKind::Argument: {
    const plan::OperatorSignature *op = findOperator(catalog, reference.operatorName);
    const plan::OperatorParam *param = op ? op->param(reference.name) : nullptr;
    if (!param)
      return std::nullopt;
    std::string code = reference.name + ": " + param->type.str();
    if (param->defaultValue)
      code += " = " + plan::formatStaticValue(*param->defaultValue);
    return codeBlock(code) + "\n" + (param->role == plan::ParamRole::Input ? "input" : "constant") +
           " of `" + op->name + "`" + (param->doc.empty() ? "" : ": " + param->doc);
  }
  }
  return std::nullopt;
}

std::optional<SourceLocation> definitionOf(const DocumentIndex &index, const Reference &reference) {
  const Symbol *symbol = nullptr;
  if (reference.kind == ReferenceKind::Value)
    symbol = index.findSymbol(reference.name,
                              {SymbolKind::Param, SymbolKind::Source, SymbolKind::Binding});
  else if (reference.kind == ReferenceKind::Call)
    symbol = index.findSymbol(reference.name, {SymbolKind::Call});
  else if (reference.kind == ReferenceKind::Domain)
    symbol = index.findSymbol(reference.name, {SymbolKind::Domain});
  if (!symbol)
    return std::nullopt;
  return symbol->nameLocation;
}

} // namespace orch::lsp
