// Field tables (plan/RecordFields.h): a field listed once is counted, written and read, and a
// field a later version added is required of writers of that version only, in nested records
// too. A toy codec whose versions are plan formats.
#include "orch/plan/RecordFields.h"

#include <gtest/gtest.h>

namespace orch::plan {
namespace {

struct Part {
  std::string name;
  int64_t weight = 0; // added in format 2.1
};

struct Whole {
  std::string title;
  std::string note; // optional
  std::vector<Part> parts;
  int64_t extra = 0; // added in format 2.1, written only when set
};

struct ToyFields {
  using Version = FormatVersion;
  static constexpr FormatVersion kVersion{2, 1};
  static std::string versionText(const FormatVersion &format) {
    return "format " + std::to_string(format.major) + "." + std::to_string(format.minor);
  }

  template <typename Visit> static void fields(Visit &&f, Part &p) {
    f("name", p.name);
    f("weight", p.weight, Since<FormatVersion>{{2, 1}});
  }
  template <typename Visit> static void fields(Visit &&f, Whole &w) {
    f("title", w.title);
    f("note", w.note, Presence::Optional);
    f("parts", w.parts);
    f("extra", w.extra, Presence::WhenSet);
  }

  template <typename T> static bool isSet(const T &value) { return isSetByDefault(value); }
  template <typename T> static bool requiredWhenAbsent(const T &) { return false; }

  template <typename Packer> static void write(Packer &out, const std::string &text) {
    out.pack(text);
  }
  template <typename Packer> static void write(Packer &out, int64_t value) { out.pack(value); }
  template <typename Packer> static void write(Packer &out, const std::vector<Part> &parts) {
    out.pack_array(uint32_t(parts.size()));
    for (const Part &part : parts)
      writeRecord<ToyFields>(out, part);
  }

  static void read(const MapReader &map, const char *key, std::string &text) {
    text = map.string(key);
  }
  static void read(const MapReader &map, const char *key, int64_t &value) {
    value = map.integer(key);
  }
  /// Nested records are read as the same writer wrote them.
  static void read(const MapReader &map, const char *key, std::vector<Part> &parts,
                   const FormatVersion &writer) {
    const Object &list = map.get(key, msgpack::type::ARRAY);
    for (uint32_t i = 0; i < list.via.array.size; ++i) {
      parts.emplace_back();
      readFields<ToyFields>(MapReader(list.via.array.ptr[i], "part " + std::to_string(i)),
                            parts.back(), writer);
    }
  }
};

/// `whole` as bytes, with `drop` left out of every map (a writer that did not know it).
std::string bytesOf(const Whole &whole, const std::string &drop = "") {
  msgpack::sbuffer buffer;
  msgpack::packer<msgpack::sbuffer> out(buffer);
  writeRecord<ToyFields>(out, whole);
  if (drop.empty())
    return std::string(buffer.data(), buffer.size());
  // Re-pack without the dropped key.
  msgpack::object_handle handle = msgpack::unpack(buffer.data(), buffer.size());
  msgpack::sbuffer again;
  msgpack::packer<msgpack::sbuffer> repack(again);
  std::function<void(const Object &)> copy = [&](const Object &object) {
    if (object.type == msgpack::type::MAP) {
      uint32_t kept = 0;
      for (uint32_t i = 0; i < object.via.map.size; ++i)
        kept += object.via.map.ptr[i].key.as<std::string>() != drop;
      repack.pack_map(kept);
      for (uint32_t i = 0; i < object.via.map.size; ++i)
        if (object.via.map.ptr[i].key.as<std::string>() != drop) {
          copy(object.via.map.ptr[i].key);
          copy(object.via.map.ptr[i].val);
        }
    } else if (object.type == msgpack::type::ARRAY) {
      repack.pack_array(object.via.array.size);
      for (uint32_t i = 0; i < object.via.array.size; ++i)
        copy(object.via.array.ptr[i]);
    } else {
      repack.pack(object);
    }
  };
  copy(handle.get());
  return std::string(again.data(), again.size());
}

Whole read(const std::string &bytes, FormatVersion writer) {
  msgpack::object_handle handle = msgpack::unpack(bytes.data(), bytes.size());
  Whole whole;
  readFields<ToyFields>(MapReader(handle.get(), "the whole"), whole, writer);
  return whole;
}

TEST(RecordFieldsTest, AFieldListedOnceIsCountedWrittenAndRead) {
  const Whole whole{"t", "n", {{"a", 3}, {"b", 0}}, 0};
  EXPECT_EQ(countFields<ToyFields>(whole), 3u); // extra is not set
  EXPECT_EQ(countFields<ToyFields>(Whole{"t", "", {}, 5}), 4u);
  const Whole back = read(bytesOf(whole), ToyFields::kVersion);
  EXPECT_EQ(back.title, "t");
  EXPECT_EQ(back.note, "n");
  ASSERT_EQ(back.parts.size(), 2u);
  EXPECT_EQ(back.parts[0].weight, 3);
  // Optional and WhenSet fields may be missing from any writer.
  EXPECT_EQ(read(bytesOf(whole, "note"), ToyFields::kVersion).note, "");
}

TEST(RecordFieldsTest, AFieldALaterVersionAddedIsRequiredOfThatVersionOnly) {
  const Whole whole{"t", "", {{"a", 3}}, 0};
  const std::string withoutWeight = bytesOf(whole, "weight");
  // Format 2.0 had no weight: its nested parts read without one.
  EXPECT_EQ(read(withoutWeight, FormatVersion{2, 0}).parts.at(0).weight, 0);
  EXPECT_EQ(read(withoutWeight, FormatVersion{1, 4}).parts.at(0).name, "a");
  // A 2.1 writer must have written it, in the nested record as anywhere.
  try {
    read(withoutWeight, FormatVersion{2, 1});
    FAIL() << "a 2.1 record without its 2.1 field was read";
  } catch (const MessagePackError &error) {
    EXPECT_STREQ(error.what(),
                 "missing 'weight' in part 0 (format 2.1 and later have it; this is format 2.1)");
  }
  // A field that is there is read whatever the writer's version says.
  EXPECT_EQ(read(bytesOf(whole), FormatVersion{2, 0}).parts.at(0).weight, 3);
}

} // namespace
} // namespace orch::plan
