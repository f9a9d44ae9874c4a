// Plan <-> MessagePack. The file is one map: {"magic", "format": [major, minor], "plan": {...}}.
// Maps (not arrays) keep old readers working when newer writers add keys.
#include "orch/plan/PlanCodec.h"

#include <msgpack.hpp>

namespace orch::plan {
namespace {

constexpr std::string_view kMagic = "orch.plan";

struct DecodeFailure {
  std::string message;
  /// False when the bytes are a well-formed plan this reader cannot use (a newer major format).
  bool corrupt = true;
};

const msgpack::object *findKey(const msgpack::object &map, std::string_view key) {
  for (uint32_t i = 0; i < map.via.map.size; ++i) {
    const msgpack::object_kv &entry = map.via.map.ptr[i];
    if (entry.key.type == msgpack::type::STR &&
        std::string_view(entry.key.via.str.ptr, entry.key.via.str.size) == key)
      return &entry.val;
  }
  return nullptr;
}

const msgpack::object &requireKey(const msgpack::object &map, std::string_view key,
                                  msgpack::type::object_type type, std::string_view where) {
  const msgpack::object *value = findKey(map, key);
  if (!value)
    throw DecodeFailure{"missing '" + std::string(key) + "' in " + std::string(where)};
  if (value->type != type)
    throw DecodeFailure{"'" + std::string(key) + "' in " + std::string(where) +
                        " has the wrong type"};
  return *value;
}

std::string requireString(const msgpack::object &map, std::string_view key,
                          std::string_view where) {
  const msgpack::object &value = requireKey(map, key, msgpack::type::STR, where);
  return std::string(value.via.str.ptr, value.via.str.size);
}

FormatVersion decodeFormat(const msgpack::object &root) {
  const msgpack::object &format = requireKey(root, "format", msgpack::type::ARRAY, "the header");
  if (format.via.array.size != 2 ||
      format.via.array.ptr[0].type != msgpack::type::POSITIVE_INTEGER ||
      format.via.array.ptr[1].type != msgpack::type::POSITIVE_INTEGER)
    throw DecodeFailure{"'format' must be [major, minor]"};
  return FormatVersion{uint32_t(format.via.array.ptr[0].via.u64),
                       uint32_t(format.via.array.ptr[1].via.u64)};
}

Plan decodeRoot(const msgpack::object &root) {
  if (root.type != msgpack::type::MAP)
    throw DecodeFailure{"not an Orch plan (the file is not a MessagePack map)"};
  const msgpack::object *magic = findKey(root, "magic");
  if (!magic || magic->type != msgpack::type::STR ||
      std::string_view(magic->via.str.ptr, magic->via.str.size) != kMagic)
    throw DecodeFailure{"not an Orch plan (missing magic \"orch.plan\")"};

  Plan plan;
  plan.format = decodeFormat(root);
  if (plan.format.major != kCurrentFormat.major)
    throw DecodeFailure{"plan format " + std::to_string(plan.format.major) + "." +
                            std::to_string(plan.format.minor) +
                            " is not supported (this orch reads " +
                            std::to_string(kCurrentFormat.major) + ".x); recompile it with orchc",
                        /*corrupt=*/false};
  const msgpack::object &body = requireKey(root, "plan", msgpack::type::MAP, "the header");
  plan.pipelineName = requireString(body, "pipeline", "the plan");
  plan.sourcePath = requireString(body, "source", "the plan");
  return plan;
}

} // namespace

std::string encodePlan(const Plan &plan) {
  msgpack::sbuffer buffer;
  msgpack::packer<msgpack::sbuffer> out(buffer);
  out.pack_map(3);
  out.pack(std::string_view("magic"));
  out.pack(kMagic);
  out.pack(std::string_view("format"));
  out.pack_array(2);
  out.pack(plan.format.major);
  out.pack(plan.format.minor);
  out.pack(std::string_view("plan"));
  out.pack_map(2);
  out.pack(std::string_view("pipeline"));
  out.pack(plan.pipelineName);
  out.pack(std::string_view("source"));
  out.pack(plan.sourcePath);
  return std::string(buffer.data(), buffer.size());
}

std::variant<Plan, PlanDecodeError> decodePlan(std::string_view bytes) {
  try {
    std::size_t offset = 0;
    // Every element takes at least one byte, so no honest count exceeds the input's size; the
    // limits stop a corrupt length header from allocating gigabytes.
    const std::size_t most = bytes.size();
    msgpack::unpack_limit limits(most, most, most, most, most, /*depth=*/64);
    msgpack::object_handle handle =
        msgpack::unpack(bytes.data(), bytes.size(), offset, nullptr, nullptr, limits);
    if (offset != bytes.size())
      return PlanDecodeError{"corrupt plan: " + std::to_string(bytes.size() - offset) +
                             " unexpected bytes after the plan"};
    return decodeRoot(handle.get());
  } catch (const DecodeFailure &failure) {
    return PlanDecodeError{failure.corrupt ? "corrupt plan: " + failure.message : failure.message};
  } catch (const msgpack::insufficient_bytes &) {
    return PlanDecodeError{"corrupt plan: the file is truncated"};
  } catch (const std::exception &error) {
    return PlanDecodeError{std::string("corrupt plan: ") + error.what()};
  }
}

} // namespace orch::plan
