// The JSON Schema subset of JsonSchemaCheck.h, walked recursively (the value is bounded: a
// reply nested deeper than 512 levels is refused before it gets here).
#include "llm/JsonSchemaCheck.h"

#include <algorithm>
#include <vector>

namespace orch::stdlib {
namespace {

using nlohmann::json;

std::string typeName(const json &value) {
  if (value.is_null())
    return "null";
  if (value.is_boolean())
    return "boolean";
  if (value.is_number_integer() || value.is_number_unsigned())
    return "integer";
  if (value.is_number())
    return "number";
  if (value.is_string())
    return "string";
  if (value.is_array())
    return "array";
  return "object";
}

bool hasType(const json &value, const std::string &type) {
  const std::string actual = typeName(value);
  if (type == "number")
    return actual == "number" || actual == "integer";
  if (type == "integer" && actual == "number") {
    const double number = value.get<double>();
    return number == double(int64_t(number));
  }
  return actual == type;
}

std::string at(const std::string &path) { return path.empty() ? "at the top" : "at " + path; }

std::optional<std::string> mismatchAt(const json &value, const json &schema,
                                      const std::string &path) {
  if (!schema.is_object())
    return std::nullopt;
  // ("type" may also be a property's name, under "properties": then it holds a schema.)
  if (auto type = schema.find("type");
      type != schema.end() && (type->is_string() || type->is_array())) {
    bool matches = false;
    std::string wanted;
    if (type->is_string()) {
      matches = hasType(value, type->get<std::string>());
      wanted = type->get<std::string>();
    } else if (type->is_array()) {
      for (const json &one : *type)
        if (one.is_string()) {
          matches = matches || hasType(value, one.get<std::string>());
          wanted += (wanted.empty() ? "" : " or ") + one.get<std::string>();
        }
    } else {
      matches = true;
    }
    if (!matches)
      return at(path) + ": expected " + wanted + ", got " + typeName(value);
  }
  if (auto allowed = schema.find("enum");
      allowed != schema.end() && allowed->is_array() &&
      std::find(allowed->begin(), allowed->end(), value) == allowed->end())
    return at(path) + ": " + value.dump() + " is not one of " + allowed->dump();
  if (auto constant = schema.find("const"); constant != schema.end() && *constant != value)
    return at(path) + ": expected " + constant->dump() + ", got " + value.dump();
  if (auto any = schema.find("anyOf"); any != schema.end() && any->is_array()) {
    std::optional<std::string> first;
    bool matched = false;
    for (const json &option : *any) {
      std::optional<std::string> problem = mismatchAt(value, option, path);
      matched = matched || !problem;
      if (problem && !first)
        first = problem;
    }
    if (!matched && first)
      return at(path) + ": matches none of anyOf (first: " + *first + ")";
  }
  if (value.is_number()) {
    const double number = value.get<double>();
    if (auto minimum = schema.find("minimum");
        minimum != schema.end() && minimum->is_number() && number < minimum->get<double>())
      return at(path) + ": " + value.dump() + " is below the minimum " + minimum->dump();
    if (auto maximum = schema.find("maximum");
        maximum != schema.end() && maximum->is_number() && number > maximum->get<double>())
      return at(path) + ": " + value.dump() + " is above the maximum " + maximum->dump();
  }
  if (value.is_string()) {
    const size_t length = value.get_ref<const std::string &>().size();
    if (auto minimum = schema.find("minLength");
        minimum != schema.end() && minimum->is_number_unsigned() && length < minimum->get<size_t>())
      return at(path) + ": shorter than minLength " + minimum->dump();
    if (auto maximum = schema.find("maxLength");
        maximum != schema.end() && maximum->is_number_unsigned() && length > maximum->get<size_t>())
      return at(path) + ": longer than maxLength " + maximum->dump();
  }
  if (value.is_array()) {
    if (auto minimum = schema.find("minItems"); minimum != schema.end() &&
                                                minimum->is_number_unsigned() &&
                                                value.size() < minimum->get<size_t>())
      return at(path) + ": fewer than minItems " + minimum->dump();
    if (auto maximum = schema.find("maxItems"); maximum != schema.end() &&
                                                maximum->is_number_unsigned() &&
                                                value.size() > maximum->get<size_t>())
      return at(path) + ": more than maxItems " + maximum->dump();
    if (auto items = schema.find("items"); items != schema.end())
      for (size_t i = 0; i < value.size(); ++i)
        if (std::optional<std::string> problem =
                mismatchAt(value[i], *items, path + "[" + std::to_string(i) + "]"))
          return problem;
  }
  if (value.is_object()) {
    const json *properties = nullptr;
    if (auto found = schema.find("properties"); found != schema.end() && found->is_object())
      properties = &*found;
    if (auto required = schema.find("required"); required != schema.end() && required->is_array())
      for (const json &name : *required)
        if (name.is_string() && !value.contains(name.get<std::string>()))
          return at(path) + ": missing required field \"" + name.get<std::string>() + "\"";
    for (auto field = value.begin(); field != value.end(); ++field) {
      const std::string fieldPath = path + "." + field.key();
      if (properties && properties->contains(field.key())) {
        if (std::optional<std::string> problem =
                mismatchAt(field.value(), (*properties)[field.key()], fieldPath))
          return problem;
      } else if (auto extra = schema.find("additionalProperties");
                 extra != schema.end() && extra->is_boolean() && !extra->get<bool>()) {
        return at(path) + ": unexpected field \"" + field.key() + "\"";
      }
    }
  }
  return std::nullopt;
}

std::optional<std::string> problemAt(const json &schema, const std::string &path) {
  if (schema.is_array()) {
    for (size_t i = 0; i < schema.size(); ++i)
      if (std::optional<std::string> problem =
              problemAt(schema[i], path + "[" + std::to_string(i) + "]"))
        return problem;
    return std::nullopt;
  }
  if (!schema.is_object())
    return std::nullopt;
  static const std::vector<std::string> kTypes = {"null",   "boolean", "integer", "number",
                                                  "string", "array",   "object"};
  // ("type" may also be a property's name, under "properties": then it holds a schema.)
  if (auto type = schema.find("type");
      type != schema.end() && (type->is_string() || type->is_array())) {
    const json types = type->is_array() ? *type : json::array({*type});
    for (const json &one : types)
      if (!one.is_string() ||
          std::find(kTypes.begin(), kTypes.end(), one.get<std::string>()) == kTypes.end())
        return at(path) + ": unknown type " + one.dump() +
               " (null, boolean, integer, number, string, array or object)";
  }
  for (auto entry = schema.begin(); entry != schema.end(); ++entry)
    if (entry.key() != "enum" && entry.key() != "const" &&
        (entry.key() != "type" || entry.value().is_object()))
      if (std::optional<std::string> problem = problemAt(entry.value(), path + "." + entry.key()))
        return problem;
  return std::nullopt;
}

} // namespace

std::optional<std::string> jsonSchemaProblem(const nlohmann::json &schema) {
  return problemAt(schema, "");
}

std::optional<std::string> jsonSchemaMismatch(const nlohmann::json &value,
                                              const nlohmann::json &schema) {
  return mismatchAt(value, schema, "");
}

} // namespace orch::stdlib
