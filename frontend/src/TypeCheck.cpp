// Type checking: gives every param, binding and expression its type. Operator uses are bound
// by OperatorBinding.cpp (lookup, arguments, options); --set overrides are parsed in
// ParamOverrides.cpp.
// Domains (which level of the hierarchy a value lives on) are checked later, on the IR.
#include "orch/frontend/Sema.h"

#include "LiteralDecoder.h"
#include "OperatorBinding.h"
#include "ParamOverrides.h"

#include <set>
#include <unordered_map>
#include <unordered_set>

namespace orch::frontend {
namespace {

using plan::OperatorKind;
using plan::OperatorSignature;
using plan::StaticValue;
using plan::Type;
using plan::TypeKind;

std::string quoted(const std::string &text) { return "'" + text + "'"; }

class TypeChecker {
public:
  TypeChecker(ast::File &file, const plan::OperatorCatalog &catalog,
              const std::vector<ParamOverride> &overrides, DiagnosticEngine &diags)
      : file_(file), diags_(diags),
        binder_(file, catalog, diags, [this](ast::Expr &expr) { return typeOf(expr); }) {
    for (const ParamOverride &override : overrides)
      overrides_[override.name] = override.value;
    for (const ast::Identifier &domain : file.domains)
      domains_.insert(domain.name);
  }

  bool run() {
    unsigned errorsBefore = diags_.errorCount();
    reportOverridesOfUnknownParams(file_, overrides_, diags_);
    for (auto &statement : file_.statements)
      if (!statement->broken)
        checkStatement(*statement);
    return diags_.errorCount() == errorsBefore;
  }

private:
  void checkStatement(ast::Statement &statement) {
    std::visit(ast::Overloaded{
                   [&](ast::ParamDecl &param) { checkParam(param); },
                   [&](ast::SourceDecl &source) { checkSource(statement, source); },
                   [&](ast::CallDecl &call) {
                     checkDeclaredUse(call.use, OperatorKind::Transform,
                                      BindingSite::CallDeclaration);
                   },
                   [&](ast::SinkDecl &sink) {
                     checkDeclaredUse(sink.use, OperatorKind::Sink, BindingSite::Everything);
                   },
                   [&](ast::BindingDecl &binding) { checkBinding(statement, binding); },
                   // Checked before every statement (OperatorDeclarations.cpp): uses bind
                   // against them.
                   [](ast::OperatorDecl &) {},
               },
               statement.node);
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
    const OperatorSignature *signature = binder_.lookup(use.op, kind);
    if (!signature)
      return nullptr;
    use.signature = signature;
    std::optional<Type> typeVar;
    binder_.bindArguments(use, *signature, site, typeVar);
    binder_.checkOptions(use, *signature);
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
    return frontend::resolveTypeExpr(typeExpr, diags_);
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
      std::string suggestion = didYouMean(projection.field.name, names);
      if (suggestion.empty()) {
        suggestion = "; its fields are ";
        for (size_t i = 0; i < names.size(); ++i)
          suggestion += (i ? ", " : "") + quoted(names[i]);
      }
      message += suggestion;
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
    bool optionsValid = true;
    std::set<std::string> given;
    for (ast::ReduceOption &option : reduce.options) {
      if (!given.insert(option.name.name).second) {
        diags_.error(option.name.location,
                     "option " + quoted(option.name.name) + " of reduce is given twice");
        optionsValid = false;
        continue;
      }
      optionsValid &= checkReduceOption(reduce, option);
    }
    return input && optionsValid ? std::optional<Type>(Type::list(*input)) : std::nullopt;
  }

  /// `failed: "skip"` or `failed: "suppress"`, the only option of a reduce.
  bool checkReduceOption(ast::Reduce &reduce, ast::ReduceOption &option) {
    if (option.name.name != "failed") {
      diags_.error(option.name.location, "reduce has no option '" + option.name.name +
                                             "'; its only option is failed: \"skip\" or "
                                             "\"suppress\"");
      return false;
    }
    const auto *literal = option.value ? std::get_if<ast::Literal>(&option.value->node) : nullptr;
    const auto *text = literal ? std::get_if<std::string>(&literal->value) : nullptr;
    if (!text || (*text != "skip" && *text != "suppress")) {
      diags_.error(option.value ? option.value->location : option.name.location,
                   "failed: must be \"skip\" (leave failed members out, and report them) or "
                   "\"suppress\" (the default: a failed member suppresses the list)");
      return false;
    }
    reduce.failed = *text == "skip" ? ast::FailedMembers::Skip : ast::FailedMembers::Suppress;
    return true;
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
    } else if (!invoke.calleeReported) {
      signature = binder_.lookup(invoke.use.op, OperatorKind::Transform);
    }
    if (!signature) {
      for (ast::Argument &argument : invoke.use.arguments)
        if (argument.value)
          typeOf(*argument.value);
      return std::nullopt;
    }
    invoke.use.signature = signature;
    std::optional<Type> typeVar;
    // Every problem of the use at once: its options are checked even when an argument is wrong.
    const bool bound = binder_.bindArguments(invoke.use, *signature, site, typeVar);
    if (!invoke.call)
      binder_.checkOptions(invoke.use, *signature);
    if (!bound)
      return std::nullopt;
    if (signature->result.containsVar())
      return typeVar ? std::optional<Type>(plan::substitute(signature->result, *typeVar))
                     : std::nullopt;
    return signature->result;
  }

  std::optional<Type> typeOfNode(ast::Expr &, ast::ErrorExpr &) { return std::nullopt; }

  // --- expressions ------------------------------------------------------------------------

  static bool isNumber(const Type &type) {
    return type.kind() == TypeKind::Int || type.kind() == TypeKind::Float;
  }
  /// String or Text: one string type at run time.
  static bool isText(const Type &type) {
    return type.kind() == TypeKind::String || type.kind() == TypeKind::Text;
  }
  static bool isScalar(const Type &type) {
    return isNumber(type) || type.kind() == TypeKind::Bool || isText(type) ||
           type.kind() == TypeKind::Json;
  }
  /// Json needs a type before arithmetic or a comparison: say how to give it one.
  static std::string jsonHint(const std::vector<Type> &types) {
    for (const Type &type : types)
      if (type.kind() == TypeKind::Json)
        return "; give a Json value a type first, as in `rows.count as Int`";
    return "";
  }
  /// The type both `a` and `b` fit: the same type, or Float for an Int and a Float.
  static std::optional<Type> commonType(const Type &a, const Type &b) {
    if (isNumber(a) && isNumber(b))
      return a.kind() == TypeKind::Int && b.kind() == TypeKind::Int ? a
                                                                    : Type::scalar(TypeKind::Float);
    if (isAssignable(a, b))
      return b;
    if (isAssignable(b, a))
      return a;
    return std::nullopt;
  }

  std::optional<Type> typeOfNode(ast::Expr &expr, ast::Compute &compute) {
    using plan::ComputeOp;
    std::vector<Type> types;
    bool known = true;
    for (ast::ExprPtr &operand : compute.operands) {
      std::optional<Type> type = operand ? typeOf(*operand) : std::nullopt;
      known &= type.has_value();
      types.push_back(type.value_or(Type()));
    }
    std::optional<Type> target;
    if (compute.op == ComputeOp::Cast && compute.castType)
      target = resolveTypeExpr(*compute.castType);
    if (!known || types.empty())
      return std::nullopt;
    const std::string op = quoted(plan::computeOpSpelling(compute.op));
    auto operandsText = [&] {
      std::string text;
      for (size_t i = 0; i < types.size(); ++i)
        text += (i ? (i + 1 == types.size() ? " and " : ", ") : "") + types[i].str();
      return text;
    };
    auto fail = [&](const std::string &message) -> std::optional<Type> {
      diags_.error(expr.location, message);
      return std::nullopt;
    };
    const Type boolean = Type::scalar(TypeKind::Bool);
    switch (compute.op) {
    case ComputeOp::Add:
      if (isText(types[0]) && isText(types[1]))
        return Type::scalar(TypeKind::String);
      [[fallthrough]];
    case ComputeOp::Subtract:
    case ComputeOp::Multiply:
    case ComputeOp::Divide:
    case ComputeOp::Remainder:
      if (isNumber(types[0]) && isNumber(types[1]))
        return commonType(types[0], types[1]);
      return fail(op + " needs two numbers" +
                  (compute.op == ComputeOp::Add ? std::string(" or two Strings") : "") + ", not " +
                  operandsText() + jsonHint(types));
    case ComputeOp::Negate:
      if (isNumber(types[0]))
        return types[0];
      return fail("'-' needs a number, not " + types[0].str() + jsonHint(types));
    case ComputeOp::Equal:
    case ComputeOp::NotEqual:
      if (isScalar(types[0]) && types[0].kind() != TypeKind::Json && commonType(types[0], types[1]))
        return boolean;
      return fail(op + " compares two values of one type (Bool, Int, Float or String), not " +
                  operandsText() + jsonHint(types));
    case ComputeOp::Less:
    case ComputeOp::LessEqual:
    case ComputeOp::Greater:
    case ComputeOp::GreaterEqual:
      if ((isNumber(types[0]) && isNumber(types[1])) || (isText(types[0]) && isText(types[1])))
        return boolean;
      return fail(op + " orders two numbers or two Strings, not " + operandsText() +
                  jsonHint(types));
    case ComputeOp::And:
    case ComputeOp::Or:
    case ComputeOp::Not:
      for (const Type &type : types)
        if (type.kind() != TypeKind::Bool)
          return fail(op + " needs Bool, not " + operandsText() + jsonHint(types));
      return boolean;
    case ComputeOp::If: {
      if (types[0].kind() != TypeKind::Bool) {
        diags_.error(compute.operands[0]->location,
                     "the condition of 'if' must be Bool, not " + types[0].str());
        return std::nullopt;
      }
      if (std::optional<Type> common = commonType(types[1], types[2]))
        return common;
      return fail("the branches of 'if' have different types: " + types[1].str() + " and " +
                  types[2].str());
    }
    case ComputeOp::Coalesce: {
      std::optional<Type> common = types[0];
      for (size_t i = 1; common && i < types.size(); ++i)
        common = commonType(*common, types[i]);
      if (common)
        return common;
      return fail("the values 'coalesce' merges must have one type, not " + operandsText());
    }
    case ComputeOp::ToString:
      if (isScalar(types[0]))
        return Type::scalar(TypeKind::String);
      return fail("'string' converts Bool, Int, Float, String or Json, not " + types[0].str());
    case ComputeOp::ToInt:
    case ComputeOp::ToFloat:
      if (isScalar(types[0]))
        return Type::scalar(compute.op == ComputeOp::ToInt ? TypeKind::Int : TypeKind::Float);
      return fail(op + " converts Bool, Int, Float, String or Json, not " + types[0].str());
    case ComputeOp::Ordinal:
      return Type::scalar(TypeKind::Int);
    case ComputeOp::Format: {
      if (types[0].kind() != TypeKind::String && types[0].kind() != TypeKind::Text)
        return fail("the first argument of 'format' is its text, a String, not " + types[0].str());
      for (size_t i = 1; i < types.size(); ++i)
        if (!isScalar(types[i]))
          return fail("'format' writes Bool, Int, Float, String or Json values, not " +
                      types[i].str());
      // A constant text is checked now: one value per `{}`.
      if (auto *literal = std::get_if<ast::Literal>(&compute.operands[0]->node))
        if (auto *text = std::get_if<std::string>(&literal->value)) {
          std::optional<size_t> holes = plan::formatHoles(*text);
          if (!holes)
            return fail("a lone '{' or '}' in the text of 'format' (a brace of the text is "
                        "written twice)");
          if (*holes != types.size() - 1)
            return fail("the text of 'format' has " + std::to_string(*holes) + " '{}' but " +
                        std::to_string(types.size() - 1) +
                        (types.size() == 2 ? " value follows it" : " values follow it"));
        }
      return Type::scalar(TypeKind::String);
    }
    case ComputeOp::Length:
      if (types[0].kind() == TypeKind::String || types[0].kind() == TypeKind::Text ||
          types[0].kind() == TypeKind::Bytes || types[0].isList())
        return Type::scalar(TypeKind::Int);
      return fail("'len' measures a String, Bytes or a List, not " + types[0].str() +
                  jsonHint(types));
    case ComputeOp::NonBlank:
      if (types[0].kind() == TypeKind::String || types[0].kind() == TypeKind::Text)
        return boolean;
      return fail("'text.nonempty' needs a String, not " + types[0].str());
    case ComputeOp::Cast:
      if (!target)
        return std::nullopt;
      if (types[0].kind() == TypeKind::Json || isAssignable(types[0], *target))
        return target;
      return fail("'as' gives a Json value its type (checked when it runs); " + types[0].str() +
                  " is not Json and is not " + target->str() +
                  (target->kind() == TypeKind::String || target->kind() == TypeKind::Int ||
                           target->kind() == TypeKind::Float
                       ? "; convert it with " +
                             std::string(target->kind() == TypeKind::String ? "string(...)"
                                         : target->kind() == TypeKind::Int  ? "int(...)"
                                                                            : "float(...)")
                       : std::string()));
    }
    return std::nullopt;
  }

  ast::File &file_;
  DiagnosticEngine &diags_;
  OperatorBinder binder_;
  std::unordered_map<std::string, std::string> overrides_;
  std::unordered_set<std::string> domains_;
  std::unordered_map<const ast::Statement *, std::optional<Type>> valueTypes_;
};

} // namespace

std::optional<Type> resolveTypeExpr(const ast::TypeExpr &typeExpr, DiagnosticEngine &diags) {
  if (typeExpr.isRecord) {
    std::vector<plan::RecordField> fields;
    std::unordered_map<std::string, SourceLocation> seen;
    for (const ast::TypeField &field : typeExpr.fields) {
      if (auto [existing, inserted] = seen.emplace(field.name.name, field.name.location);
          !inserted) {
        diags.error(field.name.location, "field " + quoted(field.name.name) + " appears twice")
            .attachNote(existing->second, "first given here");
        return std::nullopt;
      }
      std::optional<Type> type = resolveTypeExpr(*field.type, diags);
      if (!type)
        return std::nullopt;
      fields.push_back({field.name.name, *type});
    }
    return Type::record(std::move(fields));
  }
  const std::string &name = typeExpr.name.name;
  if (name == "List") {
    if (typeExpr.arguments.size() != 1) {
      diags.error(typeExpr.location, "List takes exactly one type argument, as in List<Text>");
      return std::nullopt;
    }
    std::optional<Type> element = resolveTypeExpr(typeExpr.arguments.front(), diags);
    return element ? std::optional<Type>(Type::list(*element)) : std::nullopt;
  }
  std::optional<TypeKind> kind = plan::typeKindNamed(name);
  if (!kind) {
    std::vector<std::string> names = {"List"};
    for (std::string_view known : plan::namedTypeKinds())
      names.emplace_back(known);
    diags.error(typeExpr.name.location, "unknown type " + quoted(name) + didYouMean(name, names));
    return std::nullopt;
  }
  if (!typeExpr.arguments.empty()) {
    diags.error(typeExpr.location, "type " + quoted(name) + " takes no type arguments");
    return std::nullopt;
  }
  return Type::scalar(*kind);
}

bool checkTypes(ast::File &file, const plan::OperatorCatalog &catalog,
                const std::vector<ParamOverride> &overrides, DiagnosticEngine &diags) {
  const bool declarationsOk = declareOperators(file, catalog, diags);
  const bool usesOk = TypeChecker(file, *file.catalog, overrides, diags).run();
  return declarationsOk && usesOk;
}

} // namespace orch::frontend
