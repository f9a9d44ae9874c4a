// AST -> IR through ir::Builder: one operation per expression node (names are aliases, params
// become constants), one Call per `call` declaration and per inline invocation.
#include "orch/frontend/IrGen.h"

#include "orch/ir/Builder.h"

#include <map>
#include <stdexcept>
#include <unordered_map>

namespace orch::frontend {
namespace {

class IrGenerator {
public:
  IrGenerator(const ast::File &file, const std::string &sourcePath) : file_(file), build_(module_) {
    module_.pipelineName = file.pipelineName.name;
    module_.pipelineLocation = file.pipelineName.location;
    module_.sourcePath = sourcePath;
    for (const ast::Identifier &domain : file.domains)
      domainIds_[domain.name] = build_.domain(domain.name, domain.location);
  }

  ir::Module run() {
    for (const auto &statement : file_.statements)
      generate(*statement);
    return std::move(module_);
  }

private:
  void generate(const ast::Statement &statement) {
    std::visit(ast::Overloaded{
                   [&](const ast::SourceDecl &source) {
                     ir::DomainId domain =
                         domainIds_.at(source.domain ? source.domain->name : source.name.name);
                     ir::ValueId id = build_.source(
                         ir::Source{source.use.op.text, constants(source.use), domain},
                         source.use.signature->result, source.name.location);
                     build_.name(id, source.name.name, source.name.location);
                     values_[&statement] = id;
                   },
                   [&](const ast::CallDecl &call) {
                     calls_[&statement] =
                         addCall(call.name.name, call.use, call.name.location, true);
                   },
                   [&](const ast::BindingDecl &binding) { generateBinding(statement, binding); },
                   [&](const ast::SinkDecl &sink) {
                     enclosing_ = "sink" + std::to_string(sinks_++);
                     std::vector<std::string> labels;
                     std::vector<ir::Use> inputs = inputsOf(sink.use, labels);
                     build_.sink(sink.use.op.text, constants(sink.use), std::move(labels), inputs,
                                 statement.location);
                   },
                   [&](const ast::OperatorDecl &declared) {
                     if (declared.external)
                       module_.operators.push_back(*declared.external);
                   },
                   // A param's value is a constant wherever it is used (NameRef).
                   [](const ast::ParamDecl &) {},
               },
               statement.node);
  }

  void generateBinding(const ast::Statement &statement, const ast::BindingDecl &binding) {
    enclosing_ = binding.name.name;
    size_t opsBefore = module_.ops.size();
    ir::ValueId id = generate(*binding.value, binding.name.name);
    values_[&statement] = id;
    // A binding that only renames another value (`x = y;`) adds no operation to name.
    if (module_.ops.size() > opsBefore) {
      build_.name(id, binding.name.name, binding.name.location);
      const std::optional<ast::TypeExpr> &annotation = binding.type;
      if (annotation && !annotation->isRecord && annotation->arguments.size() == 1 &&
          domainIds_.count(annotation->name.name)) {
        module_.op(id).expectedDomain = annotation->name.name;
        module_.op(id).expectedDomainLocation = annotation->name.location;
      }
    }
  }

  ir::Use use(const ast::Expr &expr) { return ir::Use{generate(expr, ""), expr.location}; }

  /// `bindingName` names an inline Call that is the whole value of a binding.
  ir::ValueId generate(const ast::Expr &expr, const std::string &bindingName) {
    const plan::Type type = expr.type.value_or(plan::Type());
    const SourceLocation at = expr.location;
    return std::visit(
        ast::Overloaded{
            [&](const ast::Literal &literal) { return build_.constant(literal.value, at); },
            [&](const ast::NameRef &name) {
              if (auto *param = std::get_if<ast::ParamDecl>(&name.target->node))
                return build_.constant(*param->resolvedValue, at);
              return values_.at(name.target);
            },
            [&](const ast::Projection &projection) {
              return build_.project(use(*projection.base), projection.field.name, type, at);
            },
            [&](const ast::Record &record) {
              std::vector<std::string> fields;
              std::vector<ir::Use> values;
              for (const ast::RecordField &field : record.fields) {
                values.push_back(use(*field.value));
                fields.push_back(field.name.name);
              }
              return build_.record(std::move(fields), values, type, at);
            },
            [&](const ast::Invoke &invoke) {
              return generateInvoke(invoke, type, at, bindingName);
            },
            [&](const ast::Expand &expand) {
              return build_.expand(use(*expand.input), domainIds_.at(expand.domain.name), type, at);
            },
            [&](const ast::Reduce &reduce) {
              return build_.reduce(use(*reduce.input), type, at,
                                   reduce.failed == ast::FailedMembers::Skip);
            },
            [&](const ast::Filter &filter) {
              ir::Use value = use(*filter.value);
              return build_.filter(value, use(*filter.mask), type, at);
            },
            [&](const ast::Broadcast &broadcast) {
              ir::Use value = use(*broadcast.value);
              return build_.broadcast(value, use(*broadcast.like), type, at);
            },
            [&](const ast::Compute &compute) {
              std::vector<ir::Use> operands;
              for (const ast::ExprPtr &operand : compute.operands)
                operands.push_back(use(*operand));
              return build_.compute(compute.op, operands, type, at);
            },
            [&](const ast::ErrorExpr &) -> ir::ValueId {
              // The frontend generates IR only for a file that checked without errors.
              throw std::logic_error("orch: IR generation met a syntax error's placeholder at " +
                                     std::to_string(at.line) + ":" + std::to_string(at.column) +
                                     " (a bug in Orch)");
            },
        },
        expr.node);
  }

  ir::ValueId generateInvoke(const ast::Invoke &invoke, const plan::Type &type, SourceLocation at,
                             const std::string &bindingName) {
    std::vector<std::string> labels;
    std::vector<ir::Use> inputs = inputsOf(invoke.use, labels);
    // Inline Calls are registered after their inputs, so Calls appear in evaluation order.
    uint32_t call;
    if (invoke.call) {
      call = calls_.at(invoke.call);
    } else {
      std::string name = bindingName;
      if (name.empty())
        name = inlineCallName(invoke.use);
      call = addCall(name, invoke.use, invoke.use.op.location, false);
    }
    return build_.invoke(call, std::move(labels), inputs, type, at);
  }

  /// The dataflow inputs of an operator use, in parameter order, with their parameter names.
  std::vector<ir::Use> inputsOf(const ast::OperatorUse &operatorUse,
                                std::vector<std::string> &labels) {
    std::vector<ir::Use> inputs;
    for (const ast::BoundParam &bound : operatorUse.bound)
      if (bound.param->role == plan::ParamRole::Input || isGivenPerRow(bound)) {
        inputs.push_back(use(*bound.expr));
        labels.push_back(bound.param->name);
      }
    return inputs;
  }

  /// A static parameter given a per-row value: an input the Call batches by.
  static bool isGivenPerRow(const ast::BoundParam &bound) {
    return bound.param->role == plan::ParamRole::Static && bound.param->perRow && bound.expr &&
           !bound.value;
  }

  /// An inline Call is named after its operator and the binding (or sink) it is written in
  /// (`text.len@title`, `pdf.render@sink0`; `#2` for the second in the same place), so that
  /// the summary, metrics, trace and report point at the statement, and the names stay the
  /// same when comments, blank lines or formatting move the text (a run resumes under them).
  std::string inlineCallName(const ast::OperatorUse &use) {
    const std::string name = use.op.text + "@" + enclosing_;
    const int seen = ++inlineCounts_[name];
    return seen == 1 ? name : name + "#" + std::to_string(seen);
  }

  uint32_t addCall(const std::string &name, const ast::OperatorUse &operatorUse,
                   SourceLocation location, bool declared) {
    ir::Call call;
    call.name = name;
    call.op = operatorUse.signature->name;
    call.constants = constants(operatorUse);
    call.options = operatorUse.callOptions;
    call.gpu = operatorUse.signature->gpu;
    call.location = location;
    call.declared = declared;
    call.optionsWritten = !operatorUse.options.empty();
    for (const ast::BoundParam &bound : operatorUse.bound)
      if (isGivenPerRow(bound))
        call.batchKeys.push_back(bound.param->name);
    // A declared operator's `grouped` inputs, given where the Call is used.
    for (const plan::OperatorParam &param : operatorUse.signature->params)
      if (param.role == plan::ParamRole::Input && param.perRow)
        call.batchKeys.push_back(param.name);
    return build_.call(std::move(call));
  }

  static std::vector<ir::NamedConstant> constants(const ast::OperatorUse &operatorUse) {
    std::vector<ir::NamedConstant> out;
    for (const ast::BoundParam &bound : operatorUse.bound)
      if (bound.param->role == plan::ParamRole::Static && bound.value)
        out.push_back({bound.param->name, *bound.value});
    return out;
  }

  const ast::File &file_;
  ir::Module module_;
  ir::Builder build_;
  std::unordered_map<std::string, ir::DomainId> domainIds_;
  std::unordered_map<const ast::Statement *, ir::ValueId> values_;
  std::unordered_map<const ast::Statement *, uint32_t> calls_;
  std::map<std::string, int> inlineCounts_;
  /// The binding or sink whose statement is being generated, and sinks so far.
  std::string enclosing_;
  int sinks_ = 0;
};

} // namespace

ir::Module generateIr(const ast::File &file, const std::string &sourcePath) {
  return IrGenerator(file, sourcePath).run();
}

} // namespace orch::frontend
