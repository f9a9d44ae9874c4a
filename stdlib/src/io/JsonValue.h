// Conversions between run-time values and JSON, for JSON Lines sources and sinks. Objects keep
// their field order both ways (ordered_json).
#pragma once

#include "orch/runtime/values/Value.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace orch::stdlib {

/// The deepest JSON that is read: untrusted input nested deeper (`[[[[…`) would exhaust the stack
/// of everything that walks values recursively.
constexpr size_t kMaxJsonDepth = 512;

/// "nested deeper than 512 levels" when `text`'s arrays and objects nest deeper than
/// kMaxJsonDepth (a scan of its brackets outside strings), else nullopt. Call it before parsing.
std::optional<std::string> jsonNestedTooDeep(std::string_view text);

runtime::Value valueFromJson(const nlohmann::ordered_json &json);
/// Standard base64 with padding (how Bytes appear in JSON, and images in data URLs).
std::string base64(const std::string &data);
/// What a JSON sink does with a non-finite number, which JSON cannot hold.
enum class NonFinite { Fail, Null };

/// Bytes become base64 strings. A non-finite float throws runtime::UnwritableValue naming where
/// it is (`NaN at .scores[3] cannot be written as JSON`), or becomes null with NonFinite::Null.
nlohmann::ordered_json jsonFromValue(const runtime::Value &value,
                                     NonFinite nonFinite = NonFinite::Fail);

} // namespace orch::stdlib
