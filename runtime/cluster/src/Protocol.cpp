// Protocol messages <-> MessagePack maps. Values travel inline as native MessagePack (nil,
// bool, integers, float64, str, bin, array, map); a whole item's value may instead be ext
// type 1, a reference to a value its producing worker keeps (ValueRef).
#include "orch/runtime/cluster/Protocol.h"

#include "orch/runtime/values/ValueCodec.h"

#include "orch/plan/MessagePackReader.h"

#include <msgpack.hpp>

namespace orch::runtime {
namespace {

const char *errorCodeName(ErrorCode code) {
  switch (code) {
  case ErrorCode::DeclaredLost:
    return "declared-lost";
  case ErrorCode::Restart:
    return "restart";
  case ErrorCode::Unspecified:
    break;
  }
  return "";
}

using plan::MapReader;
using plan::MessagePackError;
using plan::Object;

/// Packs one message as a map: "type" first, then the fields.
class MessageWriter {
public:
  MessageWriter(Packer &out) : out_(out) {}

  void operator()(const HelloMessage &hello) {
    begin("hello", 10);
    field("version", hello.version);
    field("worker", hello.worker);
    field("pid", hello.pid);
    field("host", hello.host);
    field("cpus", hello.cpus);
    field("gpus", hello.gpus);
    field("operators", hello.operators);
    field("memory", hello.memoryBytes);
    field("peer_endpoint", hello.peerEndpoint);
    field("peer_key", hello.peerKey);
  }
  void operator()(const WelcomeMessage &welcome) {
    begin("welcome", 5);
    field("version", welcome.version);
    field("heartbeat_ms", welcome.heartbeatMs);
    field("liveness", welcome.liveness);
    field("peer_keys", welcome.peerKeys);
    out_.pack("plan");
    out_.pack_bin(static_cast<uint32_t>(welcome.plan.size()));
    out_.pack_bin_body(welcome.plan.data(), static_cast<uint32_t>(welcome.plan.size()));
  }
  void operator()(const InitMessage &init) {
    begin("init", 4);
    field("replica", init.replica);
    field("call", init.call);
    field("inputs", init.inputs);
    field("keep_over", init.keepOver);
  }
  void operator()(const BatchMessage &message) {
    const Batch &batch = message.batch;
    begin("batch", 7 + (message.peers.empty() ? 0 : 1) + (batch.timeoutNanoseconds ? 1 : 0));
    field("batch", batch.id);
    if (batch.timeoutNanoseconds)
      field("timeout_ns", batch.timeoutNanoseconds);
    field("replica", message.replica);
    field("call", batch.call);
    field("attempt", batch.attempt);
    out_.pack("grains");
    out_.pack_array(static_cast<uint32_t>(batch.grains.size()));
    for (const BatchGrain &grain : batch.grains) {
      out_.pack_array(7);
      out_.pack(grain.grain.node.index);
      out_.pack(grain.grain.entity.index);
      out_.pack(grain.generation);
      out_.pack(grain.lineage.root);
      out_.pack(grain.lineage.ordinal);
      out_.pack(grain.lineage.depth);
      out_.pack(grain.lineage.key);
    }
    field("inputs_per_grain", batch.inputsPerGrain);
    out_.pack("inputs");
    out_.pack_array(static_cast<uint32_t>(batch.inputs.size()));
    for (const Value &input : batch.inputs)
      packValue(out_, input);
    if (!message.peers.empty()) {
      out_.pack("peers");
      out_.pack_array(static_cast<uint32_t>(message.peers.size()));
      for (const PeerAddress &peer : message.peers) {
        out_.pack_array(3);
        out_.pack(peer.worker);
        out_.pack(peer.endpoint);
        out_.pack(peer.key);
      }
    }
  }
  void operator()(const ResultMessage &result) {
    const BatchReport &report = result.report;
    const bool lost = report.loss != BatchLoss::None;
    const bool narrowed = report.loss == BatchLoss::Crash || report.loss == BatchLoss::Timeout;
    begin("result", 4 + (lost ? 1 : 0) + (narrowed ? 1 : 0) + (result.unreachable.empty() ? 0 : 1));
    field("batch", report.batchId);
    field("replica", result.replica);
    field("seconds", result.seconds);
    if (lost)
      field("lost", true);
    if (narrowed)
      field("loss", std::string(batchLossName(report.loss)));
    if (!result.unreachable.empty())
      field("unreachable", result.unreachable);
    if (report.batchError) {
      field("error", *report.batchError);
    } else {
      out_.pack("rows");
      out_.pack_array(static_cast<uint32_t>(report.grains.size()));
      for (const GrainReport &row : report.grains) {
        out_.pack_array(6);
        out_.pack(row.grain.node.index);
        out_.pack(row.grain.entity.index);
        out_.pack(row.generation);
        out_.pack(static_cast<uint32_t>(row.kind));
        packValue(out_, row.value);
        out_.pack(row.message);
      }
    }
  }
  void operator()(const HeartbeatMessage &) { begin("heartbeat", 0); }
  void operator()(const ByeMessage &bye) {
    begin("bye", 1);
    field("reason", bye.reason);
  }
  void operator()(const ErrorMessage &error) {
    begin("error", 2);
    field("message", error.message);
    field("code", std::string(errorCodeName(error.code)));
  }
  void operator()(const ReleaseMessage &release) {
    begin("release", 1);
    field("replica", release.replica);
  }
  void operator()(const DropMessage &drop) {
    begin("drop", 1);
    field("ids", drop.ids);
  }
  void operator()(const FetchMessage &fetch) {
    begin("fetch", 1);
    field("ids", fetch.ids);
  }
  void operator()(const BlobsMessage &blobs) {
    begin("blobs", 2);
    field("ids", blobs.ids);
    out_.pack("values");
    out_.pack_array(static_cast<uint32_t>(blobs.values.size()));
    for (const Value &value : blobs.values)
      packValue(out_, value);
  }
  void operator()(const PieceMessage &piece) {
    begin("piece", 3);
    field("total", piece.total);
    field("offset", piece.offset);
    out_.pack("bytes");
    out_.pack_bin(static_cast<uint32_t>(piece.bytes.size()));
    out_.pack_bin_body(piece.bytes.data(), static_cast<uint32_t>(piece.bytes.size()));
  }
  void operator()(const MoreMessage &) { begin("more", 0); }
  void operator()(const StartedMessage &started) {
    begin("started", started.error ? 3 : 2);
    field("replica", started.replica);
    field("seconds", started.seconds);
    if (started.error)
      field("error", *started.error);
  }

private:
  void begin(const char *type, uint32_t fields) {
    out_.pack_map(fields + 1);
    field("type", std::string(type));
  }
  template <typename T> void field(const char *key, const T &value) {
    out_.pack(key);
    out_.pack(value);
  }

  Packer &out_;
};

uint32_t u32(const Object &object, const char *what) {
  if (object.type != msgpack::type::POSITIVE_INTEGER || object.via.u64 > UINT32_MAX)
    throw MessagePackError(std::string(what) + " is not a 32-bit index");
  return uint32_t(object.via.u64);
}

uint64_t u64(const Object &object, const char *what) {
  if (object.type != msgpack::type::POSITIVE_INTEGER)
    throw MessagePackError(std::string(what) + " is not an unsigned integer");
  return object.via.u64;
}

const Object &tuple(const Object &object, uint32_t size, const char *what) {
  if (object.type != msgpack::type::ARRAY || object.via.array.size != size)
    throw MessagePackError(std::string(what) + " is not an array of " + std::to_string(size));
  return object;
}

std::string text(const Object &object, const char *what) {
  if (object.type != msgpack::type::STR)
    throw MessagePackError(std::string(what) + " is not a string");
  return std::string(object.via.str.ptr, object.via.str.size);
}

std::vector<uint64_t> ids(const MapReader &map) {
  const Object &array = map.get("ids", msgpack::type::ARRAY);
  std::vector<uint64_t> result;
  result.reserve(array.via.array.size);
  for (uint32_t i = 0; i < array.via.array.size; ++i)
    result.push_back(u64(array.via.array.ptr[i], "an id"));
  return result;
}

Message readBatch(const MapReader &map) {
  BatchMessage message;
  Batch &batch = message.batch;
  batch.id = uint64_t(map.integer("batch"));
  message.replica = map.index("replica");
  batch.call = map.index("call");
  batch.attempt = uint32_t(map.integer("attempt"));
  if (map.optional("timeout_ns"))
    batch.timeoutNanoseconds = std::max<int64_t>(0, map.integer("timeout_ns"));
  const Object &grains = map.get("grains", msgpack::type::ARRAY);
  for (uint32_t i = 0; i < grains.via.array.size; ++i) {
    const Object &entry = tuple(grains.via.array.ptr[i], 7, "a grain");
    const Object *at = entry.via.array.ptr;
    batch.grains.push_back(
        BatchGrain{GrainRef{NodeId(u32(at[0], "node")), EntityId(u32(at[1], "entity"))},
                   u32(at[2], "generation"),
                   GrainLineage{u64(at[3], "root"), u32(at[4], "ordinal"), u32(at[5], "depth"),
                                u64(at[6], "key")}});
  }
  batch.inputsPerGrain = map.index("inputs_per_grain");
  const Object &inputs = map.get("inputs", msgpack::type::ARRAY);
  if (uint64_t(batch.inputsPerGrain) * batch.grains.size() != inputs.via.array.size)
    throw MessagePackError("a batch's inputs do not match its grains");
  for (uint32_t i = 0; i < inputs.via.array.size; ++i)
    batch.inputs.push_back(readItemValue(inputs.via.array.ptr[i]));
  if (map.optional("peers")) {
    const Object &peers = map.get("peers", msgpack::type::ARRAY);
    for (uint32_t i = 0; i < peers.via.array.size; ++i) {
      const Object *at = tuple(peers.via.array.ptr[i], 3, "a peer").via.array.ptr;
      message.peers.push_back(PeerAddress{text(at[0], "a peer's name"),
                                          text(at[1], "a peer's endpoint"),
                                          text(at[2], "a peer's key")});
    }
  }
  return message;
}

Message readResult(const MapReader &map) {
  ResultMessage result;
  result.report.batchId = uint64_t(map.integer("batch"));
  result.replica = map.index("replica");
  result.seconds = map.real("seconds");
  if (map.optional("lost") && map.boolean("lost"))
    result.report.loss = BatchLoss::Infrastructure;
  if (map.optional("loss")) {
    const std::string loss = map.string("loss");
    if (result.report.loss == BatchLoss::None || (loss != "crash" && loss != "timeout"))
      throw MessagePackError("'loss' must be \"crash\" or \"timeout\", with 'lost'");
    result.report.loss = loss == "crash" ? BatchLoss::Crash : BatchLoss::Timeout;
  }
  if (map.optional("unreachable"))
    result.unreachable = map.string("unreachable");
  if (map.optional("error")) {
    result.report.batchError = map.string("error");
    return result;
  }
  const Object &rows = map.get("rows", msgpack::type::ARRAY);
  for (uint32_t i = 0; i < rows.via.array.size; ++i) {
    const Object &entry = tuple(rows.via.array.ptr[i], 6, "a row");
    const Object *at = entry.via.array.ptr;
    const uint32_t kind = u32(at[3], "row kind");
    if (kind > uint32_t(RowResultKind::GroupFailure))
      throw MessagePackError("unknown row kind " + std::to_string(kind));
    if (at[5].type != msgpack::type::STR)
      throw MessagePackError("a row message is not a string");
    result.report.grains.push_back(
        GrainReport{GrainRef{NodeId(u32(at[0], "node")), EntityId(u32(at[1], "entity"))},
                    u32(at[2], "generation"), RowResultKind(kind), readItemValue(at[4]),
                    std::string(at[5].via.str.ptr, at[5].via.str.size)});
  }
  return result;
}

Message readMessage(const Object &root) {
  MapReader map(root, "the message");
  const std::string type = map.string("type");
  if (type == "hello") {
    HelloMessage hello;
    hello.version = uint32_t(map.integer("version"));
    hello.worker = map.string("worker");
    hello.pid = map.integer("pid");
    hello.host = map.string("host");
    hello.cpus = map.real("cpus");
    const Object &gpus = map.get("gpus", msgpack::type::ARRAY);
    for (uint32_t i = 0; i < gpus.via.array.size; ++i)
      hello.gpus.push_back(int64_t(u32(gpus.via.array.ptr[i], "a GPU index")));
    hello.operators = map.strings("operators");
    // Optional: a worker of an earlier version does not say.
    if (map.optional("memory"))
      hello.memoryBytes = uint64_t(std::max<int64_t>(0, map.integer("memory")));
    if (map.optional("peer_endpoint"))
      hello.peerEndpoint = map.string("peer_endpoint");
    if (map.optional("peer_key"))
      hello.peerKey = map.string("peer_key");
    return hello;
  }
  if (type == "welcome") {
    WelcomeMessage welcome;
    welcome.version = uint32_t(map.integer("version"));
    welcome.heartbeatMs = uint32_t(map.integer("heartbeat_ms"));
    welcome.liveness = uint32_t(map.integer("liveness"));
    const Object &plan = map.get("plan", msgpack::type::BIN);
    welcome.plan.assign(plan.via.bin.ptr, plan.via.bin.size);
    if (map.optional("peer_keys"))
      welcome.peerKeys = map.strings("peer_keys");
    return welcome;
  }
  if (type == "init") {
    InitMessage init{map.index("replica"), map.index("call"), map.strings("inputs")};
    if (map.optional("keep_over"))
      init.keepOver = uint64_t(std::max<int64_t>(0, map.integer("keep_over")));
    return init;
  }
  if (type == "batch")
    return readBatch(map);
  if (type == "result")
    return readResult(map);
  if (type == "heartbeat")
    return HeartbeatMessage{};
  if (type == "bye")
    return ByeMessage{map.string("reason")};
  if (type == "error") {
    ErrorMessage error{map.string("message")};
    if (map.optional("code")) {
      const std::string code = map.string("code");
      error.code = code == errorCodeName(ErrorCode::DeclaredLost) ? ErrorCode::DeclaredLost
                   : code == errorCodeName(ErrorCode::Restart)    ? ErrorCode::Restart
                                                                  : ErrorCode::Unspecified;
    }
    return error;
  }
  if (type == "release")
    return ReleaseMessage{map.index("replica")};
  if (type == "drop")
    return DropMessage{ids(map)};
  if (type == "fetch")
    return FetchMessage{ids(map)};
  if (type == "blobs") {
    BlobsMessage blobs{ids(map), {}};
    const Object &values = map.get("values", msgpack::type::ARRAY);
    if (values.via.array.size != blobs.ids.size())
      throw MessagePackError("blobs: not one value per id");
    for (uint32_t i = 0; i < values.via.array.size; ++i)
      blobs.values.push_back(readValue(values.via.array.ptr[i]));
    return blobs;
  }
  if (type == "piece") {
    PieceMessage piece{u64(map.get("total", msgpack::type::POSITIVE_INTEGER), "total"),
                       u64(map.get("offset", msgpack::type::POSITIVE_INTEGER), "offset"), ""};
    const Object &bytes = map.get("bytes", msgpack::type::BIN);
    piece.bytes.assign(bytes.via.bin.ptr, bytes.via.bin.size);
    return piece;
  }
  if (type == "more")
    return MoreMessage{};
  if (type == "started") {
    StartedMessage started{map.index("replica"), map.real("seconds"), std::nullopt};
    if (map.optional("error"))
      started.error = map.string("error");
    return started;
  }
  throw MessagePackError("unknown message type '" + type.substr(0, 40) + "'");
}

} // namespace

const char *messageTypeName(const Message &message) {
  static const char *names[] = {"hello",     "welcome", "init",  "batch",   "result",
                                "heartbeat", "bye",     "error", "started", "release",
                                "drop",      "fetch",   "blobs", "piece",   "more"};
  return names[message.index()];
}

std::string encodeMessage(const Message &message) {
  msgpack::sbuffer buffer;
  Packer packer(buffer);
  std::visit(MessageWriter(packer), message);
  return std::string(buffer.data(), buffer.size());
}

EncodedMessage encodeMessageBuffer(const Message &message) {
  msgpack::sbuffer buffer;
  Packer packer(buffer);
  std::visit(MessageWriter(packer), message);
  EncodedMessage encoded;
  encoded.size = buffer.size();
  // sbuffer's storage comes from malloc (msgpack-c's sbuffer.hpp).
  encoded.bytes.reset(buffer.release());
  return encoded;
}

std::variant<Message, std::string> decodeMessage(std::string_view bytes) {
  // Bounded: a hostile message cannot make the reader allocate without limit.
  using L = ProtocolLimits;
  const msgpack::unpack_limit limits(L::kArrayElements, L::kMapEntries, L::kStringBytes,
                                     L::kBinaryBytes, 1 << 20, L::kDepth);
  return decodeWhole<Message>(bytes, limits, /*inPlace=*/false, readMessage);
}

} // namespace orch::runtime
