// Construction, printing and compatibility rules of .orch types.
#include "orch/plan/Type.h"

#include <array>

namespace orch::plan {
namespace {

struct NamedKind {
  std::string_view name;
  TypeKind kind;
};

constexpr std::array<NamedKind, 15> kNamedKinds = {{
    {"Bool", TypeKind::Bool},
    {"Int", TypeKind::Int},
    {"Float", TypeKind::Float},
    {"String", TypeKind::String},
    {"Bytes", TypeKind::Bytes},
    {"Json", TypeKind::Json},
    {"File", TypeKind::File},
    {"Image", TypeKind::Image},
    {"Text", TypeKind::Text},
    {"PdfPage", TypeKind::PdfPage},
    {"Video", TypeKind::Video},
    {"Clip", TypeKind::Clip},
    {"Frame", TypeKind::Frame},
    {"Duration", TypeKind::Duration},
    {"Size", TypeKind::Size},
}};

Type stringType() { return Type::scalar(TypeKind::String); }
Type intType() { return Type::scalar(TypeKind::Int); }
Type floatType() { return Type::scalar(TypeKind::Float); }

} // namespace

Type Type::list(Type element) {
  Type type(TypeKind::List);
  type.element_ = std::make_shared<const Type>(std::move(element));
  return type;
}

Type Type::record(std::vector<RecordField> fields) {
  Type type(TypeKind::Record);
  type.fields_ = std::make_shared<const std::vector<RecordField>>(std::move(fields));
  return type;
}

bool Type::containsVar() const {
  if (kind_ == TypeKind::Var)
    return true;
  if (kind_ == TypeKind::List)
    return element_->containsVar();
  if (kind_ == TypeKind::Record)
    for (const RecordField &field : *fields_)
      if (field.type.containsVar())
        return true;
  return false;
}

std::string Type::str() const {
  switch (kind_) {
  case TypeKind::List:
    return "List<" + element_->str() + ">";
  case TypeKind::Record: {
    std::string out = "{";
    for (size_t i = 0; i < fields_->size(); ++i)
      out += (i ? ", " : "") + (*fields_)[i].name + ": " + (*fields_)[i].type.str();
    return out + "}";
  }
  case TypeKind::Var:
    return "T";
  default:
    for (const NamedKind &named : kNamedKinds)
      if (named.kind == kind_)
        return std::string(named.name);
    return "?";
  }
}

bool operator==(const Type &a, const Type &b) {
  if (a.kind_ != b.kind_)
    return false;
  if (a.kind_ == TypeKind::List)
    return *a.element_ == *b.element_;
  if (a.kind_ == TypeKind::Record)
    return *a.fields_ == *b.fields_;
  return true;
}

std::optional<TypeKind> typeKindNamed(std::string_view name) {
  for (const NamedKind &named : kNamedKinds)
    if (named.name == name)
      return named.kind;
  return std::nullopt;
}

std::vector<std::string_view> namedTypeKinds() {
  std::vector<std::string_view> names;
  for (const NamedKind &named : kNamedKinds)
    names.push_back(named.name);
  return names;
}

std::vector<RecordField> projectableFields(const Type &type) {
  switch (type.kind()) {
  case TypeKind::Record:
    return type.fields();
  case TypeKind::File:
  case TypeKind::Video:
    return {{"path", stringType()},
            {"name", stringType()},
            {"stem", stringType()},
            {"size", intType()}};
  case TypeKind::PdfPage:
    return {{"index", intType()}, {"width", floatType()}, {"height", floatType()}};
  case TypeKind::Image:
    return {{"width", intType()}, {"height", intType()}};
  case TypeKind::Clip:
    return {{"index", intType()}, {"start", floatType()}, {"end", floatType()}};
  case TypeKind::Frame:
    return {{"index", intType()}, {"time", floatType()}};
  default:
    return {};
  }
}

bool isAssignable(const Type &from, const Type &to) {
  if (from == to || to.kind() == TypeKind::Var)
    return true;
  if (from.kind() == TypeKind::Int && to.kind() == TypeKind::Float)
    return true;
  // One string type at run time: text operators return Text, sources and literals give
  // String, and each is accepted where the other is expected.
  if ((from.kind() == TypeKind::Text && to.kind() == TypeKind::String) ||
      (from.kind() == TypeKind::String && to.kind() == TypeKind::Text))
    return true;
  if (from.isList() && to.isList())
    return isAssignable(from.element(), to.element());
  if (from.isRecord() && to.isRecord()) {
    if (from.fields().size() != to.fields().size())
      return false;
    for (size_t i = 0; i < from.fields().size(); ++i)
      if (from.fields()[i].name != to.fields()[i].name ||
          !isAssignable(from.fields()[i].type, to.fields()[i].type))
        return false;
    return true;
  }
  return false;
}

bool unify(const Type &parameter, const Type &argument, std::optional<Type> &binding) {
  if (parameter.kind() == TypeKind::Var) {
    if (!binding) {
      binding = argument;
      return true;
    }
    return isAssignable(argument, *binding);
  }
  if (parameter.isList() && argument.isList())
    return unify(parameter.element(), argument.element(), binding);
  return isAssignable(argument, parameter);
}

Type substitute(const Type &type, const Type &binding) {
  switch (type.kind()) {
  case TypeKind::Var:
    return binding;
  case TypeKind::List:
    return Type::list(substitute(type.element(), binding));
  case TypeKind::Record: {
    std::vector<RecordField> fields;
    for (const RecordField &field : type.fields())
      fields.push_back({field.name, substitute(field.type, binding)});
    return Type::record(std::move(fields));
  }
  default:
    return type;
  }
}

} // namespace orch::plan
