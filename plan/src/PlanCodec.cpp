// Plan <-> MessagePack. The file is one map: {"magic", "format": [major, minor], "plan": {...}},
// and every record inside is a map too, so older readers skip keys that newer writers add.
// Writing is deterministic; reading checks every field's type and then the whole plan's
// consistency (validatePlan), so the runtime never acts on a malformed plan.
#include "orch/plan/PlanCodec.h"

#include "orch/plan/MessagePackReader.h"

#include <msgpack.hpp>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
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

void packConstants(Packer &out, const std::vector<NamedConstant> &constants) {
  out.pack_array(uint32_t(constants.size()));
  for (const NamedConstant &constant : constants) {
    out.pack_map(2);
    packKey(out, "name");
    out.pack(constant.name);
    packKey(out, "value");
    packValue(out, constant.value);
  }
}

/// The Call options in the table's order; sizes and durations as integers, the recovery
/// policy by name.
void packOptions(Packer &out, const CallOptions &options) {
  out.pack_map(uint32_t(callOptionSpecs().size()));
  for (const CallOptionSpec &spec : callOptionSpecs()) {
    packKey(out, std::string(spec.name));
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

void packExternalOperator(Packer &out, const PlanExternalOperator &op) {
  out.pack_map(10);
  packKey(out, "name");
  out.pack(op.name);
  packKey(out, "runner");
  out.pack(op.runner);
  packKey(out, "path");
  out.pack(op.path);
  packKey(out, "sha256");
  out.pack(op.sha256);
  packKey(out, "class");
  out.pack(op.className);
  packKey(out, "args");
  packStrings(out, op.args);
  packKey(out, "params");
  out.pack_array(uint32_t(op.params.size()));
  for (const PlanOperatorParam &param : op.params) {
    out.pack_map(3);
    packKey(out, "name");
    out.pack(param.name);
    packKey(out, "constant");
    out.pack(param.constant);
    packKey(out, "type");
    packType(out, param.type);
  }
  packKey(out, "result");
  packType(out, op.result);
  packKey(out, "line");
  out.pack(op.line);
  packKey(out, "column");
  out.pack(op.column);
}

void packNode(Packer &out, const PlanNode &node) {
  out.pack_map(13);
  packKey(out, "kind");
  out.pack(std::string_view(nodeKindName(node.kind)));
  packKey(out, "domain");
  packIndex(out, node.domain);
  packKey(out, "type");
  packType(out, node.type);
  packKey(out, "inputs");
  packIndexes(out, node.inputs);
  packKey(out, "labels");
  packStrings(out, node.labels);
  packKey(out, "index");
  packIndex(out, node.index);
  packKey(out, "field");
  out.pack(node.field);
  packKey(out, "constant");
  if (node.constant)
    packValue(out, *node.constant);
  else
    out.pack_nil();
  packKey(out, "name");
  out.pack(node.name);
  packKey(out, "line");
  out.pack(node.line);
  packKey(out, "column");
  out.pack(node.column);
  packKey(out, "consumers");
  packIndexes(out, node.consumers);
  packKey(out, "sinks");
  packIndexes(out, node.sinks);
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

std::vector<NamedConstant> readConstants(const MapReader &map, const std::string &where) {
  std::vector<NamedConstant> constants;
  forEachElement(map, "constants", where + " constant",
                 [&](const Object &item, const std::string &at) {
                   MapReader constant(item, at);
                   constants.push_back({constant.string("name"),
                                        readValue(constant.get("value", msgpack::type::MAP), at)});
                 });
  return constants;
}

CallOptions readOptions(const Object &object, const std::string &where) {
  MapReader map(object, where);
  CallOptions options;
  for (const CallOptionSpec &spec : callOptionSpecs()) {
    const std::string key(spec.name);
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
                        NodeKind::Record, NodeKind::Compute})
    if (name == nodeKindName(kind))
      return kind;
  throw DecodeFailure{"unknown node kind '" + name + "' in " + where};
}

PlanNode readNode(const Object &object, const std::string &where) {
  MapReader map(object, where);
  PlanNode node;
  node.kind = readNodeKind(map.string("kind"), where);
  node.domain = map.index("domain");
  node.type = readType(map.get("type", msgpack::type::MAP), where);
  node.inputs = map.indexes("inputs");
  node.labels = map.strings("labels");
  node.index = map.index("index");
  node.field = map.string("field");
  if (const Object *constant = map.optional("constant");
      constant && constant->type != msgpack::type::NIL)
    node.constant = readValue(*constant, where);
  node.name = map.string("name");
  node.line = uint32_t(map.index("line"));
  node.column = uint32_t(map.index("column"));
  node.consumers = map.indexes("consumers");
  node.sinks = map.indexes("sinks");
  return node;
}

PlanExternalOperator readExternalOperator(const Object &object, const std::string &where) {
  MapReader map(object, where);
  PlanExternalOperator op;
  op.name = map.string("name");
  op.runner = map.string("runner");
  op.path = map.string("path");
  op.sha256 = map.string("sha256");
  op.className = map.string("class");
  op.args = map.strings("args");
  forEachElement(map, "params", where + " parameter",
                 [&](const Object &item, const std::string &at) {
                   MapReader param(item, at);
                   op.params.push_back({param.string("name"), param.boolean("constant"),
                                        readType(param.get("type", msgpack::type::MAP), at)});
                 });
  op.result = readType(map.get("result", msgpack::type::MAP), where);
  op.line = map.index("line");
  op.column = map.index("column");
  return op;
}

Plan readBody(const Object &object, Plan plan) {
  MapReader body(object, "the plan");
  plan.pipelineName = body.string("pipeline");
  plan.sourcePath = body.string("source");
  forEachElement(body, "domains", "domain", [&](const Object &item, const std::string &at) {
    MapReader domain(item, at);
    plan.domains.push_back({domain.string("name"), domain.index("parent")});
  });
  forEachElement(body, "calls", "call", [&](const Object &item, const std::string &at) {
    MapReader call(item, at);
    plan.calls.push_back({call.string("name"), call.string("op"), readConstants(call, at),
                          readOptions(call.get("options", msgpack::type::MAP), at),
                          call.boolean("gpu")});
  });
  forEachElement(body, "sources", "source", [&](const Object &item, const std::string &at) {
    MapReader source(item, at);
    plan.sources.push_back({source.string("op"), readConstants(source, at), source.index("domain"),
                            source.index("node")});
  });
  forEachElement(body, "nodes", "node", [&](const Object &item, const std::string &at) {
    plan.nodes.push_back(readNode(item, at));
  });
  forEachElement(body, "sinks", "sink", [&](const Object &item, const std::string &at) {
    MapReader sink(item, at);
    plan.sinks.push_back({sink.string("op"), readConstants(sink, at), sink.strings("labels"),
                          sink.indexes("inputs"), sink.index("domain")});
  });
  if (body.optional("operators"))
    forEachElement(body, "operators", "declared operator",
                   [&](const Object &item, const std::string &at) {
                     plan.operators.push_back(readExternalOperator(item, at));
                   });
  return plan;
}

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
  if (plan.format.major != kCurrentFormat.major)
    throw DecodeFailure{"plan format " + std::to_string(plan.format.major) + "." +
                            std::to_string(plan.format.minor) +
                            " is not supported (this orch reads " +
                            std::to_string(kCurrentFormat.major) + ".x); recompile it with orchc",
                        /*corrupt=*/false};
  return readBody(root.get("plan", msgpack::type::MAP), std::move(plan));
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
  out.pack(plan.format.major);
  out.pack(plan.format.minor);
  packKey(out, "plan");
  // Plans without declared operators keep the bytes they always had.
  out.pack_map(plan.operators.empty() ? 7 : 8);
  packKey(out, "pipeline");
  out.pack(plan.pipelineName);
  packKey(out, "source");
  out.pack(plan.sourcePath);
  packKey(out, "domains");
  out.pack_array(uint32_t(plan.domains.size()));
  for (const PlanDomain &domain : plan.domains) {
    out.pack_map(2);
    packKey(out, "name");
    out.pack(domain.name);
    packKey(out, "parent");
    packIndex(out, domain.parent);
  }
  packKey(out, "calls");
  out.pack_array(uint32_t(plan.calls.size()));
  for (const PlanCall &call : plan.calls) {
    out.pack_map(5);
    packKey(out, "name");
    out.pack(call.name);
    packKey(out, "op");
    out.pack(call.op);
    packKey(out, "constants");
    packConstants(out, call.constants);
    packKey(out, "options");
    packOptions(out, call.options);
    packKey(out, "gpu");
    out.pack(call.gpu);
  }
  packKey(out, "sources");
  out.pack_array(uint32_t(plan.sources.size()));
  for (const PlanSource &source : plan.sources) {
    out.pack_map(4);
    packKey(out, "op");
    out.pack(source.op);
    packKey(out, "constants");
    packConstants(out, source.constants);
    packKey(out, "domain");
    packIndex(out, source.domain);
    packKey(out, "node");
    packIndex(out, source.node);
  }
  packKey(out, "nodes");
  out.pack_array(uint32_t(plan.nodes.size()));
  for (const PlanNode &node : plan.nodes)
    packNode(out, node);
  packKey(out, "sinks");
  out.pack_array(uint32_t(plan.sinks.size()));
  for (const PlanSink &sink : plan.sinks) {
    out.pack_map(5);
    packKey(out, "op");
    out.pack(sink.op);
    packKey(out, "constants");
    packConstants(out, sink.constants);
    packKey(out, "labels");
    packStrings(out, sink.labels);
    packKey(out, "inputs");
    packIndexes(out, sink.inputs);
    packKey(out, "domain");
    packIndex(out, sink.domain);
  }
  if (!plan.operators.empty()) {
    packKey(out, "operators");
    out.pack_array(uint32_t(plan.operators.size()));
    for (const PlanExternalOperator &op : plan.operators)
      packExternalOperator(out, op);
  }
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

std::variant<Plan, PlanDecodeError> loadPlanFile(const std::string &path) {
  std::ifstream file(path, std::ios::binary);
  if (!file)
    return PlanDecodeError{"cannot read '" + path + "': " + std::strerror(errno)};
  std::ostringstream bytes;
  bytes << file.rdbuf();
  auto result = decodePlan(bytes.str());
  if (auto *error = std::get_if<PlanDecodeError>(&result))
    error->message = path + ": " + error->message;
  return result;
}

} // namespace orch::plan
