// Operator binding: catalog lookup, argument-to-parameter matching, input, constant and option
// checks (OperatorBinding.h).
#include "OperatorBinding.h"

#include <algorithm>
#include <cstdio>
#include <unordered_map>

namespace orch::frontend {

using plan::OperatorKind;
using plan::OperatorParam;
using plan::OperatorSignature;
using plan::ParamRole;
using plan::StaticValue;
using plan::Type;
using plan::TypeKind;

namespace {

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

bool isConstantExpression(const ast::Expr &expr) {
  if (std::holds_alternative<ast::Literal>(expr.node))
    return true;
  auto *name = std::get_if<ast::NameRef>(&expr.node);
  return name && name->target && std::holds_alternative<ast::ParamDecl>(name->target->node);
}

const OperatorParam *firstInput(const OperatorSignature &signature) {
  for (const OperatorParam &param : signature.params)
    if (param.role == ParamRole::Input)
      return &param;
  return nullptr;
}

std::string countOf(size_t arguments) {
  return std::to_string(arguments) + (arguments == 1 ? " argument" : " arguments");
}

/// Whether "must be a constant" is news: not when the expression's own error was reported,
/// and not for a param whose declaration was rejected.
bool mayReportNotConstant(const ast::Expr &expr) {
  if (auto *name = std::get_if<ast::NameRef>(&expr.node))
    return name->target && !std::holds_alternative<ast::ParamDecl>(name->target->node);
  return expr.type.has_value();
}

} // namespace

std::optional<StaticValue> constantValue(const ast::Expr &expr) {
  if (auto *literal = std::get_if<ast::Literal>(&expr.node))
    return literal->value;
  if (auto *name = std::get_if<ast::NameRef>(&expr.node))
    if (name->target)
      if (auto *param = std::get_if<ast::ParamDecl>(&name->target->node))
        return param->resolvedValue;
  return std::nullopt;
}

std::optional<StaticValue> convertConstant(const StaticValue &value, const Type &to) {
  if (to.kind() == TypeKind::Float)
    if (auto *integer = std::get_if<int64_t>(&value))
      return StaticValue(double(*integer));
  if (isAssignable(plan::typeOf(value), to))
    return value;
  return std::nullopt;
}

const OperatorSignature *OperatorBinder::lookup(const ast::OperatorName &name,
                                                OperatorKind wanted) {
  if (const OperatorSignature *signature = catalog_.find(wanted, name.text))
    return signature;
  std::vector<std::string> candidates;
  for (const OperatorSignature &signature : catalog_.all())
    if (signature.kind == wanted)
      candidates.push_back(signature.name);
  for (OperatorKind other : {OperatorKind::Source, OperatorKind::Transform, OperatorKind::Sink}) {
    if (other == wanted || !catalog_.find(other, name.text))
      continue;
    std::string where = other == OperatorKind::Source ? "a 'source' statement"
                        : other == OperatorKind::Sink ? "a 'sink' statement"
                                                      : "an expression or a 'call'";
    // `source docs = file(...)`: the operator of the other kind is the typo's neighbour.
    diags_.error(name.location, quoted(name.text) + " is a " + plan::operatorKindName(other) +
                                    " operator; use it in " + where +
                                    didYouMean(name.text, candidates));
    return nullptr;
  }
  if (wanted == OperatorKind::Transform)
    for (auto &statement : file_.statements)
      if (auto *call = std::get_if<ast::CallDecl>(&statement->node))
        candidates.push_back(call->name.name);
  std::string kind = wanted == OperatorKind::Transform ? "" : plan::operatorKindName(wanted);
  diags_.error(name.location, "unknown " + (kind.empty() ? std::string() : kind + " ") +
                                  "operator " + quoted(name.text) +
                                  didYouMean(name.text, candidates) +
                                  " (`orch operators` lists every operator)");
  return nullptr;
}

bool OperatorBinder::bindArguments(ast::OperatorUse &use, const OperatorSignature &signature,
                                   BindingSite site, std::optional<Type> &typeVar) {
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
        diags_.error(argument.location, quoted(op) + " takes at most " + countOf(eligible.size()) +
                                            ", but " + std::to_string(use.arguments.size()) +
                                            " were given");
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
    if (param->role == ParamRole::Input ||
        (param->perRow && site == BindingSite::Everything && !isConstantExpression(value))) {
      // A per-row value of a parameter the operator batches by is an input like the others.
      ok &= checkInput(value, *param, op, typeVar);
      use.bound.push_back(ast::BoundParam{param, &value, std::nullopt});
    } else {
      ok &= checkStatic(value, *param, op, use);
    }
  }
  return ok;
}

std::string OperatorBinder::perRowHint(const OperatorParam &param,
                                       const OperatorSignature &signature) {
  if (param.perRow)
    return "; '" + param.name + "' may vary per row only where the operator is used inline (" +
           signature.name + "(..., " + param.name + ": ...)), not in a 'call' declaration";
  std::string perRow;
  for (const OperatorParam &candidate : signature.params)
    if (candidate.perRow)
      perRow += (perRow.empty() ? "" : ", ") + quoted(candidate.name);
  return perRow.empty() ? "; no parameter of " + quoted(signature.name) + " may vary per row"
                        : "; of the parameters of " + quoted(signature.name) + ", only " + perRow +
                              " may vary per row";
}

void OperatorBinder::reportWrongSite(const ast::Argument &argument, const OperatorParam &param,
                                     const std::string &op, BindingSite site) {
  if (site == BindingSite::CallDeclaration)
    diags_.error(argument.location, "parameter " + quoted(param.name) + " of " + quoted(op) +
                                        " is a dataflow input; pass it where the call is used");
  else
    diags_.error(argument.location, "parameter " + quoted(param.name) + " of " + quoted(op) +
                                        " is a constant fixed where the call is declared");
}

bool OperatorBinder::checkInput(ast::Expr &value, const OperatorParam &param, const std::string &op,
                                std::optional<Type> &typeVar) {
  std::optional<Type> type = typeOf_(value);
  if (!type)
    return false;
  if (unify(param.type, *type, typeVar))
    return true;
  Type expected = typeVar ? plan::substitute(param.type, *typeVar) : param.type;
  diags_.error(value.location,
               "argument " + quoted(param.name) + " of " + quoted(op) + " must be " +
                   expected.str() + ", not " + type->str() +
                   (type->kind() == TypeKind::Json
                        ? "; give the Json value its type, checked when it runs: `... as " +
                              expected.str() + "`"
                        : std::string()));
  return false;
}

bool OperatorBinder::checkStatic(ast::Expr &value, const OperatorParam &param,
                                 const std::string &op, ast::OperatorUse &use) {
  typeOf_(value);
  std::optional<StaticValue> constant = constantValue(value);
  if (!constant) {
    if (mayReportNotConstant(value))
      diags_.error(value.location, "argument " + quoted(param.name) + " of " + quoted(op) +
                                       " must be a constant (a literal or a param)" +
                                       perRowHint(param, *use.signature));
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

void OperatorBinder::checkOptions(ast::OperatorUse &use, const OperatorSignature &signature) {
  // What the options do not set is the operator's default.
  use.callOptions.batch = signature.defaultBatch;
  use.callOptions.inFlight = std::max<int64_t>(1, signature.defaultInFlight);
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
    if (option.none) {
      if (spec->setNone)
        spec->setNone(use.callOptions);
      else
        diags_.error(option.name.location, "option " + quoted(name) + " cannot be none");
      continue;
    }
    if (!option.value)
      continue;
    typeOf_(*option.value);
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
  // GPU memory is placed with the GPU share it comes with.
  if (auto given = seen.find("gpu_memory");
      given != seen.end() && use.callOptions.gpuMemoryBytes > 0 && !(use.callOptions.gpus > 0))
    diags_.error(given->second, "option 'gpu_memory' needs `gpus` (the share of a GPU each "
                                "replica takes)");
}

void OperatorBinder::reportOptionNotAccepted(const OperatorSignature &signature,
                                             const ast::Option &option) {
  const std::string &name = option.name.name;
  if (signature.options.empty())
    diags_.error(option.name.location, std::string(plan::operatorKindName(signature.kind)) + " " +
                                           quoted(signature.name) + " takes no options");
  else if (name == "in_flight" && signature.defaultInFlight == 0)
    diags_.error(option.name.location,
                 quoted(signature.name) +
                     " runs one batch at a time per replica; `in_flight` is for operators that "
                     "wait on a server (llm.*): write `replicas` or `batch` instead");
  else if (!signature.gpu && (name == "gpus" || name == "require_gpu" || name == "gpu_memory"))
    diags_.error(option.name.location,
                 quoted(signature.name) + " has no GPU implementation; remove " + quoted(name));
  else
    diags_.error(option.name.location,
                 quoted(signature.name) + " does not accept option " + quoted(name));
}

bool OperatorBinder::checkOptionValue(const plan::CallOptionSpec &spec, const StaticValue &value,
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

} // namespace orch::frontend
