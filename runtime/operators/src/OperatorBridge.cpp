// Frames and messages of the operator process protocol.
#include "OperatorBridge.h"

#include "orch/runtime/values/ValueCodec.h"

#include "orch/plan/MessagePackReader.h"

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

ChildMessage readChildMessage(const Object &root) {
  MapReader map(root, "the message");
  const std::string type = map.string("type");
  if (type == "hello")
    return ChildHello{uint32_t(map.integer("version")), map.integer("pid")};
  if (type == "ready")
    return ChildReady{map.real("seconds")};
  if (type == "error") {
    ChildError error;
    if (map.optional("batch"))
      error.batch = uint64_t(map.integer("batch"));
    error.message = map.string("message");
    return error;
  }
  if (type == "result") {
    ChildResult result;
    result.batch = uint64_t(map.integer("batch"));
    const Object &values = map.get("values", msgpack::type::ARRAY);
    result.values.reserve(values.via.array.size);
    for (uint32_t i = 0; i < values.via.array.size; ++i)
      result.values.push_back(readValue(values.via.array.ptr[i]));
    if (const Object *errors = map.optional("errors")) {
      if (errors->type != msgpack::type::MAP)
        throw MessagePackError("'errors' is not a map");
      for (uint32_t i = 0; i < errors->via.map.size; ++i) {
        const msgpack::object_kv &entry = errors->via.map.ptr[i];
        if (entry.key.type != msgpack::type::POSITIVE_INTEGER ||
            entry.val.type != msgpack::type::STR)
          throw MessagePackError("'errors' maps item positions to messages");
        if (entry.key.via.u64 >= result.values.size())
          throw MessagePackError("'errors' names item " + std::to_string(entry.key.via.u64) +
                                 " of " + std::to_string(result.values.size()));
        result.errors[uint32_t(entry.key.via.u64)] =
            std::string(entry.val.via.str.ptr, entry.val.via.str.size);
      }
    }
    return result;
  }
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

std::string encodeInit(const BridgeInit &init) {
  const plan::PlanExternalOperator &op = *init.op;
  msgpack::sbuffer buffer;
  Packer out(buffer);
  out.pack_map(11);
  out.pack("type");
  out.pack("init");
  out.pack("version");
  out.pack(kBridgeVersion);
  out.pack("operator");
  out.pack(op.name);
  out.pack("call");
  out.pack(init.call);
  out.pack("replica");
  out.pack(init.replica);
  out.pack("runner");
  out.pack(op.runner);
  out.pack("path");
  out.pack(op.path);
  out.pack("class");
  out.pack(op.className);
  uint32_t constants = 0;
  for (const plan::PlanOperatorParam &param : op.params)
    constants += param.constant;
  out.pack("constants");
  out.pack_map(constants);
  for (const plan::PlanOperatorParam &param : op.params) {
    if (!param.constant)
      continue;
    out.pack(param.name);
    const plan::StaticValue *value = nullptr;
    for (const plan::NamedConstant &named : *init.constants)
      if (named.name == param.name)
        value = &named.value;
    if (value)
      packConstant(out, *value);
    else
      out.pack_nil();
  }
  out.pack("inputs");
  out.pack_array(uint32_t(op.params.size() - constants));
  for (const plan::PlanOperatorParam &param : op.params) {
    if (param.constant)
      continue;
    out.pack_map(2);
    out.pack("name");
    out.pack(param.name);
    out.pack("type");
    packTypeDescription(out, param.type);
  }
  out.pack("result");
  packTypeDescription(out, op.result);
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
  out.pack_map(3);
  out.pack("type");
  out.pack("batch");
  out.pack("batch");
  out.pack(id);
  out.pack("columns");
  out.pack_array(uint32_t(columns.size()));
  for (const std::vector<const Value *> &column : columns) {
    out.pack_array(uint32_t(column.size()));
    for (const Value *value : column)
      packValue(out, *value);
  }
}

std::string encodeShutdown() {
  msgpack::sbuffer buffer;
  Packer out(buffer);
  out.pack_map(1);
  out.pack("type");
  out.pack("shutdown");
  return finish(buffer);
}

std::variant<ChildMessage, std::string> decodeChildMessage(std::string_view bytes) {
  const msgpack::unpack_limit limits(1u << 24, 1u << 20, kMaxBridgeFrameBytes, kMaxBridgeFrameBytes,
                                     1u << 20, 64);
  // Strings and binaries are read in place (readValue copies them once, into the values).
  return decodeWhole<ChildMessage>(bytes, limits, /*inPlace=*/true, readChildMessage);
}

} // namespace orch::runtime
