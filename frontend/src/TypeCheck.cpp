// Type checking: gives every expression its type, matches operator arguments to parameters,
// checks constants, options and params against the operator catalog (--set overrides are
// parsed in ParamOverrides.cpp).
// Domains (which level of the hierarchy a value lives on) are checked later, on the IR.
#include "orch/frontend/Sema.h"

#include "LiteralDecoder.h"
#include "ParamOverrides.h"

#include <unordered_map>
#include <unordered_set>

namespace orch {
namespace {

using plan::OperatorKind;
using plan::OperatorParam;
using plan::OperatorSignature;
using plan::ParamRole;
using plan::StaticValue;
using plan::Type;
using plan::TypeKind;

/// Which parameters an argument list may fill.
enum class BindingSite {
  /// `call c = op(...)`: the static parameters only; inputs come where `c` is used.
  CallDeclaration,
  /// `c(...)`: the inputs only; statics were fixed by the declaration.
  CallUse,
  /// `op(...)` inline, sources and sinks: every parameter.
  Everything,
};

bool fills(BindingSite site, const OperatorParam &param) {
  switch (site) {
  case BindingSite::CallDeclaration:
    return param.role == ParamRole::Static;
  case BindingSite::CallUse:
    return param.role == ParamRole::Input;
  case BindingSite::Everything:
    return true;
  }
  return true;
}

std::string quoted(const std::string &text) { return "'" + text + "'"; }

class TypeChecker {
public:
  TypeChecker(ast::File &file, const plan::OperatorCatalog &catalog,
              const std::vector<ParamOverride> &overrides, DiagnosticEngine &diags)
      : file_(file), catalog_(catalog), diags_(diags) {
    for (const ParamOverride &override : overrides)
      overrides_[override.name] = override.value;
    for (const ast::Identifier &domain : file.domains)
      domains_.insert(domain.name);
  }

  bool run() {
    unsigned errorsBefore = diags_.errorCount();
    reportOverridesOfUnknownParams(file_, overrides_, diags_);
    for (auto &statement : file_.statements)
      checkStatement(*statement);
    return diags_.errorCount() == errorsBefore;
  }

private:
  void checkStatement(ast::Statement &statement) {
    if (auto *param = std::get_if<ast::ParamDecl>(&statement.node))
      checkParam(*param);
    else if (auto *source = std::get_if<ast::SourceDecl>(&statement.node))
      checkSource(statement, *source);
    else if (auto *call = std::get_if<ast::CallDecl>(&statement.node))
      checkDeclaredUse(call->use, OperatorKind::Transform, BindingSite::CallDeclaration);
    else if (auto *sink = std::get_if<ast::SinkDecl>(&statement.node))
      checkDeclaredUse(sink->use, OperatorKind::Sink, BindingSite::Everything);
    else if (auto *binding = std::get_if<ast::BindingDecl>(&statement.node))
      checkBinding(statement, *binding);
  }

  // --- params ---------------------------------------------------------------------------

  void checkParam(ast::ParamDecl &param) {
    std::optional<Type> declared = resolveTypeExpr(param.type);
    if (!declared)
      return;
    static const std::vector<TypeKind> constantKinds = {TypeKind::Bool,     TypeKind::Int,
                                                        TypeKind::Float,    TypeKind::String,
                                                        TypeKind::Duration, TypeKind::Size};
    if (std::find(constantKinds.begin(), constantKinds.end(), declared->kind()) ==
        constantKinds.end()) {
      diags_.error(param.type.location,
                   "a param must be Bool, Int, Float, String, Duration or Size, not " +
                       declared->str());
      return;
    }
    param.declaredType = declared;
    std::optional<StaticValue> value;
    if (auto override = overrides_.find(param.name.name); override != overrides_.end()) {
      value = parseOverrideValue(param, *declared, override->second, diags_);
    } else if (param.value) {
      if (auto *literal = std::get_if<ast::Literal>(&param.value->node)) {
        value = convertConstant(literal->value, *declared);
        if (!value)
          diags_.error(param.value->location, "param " + quoted(param.name.name) + " is " +
                                                  declared->str() + " but its value is " +
                                                  plan::typeOf(literal->value).str());
      }
    }
    if (param.value)
      param.value->type = declared;
    param.resolvedValue = value;
  }

  // --- declarations -----------------------------------------------------------------------

  /// Looks up the operator of a source, `call` or sink, binds its arguments and checks its
  /// options; returns the signature, or null after reporting.
  const OperatorSignature *checkDeclaredUse(ast::OperatorUse &use, OperatorKind kind,
                                            BindingSite site) {
    const OperatorSignature *signature = lookupOperator(use.op, kind);
    if (!signature)
      return nullptr;
    use.signature = signature;
    std::optional<Type> typeVar;
    bindArguments(use, *signature, site, typeVar);
    checkOptions(use, *signature);
    return signature;
  }

  void checkSource(ast::Statement &statement, ast::SourceDecl &source) {
    if (const OperatorSignature *signature =
            checkDeclaredUse(source.use, OperatorKind::Source, BindingSite::Everything))
      valueTypes_[&statement] = signature->result;
  }

  void checkBinding(ast::Statement &statement, ast::BindingDecl &binding) {
    std::optional<Type> type = binding.value ? typeOf(*binding.value) : std::nullopt;
    if (type && binding.type) {
      std::optional<Type> declared = resolveAnnotation(*binding.type);
      if (declared && !isAssignable(*type, *declared)) {
        diags_.error(binding.value->location, quoted(binding.name.name) + " is declared " +
                                                  declared->str() + " but its value is " +
                                                  type->str());
        type = std::nullopt;
      } else if (declared) {
        type = declared;
      }
    }
    valueTypes_[&statement] = type;
  }

  // --- types ------------------------------------------------------------------------------

  std::optional<Type> resolveTypeExpr(const ast::TypeExpr &typeExpr) {
    if (typeExpr.isRecord) {
      std::vector<plan::RecordField> fields;
      std::unordered_map<std::string, SourceLocation> seen;
      for (const ast::TypeField &field : typeExpr.fields) {
        if (auto [existing, inserted] = seen.emplace(field.name.name, field.name.location);
            !inserted) {
          diags_.error(field.name.location, "field " + quoted(field.name.name) + " appears twice")
              .attachNote(existing->second, "first given here");
          return std::nullopt;
        }
        std::optional<Type> type = resolveTypeExpr(*field.type);
        if (!type)
          return std::nullopt;
        fields.push_back({field.name.name, *type});
      }
      return Type::record(std::move(fields));
    }
    const std::string &name = typeExpr.name.name;
    if (name == "List") {
      if (typeExpr.arguments.size() != 1) {
        diags_.error(typeExpr.location, "List takes exactly one type argument, as in List<Text>");
        return std::nullopt;
      }
      std::optional<Type> element = resolveTypeExpr(typeExpr.arguments.front());
      return element ? std::optional<Type>(Type::list(*element)) : std::nullopt;
    }
    std::optional<TypeKind> kind = plan::typeKindNamed(name);
    if (!kind) {
      std::vector<std::string> names = {"List"};
      for (std::string_view known : plan::namedTypeKinds())
        names.emplace_back(known);
      diags_.error(typeExpr.name.location,
                   "unknown type " + quoted(name) + didYouMean(name, names));
      return std::nullopt;
    }
    if (!typeExpr.arguments.empty()) {
      diags_.error(typeExpr.location, "type " + quoted(name) + " takes no type arguments");
      return std::nullopt;
    }
    return Type::scalar(*kind);
  }

  /// A binding's annotation: a type, or `Domain<Type>` naming the domain too (the domain is
  /// checked with the IR).
  std::optional<Type> resolveAnnotation(const ast::TypeExpr &typeExpr) {
    if (!typeExpr.isRecord && domains_.count(typeExpr.name.name)) {
      if (typeExpr.arguments.size() != 1) {
        diags_.error(typeExpr.location,
                     "a domain annotation takes one type, as in " + typeExpr.name.name + "<Text>");
        return std::nullopt;
      }
      return resolveTypeExpr(typeExpr.arguments.front());
    }
    return resolveTypeExpr(typeExpr);
  }

  std::optional<Type> typeOf(ast::Expr &expr) {
    std::optional<Type> type =
        std::visit([&](auto &node) { return typeOfNode(expr, node); }, expr.node);
    expr.type = type;
    return type;
  }

  std::optional<Type> typeOfNode(ast::Expr &, ast::Literal &literal) {
    return plan::typeOf(literal.value);
  }

  std::optional<Type> typeOfNode(ast::Expr &, ast::NameRef &name) {
    if (!name.target)
      return std::nullopt;
    if (auto *param = std::get_if<ast::ParamDecl>(&name.target->node))
      return param->declaredType;
    auto found = valueTypes_.find(name.target);
    return found == valueTypes_.end() ? std::nullopt : found->second;
  }

  std::optional<Type> typeOfNode(ast::Expr &, ast::Projection &projection) {
    std::optional<Type> base = projection.base ? typeOf(*projection.base) : std::nullopt;
    if (!base)
      return std::nullopt;
    if (base->kind() == TypeKind::Json)
      return Type::scalar(TypeKind::Json);
    std::vector<plan::RecordField> fields = plan::projectableFields(*base);
    for (const plan::RecordField &field : fields)
      if (field.name == projection.field.name)
        return field.type;
    std::string message = "type " + base->str() + " has no field " + quoted(projection.field.name);
    if (fields.empty()) {
      message += "; only records, Json and objects such as File have fields";
    } else {
      std::vector<std::string> names;
      for (const plan::RecordField &field : fields)
        names.push_back(field.name);
      message += didYouMean(projection.field.name, names);
    }
    diags_.error(projection.field.location, message);
    return std::nullopt;
  }

  std::optional<Type> typeOfNode(ast::Expr &, ast::Record &record) {
    std::vector<plan::RecordField> fields;
    std::unordered_map<std::string, SourceLocation> seen;
    bool ok = true;
    for (ast::RecordField &field : record.fields) {
      if (auto [existing, inserted] = seen.emplace(field.name.name, field.name.location);
          !inserted) {
        diags_.error(field.name.location, "field " + quoted(field.name.name) + " appears twice")
            .attachNote(existing->second, "first given here");
        ok = false;
      }
      std::optional<Type> type = field.value ? typeOf(*field.value) : std::nullopt;
      if (!type)
        ok = false;
      else
        fields.push_back({field.name.name, *type});
    }
    return ok ? std::optional<Type>(Type::record(std::move(fields))) : std::nullopt;
  }

  std::optional<Type> typeOfNode(ast::Expr &expr, ast::Expand &expand) {
    std::optional<Type> input = expand.input ? typeOf(*expand.input) : std::nullopt;
    if (!input)
      return std::nullopt;
    if (!input->isList()) {
      diags_.error(expand.input ? expand.input->location : expr.location,
                   "expand needs a List, but its input is " + input->str());
      return std::nullopt;
    }
    return input->element();
  }

  std::optional<Type> typeOfNode(ast::Expr &, ast::Reduce &reduce) {
    std::optional<Type> input = reduce.input ? typeOf(*reduce.input) : std::nullopt;
    return input ? std::optional<Type>(Type::list(*input)) : std::nullopt;
  }

  std::optional<Type> typeOfNode(ast::Expr &, ast::Filter &filter) {
    std::optional<Type> value = filter.value ? typeOf(*filter.value) : std::nullopt;
    std::optional<Type> mask = filter.mask ? typeOf(*filter.mask) : std::nullopt;
    if (mask && mask->kind() != TypeKind::Bool) {
      diags_.error(filter.mask->location, "a filter mask must be Bool, not " + mask->str());
      return std::nullopt;
    }
    return mask ? value : std::nullopt;
  }

  std::optional<Type> typeOfNode(ast::Expr &, ast::Broadcast &broadcast) {
    std::optional<Type> value = broadcast.value ? typeOf(*broadcast.value) : std::nullopt;
    if (broadcast.like)
      typeOf(*broadcast.like);
    return value;
  }

  std::optional<Type> typeOfNode(ast::Expr &, ast::Invoke &invoke) {
    const OperatorSignature *signature = nullptr;
    BindingSite site = BindingSite::Everything;
    if (invoke.call) {
      const auto &call = std::get<ast::CallDecl>(invoke.call->node);
      signature = call.use.signature;
      site = BindingSite::CallUse;
      if (!invoke.use.options.empty())
        diags_
            .error(invoke.use.options.front().name.location,
                   "options of call " + quoted(call.name.name) + " belong in its declaration")
            .attachNote(call.name.location, "call " + quoted(call.name.name) + " is declared here");
    } else {
      signature = lookupOperator(invoke.use.op, OperatorKind::Transform);
    }
    if (!signature) {
      for (ast::Argument &argument : invoke.use.arguments)
        if (argument.value)
          typeOf(*argument.value);
      return std::nullopt;
    }
    invoke.use.signature = signature;
    std::optional<Type> typeVar;
    if (!bindArguments(invoke.use, *signature, site, typeVar))
      return std::nullopt;
    if (!invoke.call)
      checkOptions(invoke.use, *signature);
    if (signature->result.containsVar())
      return typeVar ? std::optional<Type>(plan::substitute(signature->result, *typeVar))
                     : std::nullopt;
    return signature->result;
  }

  std::optional<Type> typeOfNode(ast::Expr &, ast::ErrorExpr &) { return std::nullopt; }

  // --- operators --------------------------------------------------------------------------

  const OperatorSignature *lookupOperator(const ast::OperatorName &name, OperatorKind wanted) {
    if (const OperatorSignature *signature = catalog_.find(wanted, name.text))
      return signature;
    for (OperatorKind other : {OperatorKind::Source, OperatorKind::Transform, OperatorKind::Sink}) {
      if (other == wanted || !catalog_.find(other, name.text))
        continue;
      std::string where = other == OperatorKind::Source ? "a 'source' statement"
                          : other == OperatorKind::Sink ? "a 'sink' statement"
                                                        : "an expression or a 'call'";
      diags_.error(name.location, quoted(name.text) + " is a " + plan::operatorKindName(other) +
                                      " operator; use it in " + where);
      return nullptr;
    }
    std::vector<std::string> candidates;
    for (const OperatorSignature &signature : catalog_.all())
      if (signature.kind == wanted)
        candidates.push_back(signature.name);
    if (wanted == OperatorKind::Transform)
      for (auto &statement : file_.statements)
        if (auto *call = std::get_if<ast::CallDecl>(&statement->node))
          candidates.push_back(call->name.name);
    std::string kind = wanted == OperatorKind::Transform ? "" : plan::operatorKindName(wanted);
    diags_.error(name.location, "unknown " + (kind.empty() ? std::string() : kind + " ") +
                                    "operator " + quoted(name.text) +
                                    didYouMean(name.text, candidates));
    return nullptr;
  }

  /// Matches arguments to parameters (positional first, then named), checks each against its
  /// parameter, and records the binding in `use.bound`. Returns false after reporting.
  bool bindArguments(ast::OperatorUse &use, const OperatorSignature &signature, BindingSite site,
                     std::optional<Type> &typeVar) {
    const std::string &op = signature.name;
    std::vector<const OperatorParam *> eligible;
    for (const OperatorParam &param : signature.params)
      if (fills(site, param))
        eligible.push_back(&param);

    std::unordered_map<const OperatorParam *, ast::Argument *> given;
    size_t positional = 0;
    bool sawNamed = false;
    bool ok = true;
    for (ast::Argument &argument : use.arguments) {
      const OperatorParam *param = nullptr;
      if (argument.name) {
        sawNamed = true;
        param = signature.param(argument.name->name);
        if (!param) {
          std::vector<std::string> names;
          for (const OperatorParam &candidate : signature.params)
            names.push_back(candidate.name);
          diags_.error(argument.name->location, quoted(op) + " has no parameter " +
                                                    quoted(argument.name->name) +
                                                    didYouMean(argument.name->name, names));
          ok = false;
          continue;
        }
        if (!fills(site, *param)) {
          reportWrongSite(argument, *param, op, site);
          ok = false;
          continue;
        }
      } else {
        if (sawNamed) {
          diags_.error(argument.location, "a positional argument cannot follow a named one");
          ok = false;
          continue;
        }
        if (positional >= eligible.size()) {
          diags_.error(argument.location, quoted(op) + " takes at most " +
                                              countOf(eligible.size()) + ", but " +
                                              std::to_string(use.arguments.size()) + " were given");
          ok = false;
          break;
        }
        // `call split = pdf.pages(docs)`: a per-entity value in a declaration is a misplaced
        // input, not a bad constant.
        if (site == BindingSite::CallDeclaration && argument.value &&
            !isConstantExpression(*argument.value)) {
          if (const OperatorParam *input = firstInput(signature)) {
            reportWrongSite(argument, *input, op, site);
            ok = false;
            continue;
          }
        }
        param = eligible[positional++];
      }
      if (auto [existing, inserted] = given.emplace(param, &argument); !inserted) {
        diags_.error(argument.location, "parameter " + quoted(param->name) + " is given twice")
            .attachNote(existing->second->location, "first given here");
        ok = false;
      }
    }

    use.bound.clear();
    for (const OperatorParam *param : eligible) {
      auto found = given.find(param);
      if (found == given.end()) {
        if (param->defaultValue) {
          use.bound.push_back(ast::BoundParam{param, nullptr, param->defaultValue});
          continue;
        }
        diags_.error(use.op.location, "missing argument " + quoted(param->name) + " of " +
                                          quoted(op) + " (" + param->type.str() + ")");
        ok = false;
        continue;
      }
      ast::Expr &value = *found->second->value;
      if (param->role == ParamRole::Input) {
        ok &= checkInput(value, *param, op, typeVar);
        use.bound.push_back(ast::BoundParam{param, &value, std::nullopt});
      } else {
        ok &= checkStatic(value, *param, op, use);
      }
    }
    return ok;
  }

  static bool isConstantExpression(const ast::Expr &expr) {
    if (std::holds_alternative<ast::Literal>(expr.node))
      return true;
    auto *name = std::get_if<ast::NameRef>(&expr.node);
    return name && name->target && std::holds_alternative<ast::ParamDecl>(name->target->node);
  }

  static const OperatorParam *firstInput(const OperatorSignature &signature) {
    for (const OperatorParam &param : signature.params)
      if (param.role == ParamRole::Input)
        return &param;
    return nullptr;
  }

  static std::string countOf(size_t arguments) {
    return std::to_string(arguments) + (arguments == 1 ? " argument" : " arguments");
  }

  void reportWrongSite(const ast::Argument &argument, const OperatorParam &param,
                       const std::string &op, BindingSite site) {
    if (site == BindingSite::CallDeclaration)
      diags_.error(argument.location, "parameter " + quoted(param.name) + " of " + quoted(op) +
                                          " is a dataflow input; pass it where the call is used");
    else
      diags_.error(argument.location, "parameter " + quoted(param.name) + " of " + quoted(op) +
                                          " is a constant fixed where the call is declared");
  }

  bool checkInput(ast::Expr &value, const OperatorParam &param, const std::string &op,
                  std::optional<Type> &typeVar) {
    std::optional<Type> type = typeOf(value);
    if (!type)
      return false;
    if (unify(param.type, *type, typeVar))
      return true;
    Type expected = typeVar ? plan::substitute(param.type, *typeVar) : param.type;
    diags_.error(value.location, "argument " + quoted(param.name) + " of " + quoted(op) +
                                     " must be " + expected.str() + ", not " + type->str());
    return false;
  }

  bool checkStatic(ast::Expr &value, const OperatorParam &param, const std::string &op,
                   ast::OperatorUse &use) {
    typeOf(value);
    std::optional<StaticValue> constant = constantValue(value);
    if (!constant) {
      if (mayReportNotConstant(value))
        diags_.error(value.location, "argument " + quoted(param.name) + " of " + quoted(op) +
                                         " must be a constant (a literal or a param)");
      return false;
    }
    std::optional<StaticValue> converted = convertConstant(*constant, param.type);
    if (!converted) {
      diags_.error(value.location, "argument " + quoted(param.name) + " of " + quoted(op) +
                                       " must be " + param.type.str() + ", not " +
                                       plan::typeOf(*constant).str());
      return false;
    }
    use.bound.push_back(ast::BoundParam{&param, &value, std::move(converted)});
    return true;
  }

  /// Whether "must be a constant" is news: not when the expression's own error was reported,
  /// and not for a param whose declaration was rejected.
  static bool mayReportNotConstant(const ast::Expr &expr) {
    if (auto *name = std::get_if<ast::NameRef>(&expr.node))
      return name->target && !std::holds_alternative<ast::ParamDecl>(name->target->node);
    return expr.type.has_value();
  }

  /// A literal, or a param's value; nullopt for anything computed per entity.
  std::optional<StaticValue> constantValue(const ast::Expr &expr) const {
    if (auto *literal = std::get_if<ast::Literal>(&expr.node))
      return literal->value;
    if (auto *name = std::get_if<ast::NameRef>(&expr.node))
      if (name->target)
        if (auto *param = std::get_if<ast::ParamDecl>(&name->target->node))
          return param->resolvedValue;
    return std::nullopt;
  }

  /// `value` as a constant of type `to` (Int widens to Float), or nullopt if it is not one.
  static std::optional<StaticValue> convertConstant(const StaticValue &value, const Type &to) {
    if (to.kind() == TypeKind::Float)
      if (auto *integer = std::get_if<int64_t>(&value))
        return StaticValue(double(*integer));
    if (isAssignable(plan::typeOf(value), to))
      return value;
    return std::nullopt;
  }

  // --- options ----------------------------------------------------------------------------

  void checkOptions(ast::OperatorUse &use, const OperatorSignature &signature) {
    std::unordered_map<std::string, SourceLocation> seen;
    for (ast::Option &option : use.options) {
      const std::string &name = option.name.name;
      const plan::CallOptionSpec *spec = plan::findCallOption(name);
      if (spec && std::find(signature.options.begin(), signature.options.end(), name) ==
                      signature.options.end()) {
        reportOptionNotAccepted(signature, option);
        continue;
      }
      if (!spec) {
        std::vector<std::string> names;
        for (const plan::CallOptionSpec &candidate : plan::callOptionSpecs())
          names.emplace_back(candidate.name);
        diags_.error(option.name.location,
                     "unknown option " + quoted(name) + didYouMean(name, names));
        continue;
      }
      if (auto [existing, inserted] = seen.emplace(name, option.name.location); !inserted) {
        diags_.error(option.name.location, "option " + quoted(name) + " is given twice")
            .attachNote(existing->second, "first given here");
        continue;
      }
      if (!option.value)
        continue;
      typeOf(*option.value);
      std::optional<StaticValue> value = constantValue(*option.value);
      if (!value) {
        if (mayReportNotConstant(*option.value))
          diags_.error(option.value->location,
                       "option " + quoted(name) + " must be a constant (a literal or a param)");
        continue;
      }
      if (checkOptionValue(*spec, *value, option.value->location))
        spec->set(use.callOptions, *value);
    }
  }

  void reportOptionNotAccepted(const OperatorSignature &signature, const ast::Option &option) {
    const std::string &name = option.name.name;
    if (signature.options.empty())
      diags_.error(option.name.location, std::string(plan::operatorKindName(signature.kind)) + " " +
                                             quoted(signature.name) + " takes no options");
    else if (!signature.gpu && (name == "gpus" || name == "require_gpu"))
      diags_.error(option.name.location,
                   quoted(signature.name) + " has no GPU implementation; remove " + quoted(name));
    else
      diags_.error(option.name.location,
                   quoted(signature.name) + " does not accept option " + quoted(name));
  }

  bool checkOptionValue(const plan::CallOptionSpec &spec, const StaticValue &value,
                        SourceLocation at) {
    std::string name = quoted(std::string(spec.name));
    std::optional<StaticValue> converted = convertConstant(value, Type::scalar(spec.type));
    if (!converted) {
      diags_.error(at, "option " + name + " must be " + Type::scalar(spec.type).str() + ", not " +
                           plan::typeOf(value).str());
      return false;
    }
    if (auto *text = std::get_if<std::string>(&*converted)) {
      if (spec.choices.empty() ||
          std::find(spec.choices.begin(), spec.choices.end(), *text) != spec.choices.end())
        return true;
      std::string choices;
      for (size_t i = 0; i < spec.choices.size(); ++i)
        choices += (i ? (i + 1 == spec.choices.size() ? " or " : ", ") : "") + std::string("\"") +
                   std::string(spec.choices[i]) + "\"";
      diags_.error(at, "option " + name + " must be " + choices);
      return false;
    }
    std::optional<double> number;
    if (auto *integer = std::get_if<int64_t>(&*converted))
      number = double(*integer);
    else if (auto *real = std::get_if<double>(&*converted))
      number = *real;
    else if (auto *duration = std::get_if<plan::Duration>(&*converted))
      number = double(duration->nanoseconds);
    else if (auto *size = std::get_if<plan::ByteSize>(&*converted))
      number = double(size->bytes);
    if (!number)
      return true;
    bool tooSmall = spec.strictMinimum ? *number <= spec.minimum : *number < spec.minimum;
    if (tooSmall) {
      char minimum[32];
      std::snprintf(minimum, sizeof minimum, "%g", spec.minimum);
      diags_.error(at, "option " + name +
                           (spec.strictMinimum ? " must be greater than " : " must be at least ") +
                           minimum);
      return false;
    }
    return true;
  }

  ast::File &file_;
  const plan::OperatorCatalog &catalog_;
  DiagnosticEngine &diags_;
  std::unordered_map<std::string, std::string> overrides_;
  std::unordered_set<std::string> domains_;
  std::unordered_map<const ast::Statement *, std::optional<Type>> valueTypes_;
};

} // namespace

bool checkTypes(ast::File &file, const plan::OperatorCatalog &catalog,
                const std::vector<ParamOverride> &overrides, DiagnosticEngine &diags) {
  return TypeChecker(file, catalog, overrides, diags).run();
}

} // namespace orch
