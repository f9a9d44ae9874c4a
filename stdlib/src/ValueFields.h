// Reading typed fields of record values (domain objects such as File, PdfPage, Clip, Frame).
#pragma once

#include "orch/runtime/values/Value.h"

#include <optional>
#include <string>

namespace orch::stdlib {

/// The String field `name`, or nullptr when missing or of another kind.
inline const std::string *stringField(const runtime::Value &value, const char *name) {
  const runtime::Value *field = value.field(name);
  return field && field->kind() == runtime::Value::Kind::String ? &field->asString() : nullptr;
}

/// The numeric (Int or Float) field `name`, or nullopt.
inline std::optional<double> numberField(const runtime::Value &value, const char *name) {
  const runtime::Value *field = value.field(name);
  if (!field ||
      (field->kind() != runtime::Value::Kind::Float && field->kind() != runtime::Value::Kind::Int))
    return std::nullopt;
  return field->asFloat();
}

} // namespace orch::stdlib
