// Reading MessagePack maps field by field with clear errors ("missing 'call' in node 3"), for
// every MessagePack format Orch reads: plans and protocol messages. Errors are thrown as
// MessagePackError, to be caught at the decoder's boundary.
#pragma once

#include "orch/plan/Plan.h"

#include <msgpack.hpp>

#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace orch::plan {

class MessagePackError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

using Object = msgpack::object;

inline const Object *findKey(const Object &map, std::string_view key) {
  for (uint32_t i = 0; i < map.via.map.size; ++i) {
    const msgpack::object_kv &entry = map.via.map.ptr[i];
    if (entry.key.type == msgpack::type::STR &&
        std::string_view(entry.key.via.str.ptr, entry.key.via.str.size) == key)
      return &entry.val;
  }
  return nullptr;
}

/// A map being read, named for messages ("node 3", "call 1").
class MapReader {
public:
  MapReader(const Object &object, std::string where) : where_(std::move(where)) {
    if (object.type != msgpack::type::MAP)
      throw MessagePackError(where_ + " is not a map");
    map_ = &object;
  }

  const Object &get(std::string_view key, msgpack::type::object_type type) const {
    const Object *value = findKey(*map_, key);
    if (!value)
      throw MessagePackError("missing '" + std::string(key) + "' in " + where_);
    if (value->type != type &&
        !(type == msgpack::type::FLOAT64 && value->type == msgpack::type::FLOAT32))
      throw MessagePackError("'" + std::string(key) + "' in " + where_ + " has the wrong type");
    return *value;
  }

  const Object *optional(std::string_view key) const { return findKey(*map_, key); }

  std::string string(std::string_view key) const {
    const Object &value = get(key, msgpack::type::STR);
    return std::string(value.via.str.ptr, value.via.str.size);
  }

  bool boolean(std::string_view key) const { return get(key, msgpack::type::BOOLEAN).via.boolean; }

  int64_t integer(std::string_view key) const { return toInteger(require(key), key); }

  double real(std::string_view key) const {
    const Object &value = require(key);
    if (value.type == msgpack::type::FLOAT64 || value.type == msgpack::type::FLOAT32)
      return value.via.f64;
    return double(toInteger(value, key));
  }

  uint32_t index(std::string_view key) const {
    const Object &value = require(key);
    if (value.type == msgpack::type::NIL)
      return kNone;
    return toIndex(value, key);
  }

  std::vector<uint32_t> indexes(std::string_view key) const {
    const Object &array = get(key, msgpack::type::ARRAY);
    std::vector<uint32_t> out;
    for (uint32_t i = 0; i < array.via.array.size; ++i)
      out.push_back(toIndex(array.via.array.ptr[i], key));
    return out;
  }

  std::vector<std::string> strings(std::string_view key) const {
    const Object &array = get(key, msgpack::type::ARRAY);
    std::vector<std::string> out;
    for (uint32_t i = 0; i < array.via.array.size; ++i) {
      const Object &item = array.via.array.ptr[i];
      if (item.type != msgpack::type::STR)
        throw MessagePackError("'" + std::string(key) + "' in " + where_ + " holds a non-string");
      out.emplace_back(item.via.str.ptr, item.via.str.size);
    }
    return out;
  }

  const std::string &where() const { return where_; }

private:
  const Object &require(std::string_view key) const {
    const Object *value = findKey(*map_, key);
    if (!value)
      throw MessagePackError("missing '" + std::string(key) + "' in " + where_);
    return *value;
  }

  int64_t toInteger(const Object &value, std::string_view key) const {
    if (value.type == msgpack::type::POSITIVE_INTEGER) {
      if (value.via.u64 > uint64_t(std::numeric_limits<int64_t>::max()))
        throw MessagePackError("'" + std::string(key) + "' in " + where_ + " is out of range");
      return int64_t(value.via.u64);
    }
    if (value.type == msgpack::type::NEGATIVE_INTEGER)
      return value.via.i64;
    throw MessagePackError("'" + std::string(key) + "' in " + where_ + " is not an integer");
  }

  uint32_t toIndex(const Object &value, std::string_view key) const {
    if (value.type != msgpack::type::POSITIVE_INTEGER || value.via.u64 >= kNone)
      throw MessagePackError("'" + std::string(key) + "' in " + where_ + " is not an index");
    return uint32_t(value.via.u64);
  }

  const Object *map_ = nullptr;
  std::string where_;
};

} // namespace orch::plan
