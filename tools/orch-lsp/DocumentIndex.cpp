// Runs the compiler on a document (frontend, IR generation, checking passes) collecting its
// diagnostics, then walks the AST for declarations and occurrences.
#include "DocumentIndex.h"

#include "orch/driver/CompileDriver.h"

#include "llvm/Support/SourceMgr.h"

#include <functional>
#include <set>

namespace orch::lsp {
namespace {

bool covers(const SourceLocation &location, uint32_t line, uint32_t column) {
  return location.isKnown() && location.line == line && column >= location.column &&
         column < location.column + std::max<uint32_t>(location.length, 1);
}

class AstIndexer {
public:
  explicit AstIndexer(DocumentIndex &index) : index_(index) {}

  void index(ast::File &file) {
    index_.symbols.push_back(Symbol{file.pipelineName.name, SymbolKind::Pipeline,
                                    file.pipelineName.location, file.pipelineName.location, ""});
    for (auto &statement : file.statements)
      if (auto *call = std::get_if<ast::CallDecl>(&statement->node))
        index_.callOperators[call->name.name] = call->use.op.text;
    for (auto &statement : file.statements)
      declare(*statement);
    for (auto &statement : file.statements) {
      ast::forEachExpr(*statement, [&](ast::Expr &expr) { visit(expr); });
      if (auto *param = std::get_if<ast::ParamDecl>(&statement->node))
        typeExpr(param->type);
      else if (auto *binding = std::get_if<ast::BindingDecl>(&statement->node);
               binding && binding->type)
        typeExpr(*binding->type);
    }
  }

private:
  void symbol(const ast::Identifier &name, SymbolKind kind, const ast::Statement &statement,
              std::string detail, ReferenceKind reference) {
    index_.symbols.push_back(
        Symbol{name.name, kind, name.location, statement.location, std::move(detail)});
    index_.references.push_back(Reference{reference, name.name, name.location, ""});
  }

  void declareDomain(const ast::Identifier &domain, const ast::Statement &statement,
                     const std::string &detail) {
    if (domainsSeen_.insert(domain.name).second)
      index_.symbols.push_back(
          Symbol{domain.name, SymbolKind::Domain, domain.location, statement.location, detail});
    index_.references.push_back(Reference{ReferenceKind::Domain, domain.name, domain.location, ""});
  }

  /// The operator name (or, in an invocation, a declared Call's name) of `use`, and its
  /// argument names and option keys. Only invocations can name a Call: a `call` declaration,
  /// a source or a sink names an operator.
  void operatorUse(const ast::OperatorUse &use, bool isInvocation) {
    const bool isCall = isInvocation && index_.callOperators.count(use.op.text);
    index_.references.push_back(Reference{isCall ? ReferenceKind::Call : ReferenceKind::Operator,
                                          use.op.text, use.op.location, ""});
    std::string op = use.signature ? use.signature->name : use.op.text;
    if (isCall && !use.signature)
      op = index_.callOperators[use.op.text];
    for (const ast::Argument &argument : use.arguments)
      if (argument.name)
        index_.references.push_back(
            Reference{ReferenceKind::Argument, argument.name->name, argument.name->location, op});
    for (const ast::Option &option : use.options)
      index_.references.push_back(
          Reference{ReferenceKind::Option, option.name.name, option.name.location, op});
  }

  void declare(ast::Statement &statement) {
    std::visit(
        [&](auto &node) {
          using Node = std::decay_t<decltype(node)>;
          if constexpr (std::is_same_v<Node, ast::ParamDecl>) {
            symbol(node.name, SymbolKind::Param, statement, "param", ReferenceKind::Value);
          } else if constexpr (std::is_same_v<Node, ast::SourceDecl>) {
            symbol(node.name, SymbolKind::Source, statement, node.use.op.text,
                   ReferenceKind::Value);
            operatorUse(node.use, false);
            if (node.domain)
              declareDomain(*node.domain, statement, "root domain of source " + node.name.name);
            else if (domainsSeen_.insert(node.name.name).second)
              index_.symbols.push_back(Symbol{node.name.name, SymbolKind::Domain,
                                              node.name.location, statement.location,
                                              "root domain of source " + node.name.name});
          } else if constexpr (std::is_same_v<Node, ast::CallDecl>) {
            symbol(node.name, SymbolKind::Call, statement, node.use.op.text, ReferenceKind::Call);
            operatorUse(node.use, false);
          } else if constexpr (std::is_same_v<Node, ast::SinkDecl>) {
            index_.symbols.push_back(Symbol{"sink " + node.use.op.text, SymbolKind::Sink,
                                            node.use.op.location, statement.location,
                                            node.use.op.text});
            operatorUse(node.use, false);
          } else if constexpr (std::is_same_v<Node, ast::BindingDecl>) {
            symbol(node.name, SymbolKind::Binding, statement, "", ReferenceKind::Value);
          } else if constexpr (std::is_same_v<Node, ast::OperatorDecl>) {
            index_.references.push_back(
                Reference{ReferenceKind::Operator, node.name.text, node.name.location, ""});
          }
        },
        statement.node);
    // Domains opened by expands, in source order.
    ast::forEachExpr(statement, [&](ast::Expr &expr) { findExpands(expr, statement); });
  }

  void findExpands(ast::Expr &expr, const ast::Statement &statement) {
    if (auto *expand = std::get_if<ast::Expand>(&expr.node))
      if (domainsSeen_.insert(expand->domain.name).second)
        index_.symbols.push_back(Symbol{expand->domain.name, SymbolKind::Domain,
                                        expand->domain.location, statement.location,
                                        "domain opened by expand"});
    ast::forEachChild(expr, [&](ast::Expr &child) { findExpands(child, statement); });
  }

  void visit(ast::Expr &expr) {
    if (auto *name = std::get_if<ast::NameRef>(&expr.node)) {
      index_.references.push_back(
          Reference{ReferenceKind::Value, name->name.name, name->name.location, ""});
    } else if (auto *invoke = std::get_if<ast::Invoke>(&expr.node)) {
      operatorUse(invoke->use, true);
    } else if (auto *expand = std::get_if<ast::Expand>(&expr.node)) {
      index_.references.push_back(
          Reference{ReferenceKind::Domain, expand->domain.name, expand->domain.location, ""});
    }
    ast::forEachChild(expr, [&](ast::Expr &child) { visit(child); });
  }

  void typeExpr(const ast::TypeExpr &type) {
    if (!type.isRecord && domainsSeen_.count(type.name.name))
      index_.references.push_back(
          Reference{ReferenceKind::Domain, type.name.name, type.name.location, ""});
    for (const ast::TypeExpr &argument : type.arguments)
      typeExpr(argument);
    for (const ast::TypeField &field : type.fields)
      if (field.type)
        typeExpr(*field.type);
  }

  DocumentIndex &index_;
  std::set<std::string> domainsSeen_;
};

/// Types and domains from the IR after the checking passes.
void recordTypes(const ir::Module &module, DocumentIndex &index) {
  for (const ir::Domain &domain : module.domains)
    index.domainParents[domain.name] =
        domain.parent == ir::kNoDomain ? "" : module.domains[domain.parent].name;
  for (const ir::Operation &op : module.ops)
    if (!op.name.empty())
      index.valueTypes[op.name] = op.domain == ir::kNoDomain
                                      ? op.type.str()
                                      : module.domainName(op.domain) + "<" + op.type.str() + ">";
}

} // namespace

const Symbol *DocumentIndex::findSymbol(const std::string &name,
                                        std::initializer_list<SymbolKind> kinds) const {
  for (const Symbol &symbol : symbols)
    if (symbol.name == name && std::find(kinds.begin(), kinds.end(), symbol.kind) != kinds.end())
      return &symbol;
  return nullptr;
}

const Reference *DocumentIndex::referenceAt(uint32_t line, uint32_t column) const {
  for (const Reference &reference : references)
    if (covers(reference.location, line, column))
      return &reference;
  // Just past the end of a name (where the cursor sits after typing it) counts too.
  for (const Reference &reference : references)
    if (column > 1 && covers(reference.location, line, column - 1))
      return &reference;
  return nullptr;
}

DocumentIndex indexDocument(const std::string &text, const std::string &path,
                            const plan::OperatorCatalog &catalog) {
  DocumentIndex index;
  llvm::SourceMgr sources;
  DiagnosticEngine diags(
      [&](const Diagnostic &diagnostic) { index.diagnostics.push_back(diagnostic); });
  driver::CompileRequest request;
  request.frontend.catalog = &catalog;
  driver::Compilation compiled = driver::compileText(sources, text, path, diags, request);
  const frontend::FrontendResult &result = compiled.frontend;
  if (result.ok) {
    index.compiled = compiled.plan.has_value();
    recordTypes(compiled.module, index);
  }
  if (result.file) {
    for (auto &statement : result.file->statements)
      if (auto *param = std::get_if<ast::ParamDecl>(&statement->node); param && param->declaredType)
        index.valueTypes[param->name.name] =
            param->declaredType->str() +
            (param->resolvedValue ? " = " + plan::formatStaticValue(*param->resolvedValue) : "");
    for (auto &statement : result.file->statements)
      if (auto *binding = std::get_if<ast::BindingDecl>(&statement->node);
          binding && binding->value && binding->value->type &&
          !index.valueTypes.count(binding->name.name))
        index.valueTypes[binding->name.name] = binding->value->type->str();
    AstIndexer(index).index(*result.file);
    index.catalog = result.file->catalog;
  }
  if (!index.catalog)
    index.catalog = std::shared_ptr<const plan::OperatorCatalog>(&catalog, [](auto *) {});
  return index;
}

} // namespace orch::lsp
