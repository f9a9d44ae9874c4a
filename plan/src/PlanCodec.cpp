// Plan <-> MessagePack. The file is one map: {"magic", "format": [major, minor], "plan": {...}},
// and every record inside is a map too, so older readers skip keys that newer writers add.
// Writing is deterministic; reading checks every field's type and then the whole plan's
// consistency (validatePlan), so the runtime never acts on a malformed plan.
#include "orch/plan/PlanCodec.h"

#include "orch/plan/MessagePackReader.h"
#include "orch/plan/PlanPositions.h"
#include "orch/plan/RecordFields.h"

#include <msgpack.hpp>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>

namespace orch::plan {
namespace {

constexpr std::string_view kMagic = "orch.plan";

using Packer = msgpack::packer<msgpack::sbuffer>;

// --- writing ------------------------------------------------------------------------------

void packKey(Packer &out, std::string_view key) { out.pack(key); }

void packIndex(Packer &out, uint32_t index) {
  if (index == kNone)
    out.pack_nil();
  else
    out.pack(index);
}

void packIndexes(Packer &out, const std::vector<uint32_t> &indexes) {
  out.pack_array(uint32_t(indexes.size()));
  for (uint32_t index : indexes)
    out.pack(index);
}

void packStrings(Packer &out, const std::vector<std::string> &strings) {
  out.pack_array(uint32_t(strings.size()));
  for (const std::string &text : strings)
    out.pack(text);
}

void packType(Packer &out, const Type &type) {
  if (type.isList()) {
    out.pack_map(2);
    packKey(out, "kind");
    out.pack(std::string_view("List"));
    packKey(out, "element");
    packType(out, type.element());
    return;
  }
  if (type.isRecord()) {
    out.pack_map(2);
    packKey(out, "kind");
    out.pack(std::string_view("Record"));
    packKey(out, "fields");
    out.pack_array(uint32_t(type.fields().size()));
    for (const RecordField &field : type.fields()) {
      out.pack_map(2);
      packKey(out, "name");
      out.pack(field.name);
      packKey(out, "type");
      packType(out, field.type);
    }
    return;
  }
  out.pack_map(1);
  packKey(out, "kind");
  out.pack(type.str());
}

void packValue(Packer &out, const StaticValue &value) {
  out.pack_map(2);
  packKey(out, "type");
  out.pack(typeOf(value).str());
  packKey(out, "value");
  if (auto *boolean = std::get_if<bool>(&value))
    out.pack(*boolean);
  else if (auto *integer = std::get_if<int64_t>(&value))
    out.pack(*integer);
  else if (auto *real = std::get_if<double>(&value))
    out.pack(*real);
  else if (auto *text = std::get_if<std::string>(&value))
    out.pack(*text);
  else if (auto *duration = std::get_if<Duration>(&value))
    out.pack(duration->nanoseconds);
  else
    out.pack(std::get<ByteSize>(value).bytes);
}

/// The Call options in the table's order; sizes and durations as integers, the recovery
/// policy by name, nil for an option the program did not write and the runtime decides.
void packOptions(Packer &out, const CallOptions &options) {
  out.pack_map(uint32_t(callOptionSpecs().size()));
  for (const CallOptionSpec &spec : callOptionSpecs()) {
    packKey(out, std::string(spec.name));
    if (spec.isUnset && spec.isUnset(options)) {
      out.pack_nil();
      continue;
    }
    std::visit(
        [&](const auto &value) {
          using T = std::decay_t<decltype(value)>;
          if constexpr (std::is_same_v<T, Duration>)
            out.pack(value.nanoseconds);
          else if constexpr (std::is_same_v<T, ByteSize>)
            out.pack(value.bytes);
          else if constexpr (std::is_same_v<T, std::string>)
            out.pack(std::string_view(value));
          else
            out.pack(value);
        },
        spec.get(options));
  }
}

// --- reading ------------------------------------------------------------------------------

struct DecodeFailure {
  std::string message;
  /// False when the bytes are a well-formed plan this reader cannot use (a newer major format).
  bool corrupt = true;
};

/// Calls `read(element, "what N")` for each element of the array at `key`.
template <typename Read>
void forEachElement(const MapReader &map, std::string_view key, const std::string &what,
                    Read &&read) {
  const Object &array = map.get(key, msgpack::type::ARRAY);
  for (uint32_t i = 0; i < array.via.array.size; ++i)
    read(array.via.array.ptr[i], what + " " + std::to_string(i));
}

Type readType(const Object &object, const std::string &where) {
  MapReader map(object, where);
  std::string kind = map.string("kind");
  if (kind == "List")
    return Type::list(readType(map.get("element", msgpack::type::MAP), where));
  if (kind == "Record") {
    std::vector<RecordField> fields;
    forEachElement(map, "fields", where + " field",
                   [&](const Object &field, const std::string &at) {
                     MapReader fieldMap(field, at);
                     fields.push_back({fieldMap.string("name"),
                                       readType(fieldMap.get("type", msgpack::type::MAP), at)});
                   });
    return Type::record(std::move(fields));
  }
  if (kind == "T")
    return Type::var();
  std::optional<TypeKind> named = typeKindNamed(kind);
  if (!named)
    throw DecodeFailure{"unknown type '" + kind + "' in " + where};
  return Type::scalar(*named);
}

StaticValue readValue(const Object &object, const std::string &where) {
  MapReader map(object, where);
  std::string type = map.string("type");
  if (type == "Bool")
    return map.boolean("value");
  if (type == "Int")
    return map.integer("value");
  if (type == "Float")
    return map.real("value");
  if (type == "String")
    return map.string("value");
  if (type == "Duration")
    return Duration{map.integer("value")};
  if (type == "Size")
    return ByteSize{map.integer("value")};
  throw DecodeFailure{"unknown constant type '" + type + "' in " + where};
}

CallOptions readOptions(const Object &object, const std::string &where) {
  MapReader map(object, where);
  CallOptions options;
  for (const CallOptionSpec &spec : callOptionSpecs()) {
    const std::string key(spec.name);
    // Plans of format 1.0 before `in_flight` (1.1), and of 2.0 before `gpu_memory` (2.1), have
    // no key for it: its default.
    if ((key == "in_flight" || key == "gpu_memory") && !map.optional(key.c_str()))
      continue;
    // Unset (format 2): the runtime decides.
    if (const Object *given = map.optional(key);
        spec.isUnset && given && given->type == msgpack::type::NIL)
      continue;
    StaticValue value;
    switch (spec.type) {
    case TypeKind::Int:
      value = map.integer(key);
      break;
    case TypeKind::Float:
      value = map.real(key);
      break;
    case TypeKind::Bool:
      value = map.boolean(key);
      break;
    case TypeKind::Duration:
      value = Duration{map.integer(key)};
      break;
    case TypeKind::Size:
      value = ByteSize{map.integer(key)};
      break;
    default: {
      std::string text = map.string(key);
      if (!isCallOptionChoice(spec, text))
        throw DecodeFailure{"unknown " + key + " '" + text + "' in " + where};
      value = std::move(text);
      break;
    }
    }
    spec.set(options, value);
  }
  return options;
}

NodeKind readNodeKind(const std::string &name, const std::string &where) {
  for (NodeKind kind : {NodeKind::Source, NodeKind::Constant, NodeKind::Invoke, NodeKind::Expand,
                        NodeKind::Reduce, NodeKind::Filter, NodeKind::Broadcast, NodeKind::Project,
                        NodeKind::Record, NodeKind::Compute, NodeKind::Dedup})
    if (name == nodeKindName(kind))
      return kind;
  throw DecodeFailure{"unknown node kind '" + name + "' in " + where};
}

// --- the records, each as one field table (RecordFields.h) --------------------------------

/// A plan index: nil for kNone.
struct Index {
  uint32_t &index;
};
/// Records in an array, each a map of its fields; `what` names one in messages ("node 3").
template <typename T> struct Records {
  std::vector<T> &items;
  const char *what;
};
struct KindName {
  NodeKind &kind;
};

struct PlanFields {
  /// A plan's fields are read as its format wrote them (a field a 2.x added: `Since{{2, x}}`).
  using Version = FormatVersion;
  static constexpr FormatVersion kVersion = kCurrentFormat;
  static std::string versionText(const FormatVersion &format) {
    return "plan format " + std::to_string(format.major) + "." + std::to_string(format.minor);
  }

  template <typename Visit> static void fields(Visit &&f, NamedConstant &c) {
    f("name", c.name);
    f("value", c.value);
  }
  template <typename Visit> static void fields(Visit &&f, PlanDomain &d) {
    f("name", d.name);
    f("parent", Index{d.parent});
  }
  template <typename Visit> static void fields(Visit &&f, PlanCall &c) {
    f("name", c.name);
    f("op", c.op);
    f("constants", Records<NamedConstant>{c.constants, "constant"});
    f("options", c.options);
    f("gpu", c.gpu);
    f("batch_keys", c.batchKeys, Presence::WhenSet);
  }
  template <typename Visit> static void fields(Visit &&f, PlanSource &s) {
    f("op", s.op);
    f("constants", Records<NamedConstant>{s.constants, "constant"});
    f("domain", Index{s.domain});
    f("node", Index{s.node});
  }
  template <typename Visit> static void fields(Visit &&f, PlanNode &n) {
    f("kind", KindName{n.kind});
    f("domain", Index{n.domain});
    f("type", n.type);
    f("inputs", n.inputs);
    f("labels", n.labels);
    f("index", Index{n.index});
    f("field", n.field);
    f("constant", n.constant);
    f("constants", Records<NamedConstant>{n.constants, "constant"}, Presence::WhenSet);
    f("name", n.name);
    f("consumers", n.consumers);
    f("sinks", n.sinks);
  }
  template <typename Visit> static void fields(Visit &&f, PlanSink &s) {
    f("op", s.op);
    f("constants", Records<NamedConstant>{s.constants, "constant"});
    f("labels", s.labels);
    f("inputs", s.inputs);
    f("domain", Index{s.domain});
  }
  template <typename Visit> static void fields(Visit &&f, PlanOperatorParam &p) {
    f("name", p.name);
    f("constant", p.constant);
    f("type", p.type);
  }
  template <typename Visit> static void fields(Visit &&f, PlanExternalOperator &o) {
    f("name", o.name);
    f("runner", o.runner);
    f("path", o.path);
    f("sha256", o.sha256);
    f("class", o.className);
    f("args", o.args);
    f("params", Records<PlanOperatorParam>{o.params, "parameter"});
    f("result", o.result);
  }
  /// The plan's body. Plans without declared operators keep the bytes they always had.
  template <typename Visit> static void fields(Visit &&f, Plan &p) {
    f("pipeline", p.pipelineName);
    f("source", p.sourcePath);
    f("domains", Records<PlanDomain>{p.domains, "domain"});
    f("calls", Records<PlanCall>{p.calls, "call"});
    f("sources", Records<PlanSource>{p.sources, "source"});
    f("nodes", Records<PlanNode>{p.nodes, "node"});
    f("sinks", Records<PlanSink>{p.sinks, "sink"});
    f("operators", Records<PlanExternalOperator>{p.operators, "declared operator"},
      Presence::WhenSet);
  }

  template <typename T> static bool isSet(const T &value) { return isSetByDefault(value); }
  template <typename T> static bool isSet(const Records<T> &records) {
    return !records.items.empty();
  }
  template <typename T> static bool requiredWhenAbsent(const T &) { return false; }

  static void write(Packer &out, const std::string &text) { out.pack(text); }
  static void write(Packer &out, bool value) { out.pack(value); }
  static void write(Packer &out, uint32_t value) { out.pack(value); }
  static void write(Packer &out, const Index &index) { packIndex(out, index.index); }
  static void write(Packer &out, const std::vector<uint32_t> &indexes) {
    packIndexes(out, indexes);
  }
  static void write(Packer &out, const std::vector<std::string> &strings) {
    packStrings(out, strings);
  }
  static void write(Packer &out, const Type &type) { packType(out, type); }
  static void write(Packer &out, const StaticValue &value) { packValue(out, value); }
  static void write(Packer &out, const std::optional<StaticValue> &value) {
    if (value)
      packValue(out, *value);
    else
      out.pack_nil();
  }
  static void write(Packer &out, const CallOptions &options) { packOptions(out, options); }
  static void write(Packer &out, const KindName &kind) {
    out.pack(std::string_view(nodeKindName(kind.kind)));
  }
  template <typename T> static void write(Packer &out, const Records<T> &records) {
    out.pack_array(uint32_t(records.items.size()));
    for (const T &item : records.items)
      writeRecord<PlanFields>(out, item);
  }

  static void read(const MapReader &map, const char *key, std::string &text) {
    text = map.string(key);
  }
  static void read(const MapReader &map, const char *key, bool &value) { value = map.boolean(key); }
  static void read(const MapReader &map, const char *key, uint32_t &value) {
    value = map.index(key);
  }
  static void read(const MapReader &map, const char *key, Index index) {
    index.index = map.index(key);
  }
  static void read(const MapReader &map, const char *key, std::vector<uint32_t> &indexes) {
    indexes = map.indexes(key);
  }
  static void read(const MapReader &map, const char *key, std::vector<std::string> &strings) {
    strings = map.strings(key);
  }
  static void read(const MapReader &map, const char *key, Type &type) {
    type = readType(map.get(key, msgpack::type::MAP), map.where());
  }
  static void read(const MapReader &map, const char *key, StaticValue &value) {
    value = readValue(map.get(key, msgpack::type::MAP), map.where());
  }
  static void read(const MapReader &map, const char *key, std::optional<StaticValue> &value) {
    if (const Object *constant = map.optional(key);
        constant && constant->type != msgpack::type::NIL)
      value = readValue(*constant, map.where());
  }
  static void read(const MapReader &map, const char *key, CallOptions &options) {
    options = readOptions(map.get(key, msgpack::type::MAP), map.where());
  }
  static void read(const MapReader &map, const char *key, KindName kind) {
    kind.kind = readNodeKind(map.string(key), map.where());
  }
  template <typename T>
  static void read(const MapReader &map, const char *key, Records<T> records,
                   const FormatVersion &writer) {
    // Top-level records are "node 3"; nested ones say where they are ("call 1 constant 0").
    const std::string what =
        map.where() == "the plan" ? records.what : map.where() + " " + records.what;
    forEachElement(map, key, what, [&](const Object &item, const std::string &at) {
      MapReader record(item, at);
      records.items.emplace_back();
      readFields<PlanFields>(record, records.items.back(), writer);
    });
  }
};

FormatVersion readFormat(const MapReader &root) {
  const Object &format = root.get("format", msgpack::type::ARRAY);
  if (format.via.array.size != 2 ||
      format.via.array.ptr[0].type != msgpack::type::POSITIVE_INTEGER ||
      format.via.array.ptr[1].type != msgpack::type::POSITIVE_INTEGER ||
      format.via.array.ptr[0].via.u64 > UINT32_MAX || format.via.array.ptr[1].via.u64 > UINT32_MAX)
    throw DecodeFailure{"'format' must be [major, minor]"};
  return FormatVersion{uint32_t(format.via.array.ptr[0].via.u64),
                       uint32_t(format.via.array.ptr[1].via.u64)};
}

Plan readRoot(const Object &object) {
  if (object.type != msgpack::type::MAP)
    throw DecodeFailure{"not an Orch plan (the file is not a MessagePack map)"};
  const Object *magic = findKey(object, "magic");
  if (!magic || magic->type != msgpack::type::STR ||
      std::string_view(magic->via.str.ptr, magic->via.str.size) != kMagic)
    throw DecodeFailure{"not an Orch plan (missing magic \"orch.plan\")"};
  MapReader root(object, "the header");
  Plan plan;
  plan.format = readFormat(root);
  if (plan.format.major != kCurrentFormat.major && plan.format.major != 1)
    throw DecodeFailure{"plan format " + std::to_string(plan.format.major) + "." +
                            std::to_string(plan.format.minor) +
                            " is not supported (this orch reads 1.x and " +
                            std::to_string(kCurrentFormat.major) + ".x); recompile it with orchc",
                        /*corrupt=*/false};
  MapReader body(root.get("plan", msgpack::type::MAP), "the plan");
  readFields<PlanFields>(body, plan, plan.format);
  // Format 1 wrote `checkpoint` true where none was written (small results only), and kept
  // source positions in the plan (which this reader leaves unknown).
  if (plan.format.major == 1)
    for (PlanCall &call : plan.calls)
      if (call.options.checkpoint == CheckpointPolicy::Always)
        call.options.checkpoint = CheckpointPolicy::SmallResults;
  return plan;
}

} // namespace

std::string encodePlan(const Plan &plan) {
  msgpack::sbuffer buffer;
  Packer out(buffer);
  out.pack_map(3);
  packKey(out, "magic");
  out.pack(kMagic);
  packKey(out, "format");
  out.pack_array(2);
  // Always this writer's format: a plan read from an earlier one is written as it reads now.
  out.pack(kCurrentFormat.major);
  out.pack(kCurrentFormat.minor);
  packKey(out, "plan");
  writeRecord<PlanFields>(out, plan);
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
    // Whether this is a plan at all comes first: text often starts with a byte that decodes as
    // a small integer, and "unexpected bytes after the plan" would mislead.
    Plan plan = readRoot(handle.get());
    if (offset != bytes.size())
      return PlanDecodeError{"corrupt plan: " + std::to_string(bytes.size() - offset) +
                             " unexpected bytes after the plan"};
    if (std::optional<std::string> problem = validatePlan(plan))
      return PlanDecodeError{"invalid plan: " + *problem};
    return plan;
  } catch (const DecodeFailure &failure) {
    return PlanDecodeError{failure.corrupt ? "corrupt plan: " + failure.message : failure.message};
  } catch (const MessagePackError &error) {
    return PlanDecodeError{std::string("corrupt plan: ") + error.what()};
  } catch (const msgpack::insufficient_bytes &) {
    return PlanDecodeError{"corrupt plan: the file is truncated"};
  } catch (const std::exception &error) {
    return PlanDecodeError{std::string("corrupt plan: ") + error.what()};
  }
}

} // namespace orch::plan

namespace orch::plan {

namespace {

std::optional<std::string> readWholeFile(const std::string &path) {
  std::ifstream file(path, std::ios::binary);
  if (!file)
    return std::nullopt;
  std::ostringstream bytes;
  bytes << file.rdbuf();
  return bytes.str();
}

} // namespace

std::variant<Plan, PlanDecodeError> loadPlanFile(const std::string &path) {
  std::optional<std::string> bytes = readWholeFile(path);
  if (!bytes)
    return PlanDecodeError{"cannot read '" + path + "': " + std::strerror(errno)};
  auto result = decodePlan(*bytes);
  if (auto *error = std::get_if<PlanDecodeError>(&result))
    error->message = path + ": " + error->message;
  else
    loadPlanPositions(std::get<Plan>(result), path, *bytes);
  return result;
}

} // namespace orch::plan
