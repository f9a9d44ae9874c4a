// Records as field tables, for MessagePack maps (the plan codec, the protocol, the operator
// bridge): a record lists its fields once, `Codec::fields(visit, record)`, calling
// `visit(key, value[, presence])` for each, and the same list writes the record (its map's
// entries counted, never by hand), reads it and describes it. A field added to the list is
// all three.
//
// `Codec` is a struct of static overloads, one per wire shape: `write(Packer &, const T &)`,
// `read(const MapReader &, key, T &)` and, for WhenSet fields, `isSet(const T &)` (by default a
// number that is not zero, or a container or string that is not empty). Values that travel in
// a shape of their own are wrapper structs the list names (`Binary{m.plan}`).
#pragma once

#include "orch/plan/MessagePackReader.h"

#include <msgpack.hpp>

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

namespace orch::plan {

/// How a field appears on the wire:
enum class Presence {
  /// written, and required when read;
  Always,
  /// written, but may be missing when read (writers of an earlier version omit it);
  Tolerated,
  /// written only when set, and may be missing when read.
  WhenSet,
};

/// A number that is not zero, a string or container that is not empty, an optional that holds
/// a value; anything else is always set.
template <typename T> bool isSetByDefault(const T &value) {
  if constexpr (std::is_arithmetic_v<T>)
    return value != 0;
  else if constexpr (requires { value.empty(); })
    return !value.empty();
  else if constexpr (requires { value.has_value(); })
    return value.has_value();
  else
    return true;
}

template <typename Codec> struct FieldCounter {
  uint32_t count = 0;
  template <typename T>
  void operator()(const char *, const T &value, Presence presence = Presence::Always) {
    count += presence != Presence::WhenSet || Codec::isSet(value);
  }
};

template <typename Codec, typename Packer> struct FieldWriter {
  Packer &out;
  template <typename T>
  void operator()(const char *key, const T &value, Presence presence = Presence::Always) {
    if (presence == Presence::WhenSet && !Codec::isSet(value))
      return;
    out.pack(std::string_view(key));
    Codec::write(out, value);
  }
};

/// Reads the fields in the list's order (a field may depend on one read before it). A missing
/// field that is not Always is left as it is, unless `Codec::requiredWhenAbsent` says it must
/// be there after all.
template <typename Codec> struct FieldReader {
  const MapReader &map;
  template <typename T>
  void operator()(const char *key, T &&value, Presence presence = Presence::Always) {
    if (presence != Presence::Always && !map.optional(key)) {
      if (Codec::requiredWhenAbsent(value))
        throw MessagePackError("missing '" + std::string(key) + "' in " + map.where());
      return;
    }
    Codec::read(map, key, std::forward<T>(value));
  }
};

/// The entries `record` writes.
template <typename Codec, typename Record> uint32_t countFields(const Record &record) {
  FieldCounter<Codec> counter;
  // The lists take a record by reference for reading too; counting and writing only read it.
  Codec::fields(counter, const_cast<Record &>(record));
  return counter.count;
}

/// Writes `record`'s fields (after the caller packed the map's header).
template <typename Codec, typename Packer, typename Record>
void writeFields(Packer &out, const Record &record) {
  Codec::fields(FieldWriter<Codec, Packer>{out}, const_cast<Record &>(record));
}

/// Writes `record` as a map of exactly its fields.
template <typename Codec, typename Packer, typename Record>
void writeRecord(Packer &out, const Record &record) {
  out.pack_map(countFields<Codec>(record));
  writeFields<Codec>(out, record);
}

template <typename Codec, typename Record> void readFields(const MapReader &map, Record &record) {
  Codec::fields(FieldReader<Codec>{map}, record);
}

} // namespace orch::plan
