// Value <-> JSON.
#include "JsonValue.h"

#include "orch/runtime/operators/Operator.h"

#include <cmath>

namespace orch::stdlib {

using runtime::Value;

std::optional<std::string> jsonNestedTooDeep(std::string_view text) {
  size_t depth = 0;
  bool inString = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (inString) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        inString = false;
    } else if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth)
        return "nested deeper than " + std::to_string(kMaxJsonDepth) + " levels";
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::nullopt;
}

Value valueFromJson(const nlohmann::ordered_json &json) {
  switch (json.type()) {
  case nlohmann::ordered_json::value_t::null:
  case nlohmann::ordered_json::value_t::discarded:
    return Value();
  case nlohmann::ordered_json::value_t::boolean:
    return Value::boolean(json.get<bool>());
  case nlohmann::ordered_json::value_t::number_integer:
    return Value::integer(json.get<int64_t>());
  case nlohmann::ordered_json::value_t::number_unsigned: {
    const uint64_t value = json.get<uint64_t>();
    return value <= uint64_t(INT64_MAX) ? Value::integer(int64_t(value))
                                        : Value::real(double(value));
  }
  case nlohmann::ordered_json::value_t::number_float:
    return Value::real(json.get<double>());
  case nlohmann::ordered_json::value_t::string:
    return Value::string(json.get<std::string>());
  case nlohmann::ordered_json::value_t::binary: {
    const auto &binary = json.get_binary();
    return Value::bytes(std::string(binary.begin(), binary.end()));
  }
  case nlohmann::ordered_json::value_t::array: {
    runtime::ValueList list;
    list.reserve(json.size());
    for (const nlohmann::ordered_json &element : json)
      list.push_back(valueFromJson(element));
    return Value::list(std::move(list));
  }
  case nlohmann::ordered_json::value_t::object: {
    runtime::RecordFields fields;
    for (const auto &[key, element] : json.items())
      fields.emplace_back(key, valueFromJson(element));
    return Value::record(std::move(fields));
  }
  }
  return Value();
}

std::string base64(const std::string &data) {
  static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((data.size() + 2) / 3 * 4);
  for (size_t i = 0; i < data.size(); i += 3) {
    uint32_t chunk = uint32_t(uint8_t(data[i])) << 16;
    if (i + 1 < data.size())
      chunk |= uint32_t(uint8_t(data[i + 1])) << 8;
    if (i + 2 < data.size())
      chunk |= uint32_t(uint8_t(data[i + 2]));
    out += alphabet[(chunk >> 18) & 63];
    out += alphabet[(chunk >> 12) & 63];
    out += i + 1 < data.size() ? alphabet[(chunk >> 6) & 63] : '=';
    out += i + 2 < data.size() ? alphabet[chunk & 63] : '=';
  }
  return out;
}

namespace {

nlohmann::ordered_json jsonFrom(const Value &value, NonFinite nonFinite, std::string &at) {
  switch (value.kind()) {
  case Value::Kind::Null:
    return nullptr;
  case Value::Kind::Bool:
    return value.asBool();
  case Value::Kind::Int:
    return value.asInt();
  case Value::Kind::Float: {
    const double number = value.asFloat();
    if (std::isfinite(number))
      return number;
    if (nonFinite == NonFinite::Null)
      return nullptr;
    throw runtime::UnwritableValue(
        std::string(std::isnan(number) ? "NaN"
                    : number > 0       ? "Infinity"
                                       : "-Infinity") +
        (at.empty() ? "" : " at " + at) +
        " cannot be written as JSON (sink jsonl(..., nonfinite: \"null\") writes null instead)");
  }
  case Value::Kind::String:
    return value.asString();
  case Value::Kind::Bytes:
    return base64(value.asBytes());
  case Value::Kind::List: {
    nlohmann::ordered_json array = nlohmann::ordered_json::array();
    const size_t had = at.size();
    for (size_t i = 0; i < value.asList().size(); ++i) {
      at += "[" + std::to_string(i) + "]";
      array.push_back(jsonFrom(value.asList()[i], nonFinite, at));
      at.resize(had);
    }
    return array;
  }
  case Value::Kind::Record: {
    nlohmann::ordered_json object = nlohmann::ordered_json::object();
    const size_t had = at.size();
    for (const auto &[name, field] : value.asRecord()) {
      at += "." + name;
      object[name] = jsonFrom(field, nonFinite, at);
      at.resize(had);
    }
    return object;
  }
  case Value::Kind::Ref:
    // Never reaches a sink: only values that Calls alone read stay on workers.
    return value.str();
  }
  return nullptr;
}

} // namespace

nlohmann::ordered_json jsonFromValue(const Value &value, NonFinite nonFinite) {
  std::string at;
  return jsonFrom(value, nonFinite, at);
}

} // namespace orch::stdlib
