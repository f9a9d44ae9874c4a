// Frames and messages of the operator process protocol.
#include "OperatorBridge.h"

#include "orch/runtime/values/ValueCodec.h"

#include "orch/plan/MessagePackReader.h"
#include "orch/plan/RecordFields.h"

#include <cerrno>
#include <cstring>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace orch::runtime {
namespace {

using Clock = std::chrono::steady_clock;
using plan::MapReader;
using plan::MessagePackError;
using plan::Object;

/// Milliseconds left until `deadline` for poll (-1: none).
int pollTimeout(BridgeDeadline deadline) {
  if (!deadline)
    return -1;
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - Clock::now()).count();
  return left <= 0 ? 0 : int(std::min<long long>(left, 1 << 30));
}

/// Waits for `events` on `fd`; false at the deadline.
bool await(int fd, short events, BridgeDeadline deadline) {
  for (;;) {
    pollfd item{fd, events, 0};
    const int timeout = pollTimeout(deadline);
    const int ready = ::poll(&item, 1, timeout);
    if (ready > 0)
      return true;
    if (ready < 0 && errno == EINTR)
      continue;
    if (ready == 0 && timeout != 0)
      continue; // spurious: check the clock again
    return false;
  }
}

FrameStatus writeAll(int fd, const char *data, size_t size, BridgeDeadline deadline) {
  while (size > 0) {
    const ssize_t sent = ::send(fd, data, size, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent > 0) {
      data += sent;
      size -= size_t(sent);
      continue;
    }
    if (sent < 0 && errno == EINTR)
      continue;
    if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!await(fd, POLLOUT, deadline))
        return FrameStatus::TimedOut;
      continue;
    }
    return FrameStatus::Closed;
  }
  return FrameStatus::Ok;
}

FrameStatus readAll(int fd, char *data, size_t size, BridgeDeadline deadline) {
  while (size > 0) {
    const ssize_t got = ::recv(fd, data, size, MSG_DONTWAIT);
    if (got > 0) {
      data += got;
      size -= size_t(got);
      continue;
    }
    if (got == 0)
      return FrameStatus::Closed;
    if (errno == EINTR)
      continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (!await(fd, POLLIN, deadline))
        return FrameStatus::TimedOut;
      continue;
    }
    return FrameStatus::Closed;
  }
  return FrameStatus::Ok;
}

void packTypeDescription(Packer &out, const plan::Type &type) {
  if (type.isList()) {
    out.pack_map(2);
    out.pack("kind");
    out.pack("List");
    out.pack("element");
    packTypeDescription(out, type.element());
  } else if (type.isRecord()) {
    out.pack_map(2);
    out.pack("kind");
    out.pack("Record");
    out.pack("fields");
    out.pack_map(uint32_t(type.fields().size()));
    for (const plan::RecordField &field : type.fields()) {
      out.pack(field.name);
      packTypeDescription(out, field.type);
    }
  } else {
    out.pack_map(1);
    out.pack("kind");
    out.pack(type.str());
  }
}

void packConstant(Packer &out, const plan::StaticValue &value) {
  std::visit(
      [&](const auto &v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, plan::Duration>)
          out.packFloat64(double(v.nanoseconds) / 1e9); // seconds, as Python's time functions take
        else if constexpr (std::is_same_v<T, plan::ByteSize>)
          out.pack(v.bytes);
        else
          out.pack(v);
      },
      value);
}

std::string finish(const msgpack::sbuffer &buffer) {
  return std::string(buffer.data(), buffer.size());
}

/// "errors": failed items by position, each a message; read after "values", which it names.
struct ItemErrors {
  ChildResult &result;
};
/// The constants of an init, by name (nil for one the Call does not set).
struct InitConstants {
  const plan::PlanExternalOperator &op;
  const std::vector<plan::NamedConstant> &constants;
};
/// The input parameters of an init: name and type description, in declaration order.
struct InitInputs {
  const plan::PlanExternalOperator &op;
};
struct TypeDescription {
  const plan::Type &type;
};
/// What the worker writes in INIT, in the order written.
struct InitRecord {
  const BridgeInit &init;
};
/// A BATCH: its id and one column of values per input parameter.
struct BatchRecord {
  uint64_t id;
  const std::vector<std::vector<const Value *>> &columns;
};
struct Columns {
  const std::vector<std::vector<const Value *>> &columns;
};
struct ShutdownRecord {};

/// The bridge's messages as field tables (plan/RecordFields.h).
struct BridgeFields {
  /// The bridge is one version at a time (the process says which in its hello, and is
  /// refused if it is not this one): no field is read as an earlier version wrote it.
  using Version = uint32_t;
  static constexpr uint32_t kVersion = kBridgeVersion;
  static std::string versionText(uint32_t version) {
    return "bridge version " + std::to_string(version);
  }

  template <typename Visit> static void fields(Visit &&f, const InitRecord &r) {
    const plan::PlanExternalOperator &op = *r.init.op;
    f("version", kBridgeVersion);
    f("operator", op.name);
    f("call", r.init.call);
    f("replica", r.init.replica);
    f("runner", op.runner);
    f("path", op.path);
    f("class", op.className);
    f("constants", InitConstants{op, *r.init.constants});
    f("inputs", InitInputs{op});
    f("result", TypeDescription{op.result});
  }
  template <typename Visit> static void fields(Visit &&f, const BatchRecord &r) {
    f("batch", r.id);
    f("columns", Columns{r.columns});
  }
  template <typename Visit> static void fields(Visit &&, const ShutdownRecord &) {}
  template <typename Visit> static void fields(Visit &&f, ChildHello &m) {
    f("version", m.version);
    f("pid", m.pid);
  }
  template <typename Visit> static void fields(Visit &&f, ChildReady &m) {
    f("seconds", m.seconds);
  }
  template <typename Visit> static void fields(Visit &&f, ChildError &m) {
    f("batch", m.batch, plan::Presence::Optional); // none: the operator could not start
    f("message", m.message);
  }
  template <typename Visit> static void fields(Visit &&f, ChildResult &m) {
    f("batch", m.batch);
    f("values", m.values);
    f("errors", ItemErrors{m}, plan::Presence::Optional); // none: no item failed
  }

  template <typename T> static bool isSet(const T &value) { return plan::isSetByDefault(value); }
  template <typename T> static bool requiredWhenAbsent(const T &) { return false; }

  template <typename T> static void write(Packer &out, const T &value) { out.pack(value); }
  static void write(Packer &out, const InitConstants &init) {
    uint32_t constants = 0;
    for (const plan::PlanOperatorParam &param : init.op.params)
      constants += param.constant;
    out.pack_map(constants);
    for (const plan::PlanOperatorParam &param : init.op.params) {
      if (!param.constant)
        continue;
      out.pack(param.name);
      const plan::StaticValue *value = nullptr;
      for (const plan::NamedConstant &named : init.constants)
        if (named.name == param.name)
          value = &named.value;
      if (value)
        packConstant(out, *value);
      else
        out.pack_nil();
    }
  }
  static void write(Packer &out, const InitInputs &inputs) {
    uint32_t count = 0;
    for (const plan::PlanOperatorParam &param : inputs.op.params)
      count += !param.constant;
    out.pack_array(count);
    for (const plan::PlanOperatorParam &param : inputs.op.params) {
      if (param.constant)
        continue;
      out.pack_map(2);
      out.pack("name");
      out.pack(param.name);
      out.pack("type");
      packTypeDescription(out, param.type);
    }
  }
  static void write(Packer &out, const Columns &columns) {
    out.pack_array(uint32_t(columns.columns.size()));
    for (const std::vector<const Value *> &column : columns.columns) {
      out.pack_array(uint32_t(column.size()));
      for (const Value *value : column)
        packValue(out, *value, LongLists::AsOneArray);
    }
  }
  static void write(Packer &out, const TypeDescription &description) {
    packTypeDescription(out, description.type);
  }

  static void read(const MapReader &map, const char *key, uint32_t &value) {
    value = uint32_t(map.integer(key));
  }
  static void read(const MapReader &map, const char *key, uint64_t &value) {
    value = uint64_t(map.integer(key));
  }
  static void read(const MapReader &map, const char *key, int64_t &value) {
    value = map.integer(key);
  }
  static void read(const MapReader &map, const char *key, double &value) { value = map.real(key); }
  static void read(const MapReader &map, const char *key, std::string &value) {
    value = map.string(key);
  }
  static void read(const MapReader &map, const char *key, std::vector<Value> &values) {
    const Object &array = map.get(key, msgpack::type::ARRAY);
    values.reserve(array.via.array.size);
    for (uint32_t i = 0; i < array.via.array.size; ++i)
      values.push_back(readValue(array.via.array.ptr[i]));
  }
  static void read(const MapReader &map, const char *key, ItemErrors errors) {
    const Object &entries = *map.optional(key);
    if (entries.type != msgpack::type::MAP)
      throw MessagePackError("'errors' is not a map");
    ChildResult &result = errors.result;
    for (uint32_t i = 0; i < entries.via.map.size; ++i) {
      const msgpack::object_kv &entry = entries.via.map.ptr[i];
      if (entry.key.type != msgpack::type::POSITIVE_INTEGER || entry.val.type != msgpack::type::STR)
        throw MessagePackError("'errors' maps item positions to messages");
      if (entry.key.via.u64 >= result.values.size())
        throw MessagePackError("'errors' names item " + std::to_string(entry.key.via.u64) + " of " +
                               std::to_string(result.values.size()));
      result.errors[uint32_t(entry.key.via.u64)] =
          std::string(entry.val.via.str.ptr, entry.val.via.str.size);
    }
  }
};

/// A message a Python or exec operator process sends.
template <typename Message> ChildMessage readAs(const MapReader &map) {
  Message message;
  plan::readFields<BridgeFields>(map, message);
  return message;
}

ChildMessage readChildMessage(const Object &root) {
  MapReader map(root, "the message");
  const std::string type = map.string("type");
  if (type == "hello")
    return readAs<ChildHello>(map);
  if (type == "ready")
    return readAs<ChildReady>(map);
  if (type == "error")
    return readAs<ChildError>(map);
  if (type == "result")
    return readAs<ChildResult>(map);
  throw MessagePackError("unknown message type '" + type + "'");
}

} // namespace

bool waitReadable(int fd, std::chrono::milliseconds timeout) {
  return await(fd, POLLIN, Clock::now() + timeout);
}

FrameStatus writeFrame(int fd, std::string_view body, BridgeDeadline deadline) {
  const uint32_t size = uint32_t(body.size());
  const unsigned char header[4] = {
      static_cast<unsigned char>(size >> 24), static_cast<unsigned char>(size >> 16),
      static_cast<unsigned char>(size >> 8), static_cast<unsigned char>(size)};
  if (FrameStatus status = writeAll(fd, reinterpret_cast<const char *>(header), 4, deadline);
      status != FrameStatus::Ok)
    return status;
  return writeAll(fd, body.data(), body.size(), deadline);
}

FrameStatus readFrame(int fd, std::string &buffer, size_t &size, BridgeDeadline deadline) {
  unsigned char header[4];
  if (FrameStatus status = readAll(fd, reinterpret_cast<char *>(header), 4, deadline);
      status != FrameStatus::Ok)
    return status;
  size = size_t(header[0]) << 24 | size_t(header[1]) << 16 | size_t(header[2]) << 8 |
         size_t(header[3]);
  if (size > kMaxBridgeFrameBytes)
    return FrameStatus::Malformed;
  if (buffer.size() < size)
    buffer.resize(std::max(size, 2 * buffer.size()));
  return readAll(fd, buffer.data(), size, deadline);
}

/// A message to the process: "type" first, then the record's fields.
template <typename Record> void writeMessage(Packer &out, const char *type, const Record &record) {
  out.pack_map(plan::countFields<BridgeFields>(record) + 1);
  out.pack("type");
  out.pack(type);
  plan::writeFields<BridgeFields>(out, record);
}

std::string encodeInit(const BridgeInit &init) {
  msgpack::sbuffer buffer;
  Packer out(buffer);
  writeMessage(out, "init", InitRecord{init});
  return finish(buffer);
}

void encodeBatch(uint64_t id, const std::vector<std::vector<const Value *>> &columns,
                 BatchBuffer &buffer) {
  // Grown to size up front: a batch of images would otherwise be copied again at every
  // doubling.
  size_t estimate = 64;
  for (const std::vector<const Value *> &column : columns)
    for (const Value *value : column)
      estimate += approximateBytes(*value);
  if (estimate > buffer.capacity) {
    buffer.capacity = std::max(estimate, 2 * buffer.capacity);
    buffer.bytes = msgpack::sbuffer(buffer.capacity);
  }
  buffer.bytes.clear();
  Packer out(buffer.bytes);
  writeMessage(out, "batch", BatchRecord{id, columns});
}

std::string encodeShutdown() {
  msgpack::sbuffer buffer;
  Packer out(buffer);
  writeMessage(out, "shutdown", ShutdownRecord{});
  return finish(buffer);
}

std::variant<ChildMessage, std::string> decodeChildMessage(std::string_view bytes) {
  const msgpack::unpack_limit limits(1u << 24, 1u << 20, kMaxBridgeFrameBytes, kMaxBridgeFrameBytes,
                                     1u << 20, 64);
  // Strings and binaries are read in place (readValue copies them once, into the values).
  return decodeWhole<ChildMessage>(bytes, limits, /*inPlace=*/true, readChildMessage);
}

} // namespace orch::runtime
