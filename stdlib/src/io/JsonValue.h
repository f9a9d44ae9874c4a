// Conversions between run-time values and JSON, for JSON Lines sources and sinks. Objects keep
// their field order both ways (ordered_json).
#pragma once

#include "orch/runtime/Value.h"

#include <nlohmann/json.hpp>

namespace orch::stdlib {

runtime::Value valueFromJson(const nlohmann::ordered_json &json);
/// Bytes become base64 strings; non-finite floats become null.
nlohmann::ordered_json jsonFromValue(const runtime::Value &value);

} // namespace orch::stdlib
