// AST -> IR: one operation per expression node (names are aliases, params become constants),
// one Call per `call` declaration and per inline invocation.
#include "orch/frontend/IrGen.h"

#include <map>
#include <unordered_map>

namespace orch {
namespace {

class IrGenerator {
public:
  IrGenerator(const ast::File &file, const std::string &sourcePath) : file_(file) {
    module_.pipelineName = file.pipelineName.name;
    module_.sourcePath = sourcePath;
    for (const ast::Identifier &domain : file.domains) {
      domainIds_[domain.name] = ir::DomainId(module_.domains.size());
      module_.domains.push_back(
          ir::Domain{domain.name, ir::kNoDomain, ir::kNoValue, domain.location});
    }
  }

  ir::Module run() {
    for (const auto &statement : file_.statements)
      generate(*statement);
    return std::move(module_);
  }

private:
  void generate(const ast::Statement &statement) {
    if (auto *source = std::get_if<ast::SourceDecl>(&statement.node)) {
      ir::DomainId domain =
          domainIds_.at(source->domain ? source->domain->name : source->name.name);
      module_.sources.push_back(ir::Source{source->use.op.text, constants(source->use), domain});
      ir::ValueId id =
          addOp(ir::OpKind::Source, {}, source->name.location, source->use.signature->result);
      module_.op(id).index = uint32_t(module_.sources.size() - 1);
      module_.op(id).domain = domain;
      module_.op(id).name = source->name.name;
      module_.op(id).nameLocation = source->name.location;
      values_[&statement] = id;
    } else if (auto *call = std::get_if<ast::CallDecl>(&statement.node)) {
      calls_[&statement] = addCall(call->name.name, call->use, call->name.location, true);
    } else if (auto *binding = std::get_if<ast::BindingDecl>(&statement.node)) {
      size_t opsBefore = module_.ops.size();
      ir::ValueId id = generate(*binding->value, binding->name.name);
      values_[&statement] = id;
      // A binding that only renames another value (`x = y;`) adds no operation to name.
      if (module_.ops.size() > opsBefore) {
        ir::Operation &op = module_.op(id);
        op.name = binding->name.name;
        op.nameLocation = binding->name.location;
        if (binding->type && !binding->type->isRecord && binding->type->arguments.size() == 1 &&
            domainIds_.count(binding->type->name.name)) {
          op.expectedDomain = binding->type->name.name;
          op.expectedDomainLocation = binding->type->name.location;
        }
      }
    } else if (auto *sink = std::get_if<ast::SinkDecl>(&statement.node)) {
      ir::Sink irSink{sink->use.op.text,  constants(sink->use), {}, {}, {},
                      statement.location, ir::kNoDomain};
      for (const ast::BoundParam &bound : sink->use.bound)
        if (bound.param->role == plan::ParamRole::Input) {
          irSink.labels.push_back(bound.param->name);
          irSink.operands.push_back(generate(*bound.expr, ""));
          irSink.operandLocations.push_back(bound.expr->location);
        }
      module_.sinks.push_back(std::move(irSink));
    }
  }

  /// `bindingName` names an inline Call that is the whole value of a binding.
  ir::ValueId generate(const ast::Expr &expr, const std::string &bindingName) {
    const plan::Type type = expr.type.value_or(plan::Type());
    if (auto *literal = std::get_if<ast::Literal>(&expr.node))
      return addConstant(literal->value, expr.location);
    if (auto *name = std::get_if<ast::NameRef>(&expr.node)) {
      if (auto *param = std::get_if<ast::ParamDecl>(&name->target->node))
        return addConstant(*param->resolvedValue, expr.location);
      return values_.at(name->target);
    }
    if (auto *projection = std::get_if<ast::Projection>(&expr.node)) {
      ir::ValueId base = generate(*projection->base, "");
      ir::ValueId id =
          addOp(ir::OpKind::Project, {base}, expr.location, type, {projection->base.get()});
      module_.op(id).field = projection->field.name;
      return id;
    }
    if (auto *record = std::get_if<ast::Record>(&expr.node)) {
      std::vector<ir::ValueId> operands;
      std::vector<std::string> labels;
      std::vector<const ast::Expr *> uses;
      for (const ast::RecordField &field : record->fields) {
        operands.push_back(generate(*field.value, ""));
        labels.push_back(field.name.name);
        uses.push_back(field.value.get());
      }
      ir::ValueId id = addOp(ir::OpKind::Record, operands, expr.location, type, uses);
      module_.op(id).labels = std::move(labels);
      return id;
    }
    if (auto *invoke = std::get_if<ast::Invoke>(&expr.node))
      return generateInvoke(*invoke, expr, bindingName);
    if (auto *expand = std::get_if<ast::Expand>(&expr.node)) {
      ir::ValueId input = generate(*expand->input, "");
      ir::ValueId id =
          addOp(ir::OpKind::Expand, {input}, expr.location, type, {expand->input.get()});
      ir::DomainId domain = domainIds_.at(expand->domain.name);
      module_.op(id).opens = domain;
      module_.domains[domain].openedBy = id;
      return id;
    }
    if (auto *reduce = std::get_if<ast::Reduce>(&expr.node))
      return addOp(ir::OpKind::Reduce, {generate(*reduce->input, "")}, expr.location, type,
                   {reduce->input.get()});
    if (auto *filter = std::get_if<ast::Filter>(&expr.node)) {
      ir::ValueId value = generate(*filter->value, "");
      ir::ValueId mask = generate(*filter->mask, "");
      return addOp(ir::OpKind::Filter, {value, mask}, expr.location, type,
                   {filter->value.get(), filter->mask.get()});
    }
    if (auto *broadcast = std::get_if<ast::Broadcast>(&expr.node)) {
      ir::ValueId value = generate(*broadcast->value, "");
      ir::ValueId like = generate(*broadcast->like, "");
      return addOp(ir::OpKind::Broadcast, {value, like}, expr.location, type,
                   {broadcast->value.get(), broadcast->like.get()});
    }
    return addConstant(plan::StaticValue(false), expr.location); // unreachable after checking
  }

  ir::ValueId generateInvoke(const ast::Invoke &invoke, const ast::Expr &expr,
                             const std::string &bindingName) {
    std::vector<ir::ValueId> operands;
    std::vector<std::string> labels;
    std::vector<const ast::Expr *> uses;
    for (const ast::BoundParam &bound : invoke.use.bound)
      if (bound.param->role == plan::ParamRole::Input) {
        operands.push_back(generate(*bound.expr, ""));
        labels.push_back(bound.param->name);
        uses.push_back(bound.expr);
      }
    // Inline Calls are registered after their inputs, so Calls appear in evaluation order.
    uint32_t call;
    if (invoke.call) {
      call = calls_.at(invoke.call);
    } else {
      std::string name = bindingName;
      if (name.empty())
        name = invoke.use.op.text + "#" + std::to_string(++inlineCounts_[invoke.use.op.text]);
      call = addCall(name, invoke.use, invoke.use.op.location, false);
    }
    ir::ValueId id =
        addOp(ir::OpKind::Invoke, operands, expr.location, expr.type.value_or(plan::Type()), uses);
    module_.op(id).index = call;
    module_.op(id).labels = std::move(labels);
    return id;
  }

  uint32_t addCall(const std::string &name, const ast::OperatorUse &use, SourceLocation location,
                   bool declared) {
    module_.calls.push_back(ir::Call{name, use.signature->name, constants(use), use.callOptions,
                                     use.signature->gpu, location, declared});
    return uint32_t(module_.calls.size() - 1);
  }

  static std::vector<ir::NamedConstant> constants(const ast::OperatorUse &use) {
    std::vector<ir::NamedConstant> out;
    for (const ast::BoundParam &bound : use.bound)
      if (bound.param->role == plan::ParamRole::Static && bound.value)
        out.push_back({bound.param->name, *bound.value});
    return out;
  }

  ir::ValueId addConstant(const plan::StaticValue &value, SourceLocation location) {
    ir::ValueId id = addOp(ir::OpKind::Constant, {}, location, plan::typeOf(value));
    module_.op(id).constant = value;
    return id;
  }

  /// `operands[i]` was generated from `uses[i]`, whose locations are kept for messages.
  ir::ValueId addOp(ir::OpKind kind, std::vector<ir::ValueId> operands, SourceLocation location,
                    plan::Type type, const std::vector<const ast::Expr *> &uses = {}) {
    ir::Operation op;
    op.kind = kind;
    op.operands = std::move(operands);
    for (const ast::Expr *use : uses)
      op.operandLocations.push_back(use->location);
    op.location = location;
    op.type = std::move(type);
    module_.ops.push_back(std::move(op));
    return ir::ValueId(module_.ops.size() - 1);
  }

  const ast::File &file_;
  ir::Module module_;
  std::unordered_map<std::string, ir::DomainId> domainIds_;
  std::unordered_map<const ast::Statement *, ir::ValueId> values_;
  std::unordered_map<const ast::Statement *, uint32_t> calls_;
  std::map<std::string, int> inlineCounts_;
};

} // namespace

ir::Module generateIr(const ast::File &file, const std::string &sourcePath) {
  return IrGenerator(file, sourcePath).run();
}

} // namespace orch
