// Types of .orch values: scalars, domain objects (File, PdfPage, ...), List<T> and records.
// Types are part of the contract: the compiler checks them, the plan records them, and the
// runtime validates operator results against them.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace orch::plan {

enum class TypeKind : uint8_t {
  Bool,
  Int,
  Float,
  String,
  Bytes,
  Json,
  File,
  Image,
  Text,
  PdfPage,
  Video,
  Clip,
  Frame,
  Duration,
  Size,
  List,
  Record,
  /// The type variable `T` of generic operator signatures (`list.len: List<T> -> Int`).
  Var,
};

struct RecordField;

/// A small immutable value; List and Record share their parts.
class Type {
public:
  Type() : kind_(TypeKind::Json) {}
  static Type scalar(TypeKind kind) { return Type(kind); }
  static Type list(Type element);
  static Type record(std::vector<RecordField> fields);
  static Type var() { return Type(TypeKind::Var); }

  TypeKind kind() const { return kind_; }
  bool isList() const { return kind_ == TypeKind::List; }
  bool isRecord() const { return kind_ == TypeKind::Record; }
  /// The element type of a List.
  const Type &element() const { return *element_; }
  /// The fields of a Record, in declaration order.
  const std::vector<RecordField> &fields() const { return *fields_; }
  bool containsVar() const;

  /// "List<Text>", "{path: String, pages: Int}".
  std::string str() const;

  friend bool operator==(const Type &a, const Type &b);

private:
  explicit Type(TypeKind kind) : kind_(kind) {}

  TypeKind kind_;
  std::shared_ptr<const Type> element_;
  std::shared_ptr<const std::vector<RecordField>> fields_;
};

struct RecordField {
  std::string name;
  Type type;
  friend bool operator==(const RecordField &, const RecordField &) = default;
};

/// The scalar or object type spelled `name` ("Text", "PdfPage"); nullopt for anything else,
/// including "List" and "Record", which take arguments.
std::optional<TypeKind> typeKindNamed(std::string_view name);
/// The names typeKindNamed accepts, for messages.
std::vector<std::string_view> namedTypeKinds();

/// Fields readable by projection (`docs.stem`) on a value of this type; Json allows any field
/// (returning Json); records have their own fields. Empty when the type has none.
std::vector<RecordField> projectableFields(const Type &type);

/// Whether a value of type `from` may be used where `to` is expected: equal types, Int where
/// Float is expected, Text where String is expected, element-wise for lists and records.
bool isAssignable(const Type &from, const Type &to);

/// Matches an argument type against a parameter type that may mention the variable `T`,
/// binding it on first use. Returns false when they do not fit.
bool unify(const Type &parameter, const Type &argument, std::optional<Type> &binding);

/// `type` with `T` replaced by `binding`.
Type substitute(const Type &type, const Type &binding);

} // namespace orch::plan
