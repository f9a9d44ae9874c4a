// Value construction, comparison, printing and shape checks against plan types.
#include "orch/runtime/values/Value.h"

#include "orch/plan/StaticValue.h"

#include <cmath>
#include <cstdio>

namespace orch::runtime {

Value Value::string(std::string text) {
  return Value(Storage(std::make_shared<const std::string>(std::move(text))));
}

Value Value::bytes(std::string data) {
  return Value(Storage(std::make_shared<const ByteString>(ByteString{std::move(data)})));
}

Value Value::list(ValueList elements) {
  return Value(Storage(std::make_shared<const ValueList>(std::move(elements))));
}

Value Value::record(RecordFields fields) {
  return Value(Storage(std::make_shared<const RecordFields>(std::move(fields))));
}

Value Value::ref(std::shared_ptr<const ValueRef> reference) {
  return Value(Storage(std::move(reference)));
}

double Value::asFloat() const {
  if (const int64_t *integer = std::get_if<int64_t>(&storage_))
    return static_cast<double>(*integer);
  return std::get<double>(storage_);
}

const Value *Value::field(std::string_view name) const {
  if (kind() != Kind::Record)
    return nullptr;
  for (const auto &[fieldName, fieldValue] : asRecord())
    if (fieldName == name)
      return &fieldValue;
  return nullptr;
}

bool Value::sharesPayloadWith(const Value &other) const {
  if (storage_.index() != other.storage_.index())
    return false;
  return std::visit(
      [&other](const auto &mine) {
        using T = std::decay_t<decltype(mine)>;
        if constexpr (std::is_same_v<T, StringPtr> || std::is_same_v<T, BytesPtr> ||
                      std::is_same_v<T, ListPtr> || std::is_same_v<T, RecordPtr> ||
                      std::is_same_v<T, RefPtr>)
          return mine && mine == std::get<T>(other.storage_);
        else
          return false;
      },
      storage_);
}

bool operator==(const Value &a, const Value &b) {
  if (a.kind() != b.kind())
    return false;
  switch (a.kind()) {
  case Value::Kind::Null:
    return true;
  case Value::Kind::Bool:
    return a.asBool() == b.asBool();
  case Value::Kind::Int:
    return a.asInt() == b.asInt();
  case Value::Kind::Float:
    return a.asFloat() == b.asFloat();
  case Value::Kind::String:
    return a.asString() == b.asString();
  case Value::Kind::Bytes:
    return a.asBytes() == b.asBytes();
  case Value::Kind::List:
    return a.asList() == b.asList();
  case Value::Kind::Record:
    return a.asRecord() == b.asRecord();
  case Value::Kind::Ref:
    return a.asRef() == b.asRef();
  }
  return false;
}

uint64_t approximateBytes(const Value &value) {
  constexpr uint64_t kPerValue = 16;
  switch (value.kind()) {
  case Value::Kind::String:
    return kPerValue + value.asString().size();
  case Value::Kind::Bytes:
    return kPerValue + value.asBytes().size();
  case Value::Kind::List: {
    uint64_t bytes = kPerValue;
    // Lists of numbers are common and long (a document's page ordinals): no call per number.
    for (const Value &element : value.asList())
      bytes += element.kind() <= Value::Kind::Float ? kPerValue : approximateBytes(element);
    return bytes;
  }
  case Value::Kind::Record: {
    uint64_t bytes = kPerValue;
    for (const auto &[name, field] : value.asRecord())
      bytes += name.size() + approximateBytes(field);
    return bytes;
  }
  case Value::Kind::Ref:
    return value.asRef().bytes;
  default:
    return kPerValue;
  }
}

const char *valueKindName(Value::Kind kind) {
  switch (kind) {
  case Value::Kind::Null:
    return "null";
  case Value::Kind::Bool:
    return "Bool";
  case Value::Kind::Int:
    return "Int";
  case Value::Kind::Float:
    return "Float";
  case Value::Kind::String:
    return "String";
  case Value::Kind::Bytes:
    return "Bytes";
  case Value::Kind::List:
    return "List";
  case Value::Kind::Record:
    return "Record";
  case Value::Kind::Ref:
    return "Ref";
  }
  return "?";
}

namespace {

void appendValue(std::string &out, const Value &value) {
  switch (value.kind()) {
  case Value::Kind::Null:
    out += "null";
    return;
  case Value::Kind::Bool:
    out += value.asBool() ? "true" : "false";
    return;
  case Value::Kind::Int:
    out += std::to_string(value.asInt());
    return;
  case Value::Kind::Float: {
    char text[32];
    std::snprintf(text, sizeof text, "%.17g", value.asFloat());
    out += text;
    return;
  }
  case Value::Kind::String:
    out += plan::quoteString(value.asString());
    return;
  case Value::Kind::Bytes:
    out += "<" + std::to_string(value.asBytes().size()) + " bytes>";
    return;
  case Value::Kind::List: {
    out += '[';
    const char *separator = "";
    for (const Value &element : value.asList()) {
      out += separator;
      appendValue(out, element);
      separator = ", ";
    }
    out += ']';
    return;
  }
  case Value::Kind::Record: {
    out += '{';
    const char *separator = "";
    for (const auto &[name, fieldValue] : value.asRecord()) {
      out += separator;
      out += plan::quoteString(name);
      out += ": ";
      appendValue(out, fieldValue);
      separator = ", ";
    }
    out += '}';
    return;
  }
  case Value::Kind::Ref:
    out +=
        "<" + std::to_string(value.asRef().bytes) + " bytes kept by " + value.asRef().owner + ">";
    return;
  }
}

/// Where a checked value is inside the value checked: a chain of steps back to the top,
/// rendered (".pages[3].text") only when a check fails: a value that passes builds no text.
struct PathStep {
  const PathStep *outer = nullptr;
  std::string_view field;  // a record's field, or
  size_t index = SIZE_MAX; // a list's element
};

std::string render(const PathStep *step) {
  if (!step)
    return "";
  std::string text = render(step->outer);
  if (step->index != SIZE_MAX)
    text += "[" + std::to_string(step->index) + "]";
  else
    text += "." + std::string(step->field);
  return text;
}

std::optional<std::string> mismatch(const plan::Type &type, const Value &value,
                                    const PathStep *where) {
  std::string text = "expected " + type.str() + ", got " + value.str();
  if (text.size() > 200)
    text = text.substr(0, 197) + "...";
  if (where)
    text += " at " + render(where);
  return text;
}

std::optional<std::string> checkAt(const Value &value, const plan::Type &type,
                                   const PathStep *where) {
  using plan::TypeKind;
  switch (type.kind()) {
  case TypeKind::Json:
  case TypeKind::Var:
    return std::nullopt;
  case TypeKind::Bool:
    if (value.kind() != Value::Kind::Bool)
      return mismatch(type, value, where);
    return std::nullopt;
  case TypeKind::Int:
  case TypeKind::Duration:
  case TypeKind::Size:
    if (value.kind() != Value::Kind::Int)
      return mismatch(type, value, where);
    return std::nullopt;
  case TypeKind::Float:
    if (value.kind() != Value::Kind::Float && value.kind() != Value::Kind::Int)
      return mismatch(type, value, where);
    return std::nullopt;
  case TypeKind::String:
  case TypeKind::Text:
    if (value.kind() != Value::Kind::String)
      return mismatch(type, value, where);
    return std::nullopt;
  case TypeKind::Bytes:
    if (value.kind() != Value::Kind::Bytes)
      return mismatch(type, value, where);
    return std::nullopt;
  case TypeKind::File:
  case TypeKind::Image:
  case TypeKind::PdfPage:
  case TypeKind::Video:
  case TypeKind::Clip:
  case TypeKind::Frame:
    if (value.kind() != Value::Kind::Record)
      return mismatch(type, value, where);
    return std::nullopt;
  case TypeKind::List: {
    if (value.kind() != Value::Kind::List)
      return mismatch(type, value, where);
    const ValueList &elements = value.asList();
    for (size_t i = 0; i < elements.size(); ++i) {
      const PathStep step{where, {}, i};
      if (auto problem = checkAt(elements[i], type.element(), &step))
        return problem;
    }
    return std::nullopt;
  }
  case TypeKind::Record: {
    if (value.kind() != Value::Kind::Record)
      return mismatch(type, value, where);
    for (const plan::RecordField &expected : type.fields()) {
      const Value *actual = value.field(expected.name);
      if (!actual)
        return "missing field '" + expected.name + "' in " + value.str().substr(0, 200) +
               (where ? " at " + render(where) : "");
      const PathStep step{where, expected.name};
      if (auto problem = checkAt(*actual, expected.type, &step))
        return problem;
    }
    return std::nullopt;
  }
  }
  return std::nullopt;
}

} // namespace

std::string Value::str() const {
  std::string out;
  appendValue(out, *this);
  return out;
}

std::optional<std::string> checkValueType(const Value &value, const plan::Type &type) {
  // The worker that keeps a referenced value checked it before it made the reference.
  if (value.kind() == Value::Kind::Ref)
    return std::nullopt;
  return checkAt(value, type, nullptr);
}

} // namespace orch::runtime
