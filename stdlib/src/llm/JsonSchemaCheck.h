// Checks a model's JSON answer against the JSON Schema its request asked for (llm.json). The
// subset structured-output servers enforce: type (one or a list), properties, required,
// additionalProperties: false, items, enum, const, minItems/maxItems, minimum/maximum,
// minLength/maxLength, anyOf. Anything else in the schema is not checked.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace orch::stdlib {

/// Why `value` does not match `schema` ("at .items[2]: expected integer, got string"), or
/// nullopt when it does.
std::optional<std::string> jsonSchemaMismatch(const nlohmann::json &value,
                                              const nlohmann::json &schema);

/// What is wrong with a schema itself ("at .properties.year: unknown type \"integr\""), or
/// nullopt: types must be JSON Schema's seven.
std::optional<std::string> jsonSchemaProblem(const nlohmann::json &schema);

} // namespace orch::stdlib
