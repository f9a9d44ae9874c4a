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
//
// Fields are version-checked: a field a later version of the format added is listed with
// `Since{version}`, and a record read from a writer of that version or later must have it,
// while an earlier writer's may not (`readFields` is given the writer's version). A codec names
// its versions: `Codec::Version`, `Codec::kVersion` (this writer's) and
// `Codec::versionText(version)` for messages.
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
  /// written, but may be missing when read (a writer that has nothing to say leaves it out);
  Optional,
  /// written only when set, and may be missing when read.
  WhenSet,
};

/// A field version `version` of the format added: written, and required when read from a writer
/// of that version or later (an earlier writer knew nothing of it).
template <typename Version> struct Since { Version version; };

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
  template <typename T, typename V> void operator()(const char *, const T &, Since<V>) { ++count; }
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
  template <typename T, typename V> void operator()(const char *key, const T &value, Since<V>) {
    (*this)(key, value);
  }
};

/// Reads the fields in the list's order (a field may depend on one read before it), of a record
/// written by version `writer` of the format. A missing field that is not Always, or that the
/// writer's version did not have yet, is left as it is, unless `Codec::requiredWhenAbsent` says
/// it must be there after all.
template <typename Codec> struct FieldReader {
  const MapReader &map;
  typename Codec::Version writer;
  template <typename T>
  void operator()(const char *key, T &&value, Presence presence = Presence::Always) {
    if (presence != Presence::Always && !map.optional(key)) {
      if (Codec::requiredWhenAbsent(value))
        throw MessagePackError("missing '" + std::string(key) + "' in " + map.where());
      return;
    }
    read(key, std::forward<T>(value));
  }
  template <typename T, typename V> void operator()(const char *key, T &&value, Since<V> since) {
    if (!map.optional(key)) {
      if (writer < since.version && !Codec::requiredWhenAbsent(value))
        return;
      throw MessagePackError("missing '" + std::string(key) + "' in " + map.where() + " (" +
                             Codec::versionText(since.version) + " and later have it; this is " +
                             Codec::versionText(writer) + ")");
    }
    read(key, std::forward<T>(value));
  }

private:
  /// A field that holds records of its own reads them as the same writer wrote them.
  template <typename T> void read(const char *key, T &&value) {
    if constexpr (requires { Codec::read(map, key, std::forward<T>(value), writer); })
      Codec::read(map, key, std::forward<T>(value), writer);
    else
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

/// Reads `record` as version `writer` of the format wrote it.
template <typename Codec, typename Record>
void readFields(const MapReader &map, Record &record, typename Codec::Version writer) {
  Codec::fields(FieldReader<Codec>{map, writer}, record);
}

/// Reads `record` as this version of the format writes it.
template <typename Codec, typename Record> void readFields(const MapReader &map, Record &record) {
  readFields<Codec>(map, record, Codec::kVersion);
}

} // namespace orch::plan
