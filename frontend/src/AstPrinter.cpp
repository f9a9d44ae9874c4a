// Prints one node per line, children indented, each with its type (when checked) and
// <line:col>.
#include "orch/frontend/AstPrinter.h"

#include "llvm/Support/raw_ostream.h"

namespace orch::frontend {
namespace {

class AstPrinter {
public:
  explicit AstPrinter(llvm::raw_ostream &out) : out_(out) {}

  void print(const ast::File &file) {
    out_ << "pipeline " << file.pipelineName.name << at(file.pipelineName.location) << "\n";
    for (const auto &statement : file.statements)
      printStatement(*statement);
  }

private:
  void printStatement(const ast::Statement &statement) {
    std::visit(ast::Overloaded{
                   [&](const ast::ParamDecl &param) {
                     line(0) << "param " << param.name.name;
                     if (param.declaredType)
                       out_ << " : " << param.declaredType->str();
                     if (param.resolvedValue)
                       out_ << " = " << plan::formatStaticValue(*param.resolvedValue);
                     out_ << at(param.name.location) << "\n";
                   },
                   [&](const ast::SourceDecl &source) {
                     line(0) << "source " << source.name.name << " as "
                             << (source.domain ? source.domain->name : source.name.name);
                     if (source.use.signature)
                       out_ << " : " << source.use.signature->result.str();
                     out_ << at(source.name.location) << "\n";
                     printUse(source.use, 1);
                   },
                   [&](const ast::CallDecl &call) {
                     line(0) << "call " << call.name.name << at(call.name.location) << "\n";
                     printUse(call.use, 1);
                   },
                   [&](const ast::SinkDecl &sink) {
                     line(0) << "sink" << at(statement.location) << "\n";
                     printUse(sink.use, 1);
                   },
                   [&](const ast::BindingDecl &binding) {
                     line(0) << "binding " << binding.name.name << at(binding.name.location)
                             << "\n";
                     if (binding.value)
                       printExpr(*binding.value, 1);
                   },
                   [&](const ast::OperatorDecl &declared) { printOperatorDecl(declared); },
               },
               statement.node);
  }

  void printOperatorDecl(const ast::OperatorDecl &declared) {
    line(0) << "operator " << declared.name.text;
    if (declared.external)
      out_ << " -> " << declared.external->result.str() << " = " << declared.external->runner << " "
           << declared.external->path
           << (declared.external->className.empty() ? ""
                                                    : " class " + declared.external->className);
    out_ << at(declared.name.location) << "\n";
    for (const ast::OperatorParamDecl &param : declared.params) {
      line(1) << (param.constant   ? "const "
                  : param.modifier ? "grouped input "
                                   : "input ")
              << param.name.name;
      if (declared.external)
        for (const plan::PlanOperatorParam &resolved : declared.external->params)
          if (resolved.name == param.name.name)
            out_ << " : " << resolved.type.str();
      if (param.defaultValue)
        if (auto *literal = std::get_if<ast::Literal>(&param.defaultValue->node))
          out_ << " = " << plan::formatStaticValue(literal->value);
      out_ << at(param.name.location) << "\n";
    }
  }

  void printUse(const ast::OperatorUse &use, int depth) {
    line(depth) << "operator " << use.op.text << at(use.op.location) << "\n";
    printUseArguments(use, depth + 1);
  }

  void printExpr(const ast::Expr &expr, int depth) {
    std::visit([&](const auto &node) { printNode(expr, node, depth); }, expr.node);
  }

  void printNode(const ast::Expr &expr, const ast::NameRef &name, int depth) {
    header(expr, depth, "name " + name.name.name);
  }
  void printNode(const ast::Expr &expr, const ast::Literal &literal, int depth) {
    header(expr, depth, "literal " + plan::formatStaticValue(literal.value));
  }
  void printNode(const ast::Expr &expr, const ast::Projection &projection, int depth) {
    header(expr, depth, "field " + projection.field.name);
    child(projection.base, depth + 1);
  }
  void printNode(const ast::Expr &expr, const ast::Record &record, int depth) {
    header(expr, depth, "record");
    for (const ast::RecordField &field : record.fields) {
      line(depth + 1) << field.name.name << ":\n";
      child(field.value, depth + 2);
    }
  }
  void printNode(const ast::Expr &expr, const ast::Invoke &invoke, int depth) {
    header(expr, depth, std::string(invoke.call ? "invoke call " : "invoke ") + invoke.use.op.text);
    if (invoke.call && invoke.use.signature)
      line(depth + 1) << "calls " << invoke.use.signature->name << "\n";
    printUseArguments(invoke.use, depth + 1);
  }
  void printNode(const ast::Expr &expr, const ast::Expand &expand, int depth) {
    header(expr, depth, "expand as " + expand.domain.name);
    child(expand.input, depth + 1);
  }
  void printNode(const ast::Expr &expr, const ast::Reduce &reduce, int depth) {
    header(expr, depth,
           reduce.failed == ast::FailedMembers::Skip ? "reduce skipping failed" : "reduce");
    child(reduce.input, depth + 1);
  }
  void printNode(const ast::Expr &expr, const ast::Filter &filter, int depth) {
    header(expr, depth, "filter");
    child(filter.value, depth + 1);
    child(filter.mask, depth + 1);
  }
  void printNode(const ast::Expr &expr, const ast::Broadcast &broadcast, int depth) {
    header(expr, depth, "broadcast");
    child(broadcast.value, depth + 1);
    child(broadcast.like, depth + 1);
  }
  void printNode(const ast::Expr &expr, const ast::Compute &compute, int depth) {
    header(expr, depth,
           std::string("compute ") + plan::computeOpName(compute.op) +
               (compute.castType ? " " + compute.castType->name.name : std::string()));
    for (const ast::ExprPtr &operand : compute.operands)
      child(operand, depth + 1);
  }
  void printNode(const ast::Expr &expr, const ast::ErrorExpr &, int depth) {
    header(expr, depth, "<error>");
  }

  /// Arguments as bound to parameters once checked (defaults included), else as written;
  /// then the options.
  void printUseArguments(const ast::OperatorUse &use, int depth) {
    for (const ast::BoundParam &bound : use.bound) {
      line(depth) << "arg " << bound.param->name;
      if (bound.param->role == plan::ParamRole::Static && bound.value)
        out_ << " = " << plan::formatStaticValue(*bound.value) << (bound.expr ? "" : " (default)");
      out_ << "\n";
      if (bound.param->role == plan::ParamRole::Input && bound.expr)
        printExpr(*bound.expr, depth + 1);
    }
    if (use.bound.empty())
      for (const ast::Argument &argument : use.arguments) {
        line(depth) << "arg" << (argument.name ? " " + argument.name->name : std::string()) << "\n";
        child(argument.value, depth + 1);
      }
    if (!use.hasOptionBlock)
      return;
    line(depth) << "options";
    for (const ast::Option &option : use.options) {
      out_ << " " << option.name.name << "=";
      if (option.none)
        out_ << "none";
      else if (option.value && std::holds_alternative<ast::Literal>(option.value->node))
        out_ << plan::formatStaticValue(std::get<ast::Literal>(option.value->node).value);
      else if (option.value && std::holds_alternative<ast::NameRef>(option.value->node))
        out_ << std::get<ast::NameRef>(option.value->node).name.name;
      else
        out_ << "?";
    }
    out_ << "\n";
  }

  void child(const ast::ExprPtr &expr, int depth) {
    if (expr)
      printExpr(*expr, depth);
  }

  void header(const ast::Expr &expr, int depth, const std::string &text) {
    line(depth) << text;
    if (expr.type)
      out_ << " : " << expr.type->str();
    out_ << at(expr.location) << "\n";
  }

  llvm::raw_ostream &line(int depth) {
    for (int i = 0; i < depth; ++i)
      out_ << "  ";
    return out_;
  }

  static std::string at(const SourceLocation &location) {
    if (!location.isKnown())
      return "";
    return " <" + std::to_string(location.line) + ":" + std::to_string(location.column) + ">";
  }

  llvm::raw_ostream &out_;
};

} // namespace

void printAst(const ast::File &file, llvm::raw_ostream &out) { AstPrinter(out).print(file); }

} // namespace orch::frontend
