// Values <-> native MessagePack (nil, bool, integers, float64, str, bin, array, map).
#include "orch/runtime/values/ValueCodec.h"

#include "orch/plan/MessagePackReader.h"

#include <algorithm>
#include <cstring>

namespace orch::runtime {

using plan::MessagePackError;
using plan::Object;

void Packer::packFloat64(double value) {
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  char bytes[9];
  bytes[0] = static_cast<char>(0xcb);
  for (int i = 0; i < 8; ++i)
    bytes[1 + i] = static_cast<char>(bits >> (56 - 8 * i));
  buffer_.write(bytes, sizeof bytes);
}

namespace {

/// Writes a list of more than kLongListElements elements as kLongListExtType.
void packLongList(Packer &out, const ValueList &list) {
  msgpack::sbuffer body;
  Packer inner(body);
  for (size_t from = 0; from < list.size(); from += kLongListChunk) {
    const size_t to = std::min(list.size(), from + kLongListChunk);
    inner.pack_array(static_cast<uint32_t>(to - from));
    for (size_t i = from; i < to; ++i)
      packValue(inner, list[i], LongLists::InChunks);
  }
  out.pack_ext(body.size(), kLongListExtType);
  out.pack_ext_body(body.data(), static_cast<uint32_t>(body.size()));
}

} // namespace

void packValue(Packer &out, const Value &value, LongLists longLists) {
  switch (value.kind()) {
  case Value::Kind::Null:
    out.pack_nil();
    return;
  case Value::Kind::Bool:
    out.pack(value.asBool());
    return;
  case Value::Kind::Int:
    out.pack(value.asInt());
    return;
  case Value::Kind::Float:
    out.packFloat64(value.asFloat());
    return;
  case Value::Kind::String:
    out.pack(value.asString());
    return;
  case Value::Kind::Bytes: {
    const std::string &bytes = value.asBytes();
    out.pack_bin(static_cast<uint32_t>(bytes.size()));
    out.pack_bin_body(bytes.data(), static_cast<uint32_t>(bytes.size()));
    return;
  }
  case Value::Kind::List:
    if (value.asList().size() > kLongListElements && longLists == LongLists::InChunks) {
      packLongList(out, value.asList());
      return;
    }
    out.pack_array(static_cast<uint32_t>(value.asList().size()));
    for (const Value &element : value.asList())
      packValue(out, element, longLists);
    return;
  case Value::Kind::Record:
    out.pack_map(static_cast<uint32_t>(value.asRecord().size()));
    for (const auto &[name, field] : value.asRecord()) {
      out.pack(name);
      packValue(out, field, longLists);
    }
    return;
  case Value::Kind::Ref: {
    // ext type 1 around [owner, id, bytes]
    msgpack::sbuffer payload;
    msgpack::packer<msgpack::sbuffer> inner(payload);
    const ValueRef &ref = value.asRef();
    inner.pack_array(3);
    inner.pack(ref.owner);
    inner.pack(ref.id);
    inner.pack(ref.bytes);
    out.pack_ext(payload.size(), kValueRefExtType);
    out.pack_ext_body(payload.data(), static_cast<uint32_t>(payload.size()));
    return;
  }
  }
}

namespace {

Value readValueAt(const Object &object, uint32_t depth);

/// A kLongListExtType body: arrays of at most kLongListChunk elements, read one at a time.
Value readLongList(const char *body, size_t size, uint32_t depth) {
  using L = ValueReadLimits;
  const uint32_t depthLeft = L::kDepth - depth;
  const msgpack::unpack_limit limits(L::kArrayElements, L::kMapEntries, L::kStringBytes,
                                     L::kBinaryBytes, size, depthLeft);
  ValueList list;
  size_t offset = 0;
  while (offset < size) {
    msgpack::object_handle chunk;
    try {
      chunk = msgpack::unpack(body, size, offset, nullptr, nullptr, limits);
    } catch (const std::exception &error) {
      throw MessagePackError(std::string("a long list that cannot be read: ") + error.what());
    }
    const Object &elements = chunk.get();
    if (elements.type != msgpack::type::ARRAY || elements.via.array.size == 0 ||
        elements.via.array.size > kLongListChunk)
      throw MessagePackError("a long list's chunk is not an array of 1 to " +
                             std::to_string(kLongListChunk) + " elements");
    for (uint32_t i = 0; i < elements.via.array.size; ++i)
      list.push_back(readValueAt(elements.via.array.ptr[i], depth + 1));
  }
  if (list.size() <= kLongListElements)
    throw MessagePackError("a long list of " + std::to_string(list.size()) +
                           " elements (a list of at most " + std::to_string(kLongListElements) +
                           " is an array)");
  return Value::list(std::move(list));
}

Value readValueAt(const Object &object, uint32_t depth) {
  if (depth > ValueReadLimits::kDepth)
    throw MessagePackError("a value nested deeper than " + std::to_string(ValueReadLimits::kDepth) +
                           " levels");
  switch (object.type) {
  case msgpack::type::NIL:
    return Value();
  case msgpack::type::BOOLEAN:
    return Value::boolean(object.via.boolean);
  case msgpack::type::POSITIVE_INTEGER:
    if (object.via.u64 > uint64_t(INT64_MAX))
      throw MessagePackError("an integer value is out of range");
    return Value::integer(int64_t(object.via.u64));
  case msgpack::type::NEGATIVE_INTEGER:
    return Value::integer(object.via.i64);
  case msgpack::type::FLOAT32:
  case msgpack::type::FLOAT64:
    return Value::real(object.via.f64);
  case msgpack::type::STR:
    return Value::string(std::string(object.via.str.ptr, object.via.str.size));
  case msgpack::type::BIN:
    return Value::bytes(std::string(object.via.bin.ptr, object.via.bin.size));
  case msgpack::type::ARRAY: {
    ValueList list;
    list.reserve(object.via.array.size);
    for (uint32_t i = 0; i < object.via.array.size; ++i)
      list.push_back(readValueAt(object.via.array.ptr[i], depth + 1));
    return Value::list(std::move(list));
  }
  case msgpack::type::MAP: {
    RecordFields fields;
    fields.reserve(object.via.map.size);
    for (uint32_t i = 0; i < object.via.map.size; ++i) {
      const msgpack::object_kv &entry = object.via.map.ptr[i];
      if (entry.key.type != msgpack::type::STR)
        throw MessagePackError("a record field name is not a string");
      fields.emplace_back(std::string(entry.key.via.str.ptr, entry.key.via.str.size),
                          readValueAt(entry.val, depth + 1));
    }
    return Value::record(std::move(fields));
  }
  case msgpack::type::EXT:
    if (object.via.ext.type() == kLongListExtType)
      return readLongList(object.via.ext.data(), object.via.ext.size, depth);
    throw MessagePackError("a value reference (MessagePack ext) inside a list or record, or "
                           "where only plain values may be");
  }
  throw MessagePackError("unknown value type");
}

} // namespace

Value readValue(const Object &object) { return readValueAt(object, 1); }

Value readItemValue(const Object &object) {
  if (object.type != msgpack::type::EXT || object.via.ext.type() == kLongListExtType)
    return readValue(object);
  if (object.via.ext.type() != kValueRefExtType)
    throw MessagePackError("unknown MessagePack ext type " +
                           std::to_string(int(object.via.ext.type())));
  msgpack::object_handle handle;
  try {
    handle = msgpack::unpack(object.via.ext.data(), object.via.ext.size);
  } catch (const std::exception &) {
    throw MessagePackError("a value reference that cannot be read");
  }
  const Object &payload = handle.get();
  if (payload.type != msgpack::type::ARRAY || payload.via.array.size != 3 ||
      payload.via.array.ptr[0].type != msgpack::type::STR ||
      payload.via.array.ptr[1].type != msgpack::type::POSITIVE_INTEGER ||
      payload.via.array.ptr[2].type != msgpack::type::POSITIVE_INTEGER)
    throw MessagePackError("a value reference is not [owner, id, bytes]");
  const Object *at = payload.via.array.ptr;
  return Value::ref(std::make_shared<const ValueRef>(
      ValueRef{std::string(at[0].via.str.ptr, at[0].via.str.size), at[1].via.u64, at[2].via.u64}));
}

} // namespace orch::runtime
