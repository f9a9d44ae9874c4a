// Protocol messages <-> MessagePack maps. Values travel inline as native MessagePack (nil,
// bool, integers, float64, str, bin, array, map); a whole item's value may instead be ext
// type 1, a reference to a value its producing worker keeps (ValueRef).
#include "orch/runtime/cluster/Protocol.h"

#include "orch/runtime/values/ValueCodec.h"

#include "orch/plan/MessagePackReader.h"
#include "orch/plan/RecordFields.h"

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

// Every message is listed once, as a table of its fields (`ProtocolFields::fields` below,
// plan/RecordFields.h): the same table encodes it (counting its map's entries), decodes it and
// describes it, so that a field added there is all three.
using plan::Presence;

// Values that travel in a shape of their own, named where the table lists them.
/// Bytes as MessagePack bin (not str).
struct Binary {
  std::string &bytes;
};
/// Sizes in bytes, one per device (hello's `gpu_memory`).
struct ByteCounts {
  std::vector<uint64_t> &bytes;
};
/// Whole items' values (a reference may stand for one).
struct ItemValues {
  std::vector<Value> &values;
};
/// "lost": true for any lost batch.
struct LostFlag {
  BatchLoss &loss;
};
/// "loss": "crash" or "timeout", with "lost" (an infrastructure loss has none).
struct LossName {
  BatchLoss &loss;
};
/// A report's rows: written unless the batch failed as a whole, then required.
struct ReportRows {
  BatchReport &report;
};
struct ErrorCodeField {
  ErrorCode &code;
};
/// What a service-backed operator spent on the batch: [requests, retries, failed requests,
/// prompt tokens, completion tokens, [latency seconds...]].
struct UsageField {
  ServiceUsage &usage;
};
/// A plan index or replica number: nil reads as none (kNone); plain uint32_t fields are any
/// integer, truncated.
struct Index {
  uint32_t &index;
};
/// A size that may not be negative: a negative one reads as 0.
struct AtLeastZero {
  uint64_t &value;
};
/// A count or offset that must be an unsigned integer.
struct Unsigned {
  uint64_t &value;
};

// --- the tables ---------------------------------------------------------------------------

/// The message types in the order of Message's alternatives.
constexpr const char *kMessageTypes[] = {
    "hello",   "welcome", "init", "batch", "result", "heartbeat", "bye",  "error",
    "started", "release", "drop", "fetch", "blobs",  "piece",     "more", "lost"};
static_assert(std::size(kMessageTypes) == std::variant_size_v<Message>,
              "every message type has a name");

/// What a decoded message must hold beyond its fields' own types.
void checkDecoded(BatchMessage &m) {
  Batch &batch = m.batch;
  batch.timeoutNanoseconds = std::max<int64_t>(0, batch.timeoutNanoseconds);
  if (uint64_t(batch.inputsPerGrain) * batch.grains.size() != batch.inputs.size())
    throw MessagePackError("a batch's inputs do not match its grains");
}
void checkDecoded(BlobsMessage &m) {
  if (m.values.size() != m.ids.size())
    throw MessagePackError("blobs: not one value per id");
}
template <typename M> void checkDecoded(M &) {}

// --- reading --------------------------------------------------------------------------------

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

/// The wire shapes and the tables of every message (plan/RecordFields.h).
struct ProtocolFields {
  /// A message is read as the version its sender speaks (hello and welcome say which; the
  /// others come after a handshake that agreed on this one): a field added since is required
  /// of a sender that speaks its version, so that an earlier sender's hello still decodes and
  /// is refused with both versions named.
  using Version = uint32_t;
  static constexpr uint32_t kVersion = kProtocolVersion;
  static std::string versionText(uint32_t version) {
    return "protocol version " + std::to_string(version);
  }
  using Since = plan::Since<uint32_t>;

  template <typename Visit> static void fields(Visit &&f, HelloMessage &m) {
    f("version", m.version);
    f("worker", m.worker);
    f("pid", m.pid);
    f("host", m.host);
    f("cpus", m.cpus);
    f("gpus", m.gpus);
    f("operators", m.operators);
    f("memory", AtLeastZero{m.memoryBytes}, Since{2});
    f("peer_endpoint", m.peerEndpoint, Since{2});
    f("peer_key", m.peerKey, Since{2});
    f("gpu_memory", ByteCounts{m.gpuMemory}, Presence::WhenSet);
  }
  template <typename Visit> static void fields(Visit &&f, WelcomeMessage &m) {
    f("version", m.version);
    f("heartbeat_ms", m.heartbeatMs);
    f("liveness", m.liveness);
    f("peer_keys", m.peerKeys, Since{2});
    f("plan", Binary{m.plan});
    f("plan_positions", Binary{m.planPositions}, Presence::WhenSet);
  }
  template <typename Visit> static void fields(Visit &&f, InitMessage &m) {
    f("replica", Index{m.replica});
    f("call", Index{m.call});
    f("inputs", m.inputs);
    f("keep_over", AtLeastZero{m.keepOver}, Since{2});
    f("call_replica", Index{m.callReplica}, Since{4});
  }
  template <typename Visit> static void fields(Visit &&f, BatchMessage &m) {
    f("batch", m.batch.id);
    f("timeout_ns", m.batch.timeoutNanoseconds, Presence::WhenSet);
    f("replica", Index{m.replica});
    f("call", Index{m.batch.call});
    f("attempt", m.batch.attempt);
    f("grains", m.batch.grains);
    f("inputs_per_grain", Index{m.batch.inputsPerGrain});
    f("inputs", ItemValues{m.batch.inputs});
    f("peers", m.peers, Presence::WhenSet);
  }
  template <typename Visit> static void fields(Visit &&f, ResultMessage &m) {
    f("batch", m.report.batchId);
    f("replica", Index{m.replica});
    f("seconds", m.seconds);
    f("lost", LostFlag{m.report.loss}, Presence::WhenSet);
    f("loss", LossName{m.report.loss}, Presence::WhenSet);
    f("unreachable", m.unreachable, Presence::WhenSet);
    f("error", m.report.batchError, Presence::WhenSet);
    f("rows", ReportRows{m.report}, Presence::WhenSet);
    f("usage", UsageField{m.report.usage}, Presence::WhenSet);
  }
  template <typename Visit> static void fields(Visit &&, HeartbeatMessage &) {}
  template <typename Visit> static void fields(Visit &&f, ByeMessage &m) { f("reason", m.reason); }
  template <typename Visit> static void fields(Visit &&f, ErrorMessage &m) {
    f("message", m.message);
    f("code", ErrorCodeField{m.code}, Since{2});
  }
  template <typename Visit> static void fields(Visit &&f, StartedMessage &m) {
    f("replica", Index{m.replica});
    f("seconds", m.seconds);
    f("error", m.error, Presence::WhenSet);
  }
  template <typename Visit> static void fields(Visit &&f, ReleaseMessage &m) {
    f("replica", Index{m.replica});
  }
  template <typename Visit> static void fields(Visit &&f, DropMessage &m) { f("ids", m.ids); }
  template <typename Visit> static void fields(Visit &&f, LostMessage &m) { f("worker", m.worker); }
  template <typename Visit> static void fields(Visit &&f, FetchMessage &m) { f("ids", m.ids); }
  template <typename Visit> static void fields(Visit &&f, BlobsMessage &m) {
    f("ids", m.ids);
    f("values", m.values);
  }
  template <typename Visit> static void fields(Visit &&f, PieceMessage &m) {
    f("total", Unsigned{m.total});
    f("offset", Unsigned{m.offset});
    f("bytes", Binary{m.bytes});
  }
  template <typename Visit> static void fields(Visit &&, MoreMessage &) {}

  // --- whether a field is set (for WhenSet) ---------------------------------------------------

  template <typename T> static bool isSet(const T &value) { return plan::isSetByDefault(value); }
  static bool isSet(const LostFlag &lost) { return lost.loss != BatchLoss::None; }
  static bool isSet(const LossName &loss) {
    return loss.loss == BatchLoss::Crash || loss.loss == BatchLoss::Timeout;
  }
  static bool isSet(const ReportRows &rows) { return !rows.report.batchError; }
  static bool isSet(const Binary &binary) { return !binary.bytes.empty(); }
  static bool isSet(const ByteCounts &counts) { return !counts.bytes.empty(); }
  static bool isSet(const ItemValues &items) { return !items.values.empty(); }
  static bool isSet(const UsageField &usage) { return !usage.usage.empty(); }
  static bool isSet(const ErrorCodeField &code) { return code.code != ErrorCode::Unspecified; }

  /// A WhenSet field that must be there after all, given the fields read before it.
  template <typename T> static bool requiredWhenAbsent(const T &) { return false; }
  static bool requiredWhenAbsent(const ReportRows &rows) { return !rows.report.batchError; }

  // --- writing --------------------------------------------------------------------------------

  template <typename T> static void write(Packer &out, const T &value) { out.pack(value); }
  static void write(Packer &out, const std::optional<std::string> &value) { out.pack(*value); }
  static void write(Packer &out, const ByteCounts &counts) { out.pack(counts.bytes); }
  static void write(Packer &out, const Binary &binary) {
    out.pack_bin(static_cast<uint32_t>(binary.bytes.size()));
    out.pack_bin_body(binary.bytes.data(), static_cast<uint32_t>(binary.bytes.size()));
  }
  static void write(Packer &out, const std::vector<Value> &values) {
    out.pack_array(static_cast<uint32_t>(values.size()));
    for (const Value &value : values)
      packValue(out, value);
  }
  static void write(Packer &out, const ItemValues &items) { write(out, items.values); }
  static void write(Packer &out, const std::vector<BatchGrain> &grains) {
    out.pack_array(static_cast<uint32_t>(grains.size()));
    for (const BatchGrain &grain : grains) {
      out.pack_array(8);
      out.pack(grain.grain.node.index);
      out.pack(grain.grain.entity.index);
      out.pack(grain.generation);
      out.pack(grain.lineage.root);
      out.pack(grain.lineage.ordinal);
      out.pack(grain.lineage.depth);
      out.pack(grain.lineage.key);
      out.pack(grain.lineage.sourceRow);
    }
  }
  static void write(Packer &out, const std::vector<PeerAddress> &peers) {
    out.pack_array(static_cast<uint32_t>(peers.size()));
    for (const PeerAddress &peer : peers) {
      out.pack_array(3);
      out.pack(peer.worker);
      out.pack(peer.endpoint);
      out.pack(peer.key);
    }
  }
  static void write(Packer &out, const LostFlag &) { out.pack(true); }
  static void write(Packer &out, const UsageField &field) {
    const ServiceUsage &usage = field.usage;
    out.pack_array(6);
    out.pack(usage.requests);
    out.pack(usage.retries);
    out.pack(usage.failedRequests);
    out.pack(usage.promptTokens);
    out.pack(usage.completionTokens);
    out.pack_array(static_cast<uint32_t>(usage.latencies.size()));
    for (float seconds : usage.latencies)
      out.pack(seconds);
  }
  static void write(Packer &out, const LossName &loss) {
    out.pack(std::string(batchLossName(loss.loss)));
  }
  static void write(Packer &out, const ReportRows &rows) {
    out.pack_array(static_cast<uint32_t>(rows.report.grains.size()));
    for (const GrainReport &row : rows.report.grains) {
      out.pack_array(6);
      out.pack(row.grain.node.index);
      out.pack(row.grain.entity.index);
      out.pack(row.generation);
      out.pack(static_cast<uint32_t>(row.kind));
      packValue(out, row.value);
      out.pack(row.message);
    }
  }
  static void write(Packer &out, const Index &index) { out.pack(index.index); }
  static void write(Packer &out, const AtLeastZero &size) { out.pack(size.value); }
  static void write(Packer &out, const Unsigned &count) { out.pack(count.value); }
  static void write(Packer &out, const ErrorCodeField &code) {
    out.pack(std::string(errorCodeName(code.code)));
  }

  /// The elements of the array under `key`, each read by `element`.
  template <typename T, typename Element>
  static void readArray(const MapReader &map, const char *key, std::vector<T> &out,
                        Element &&element) {
    const Object &array = map.get(key, msgpack::type::ARRAY);
    out.clear();
    out.reserve(array.via.array.size);
    for (uint32_t i = 0; i < array.via.array.size; ++i)
      out.push_back(element(array.via.array.ptr[i]));
  }

  static void read(const MapReader &map, const char *key, uint32_t &value) {
    value = uint32_t(map.integer(key));
  }
  static void read(const MapReader &map, const char *key, Index index) {
    index.index = map.index(key);
  }
  static void read(const MapReader &map, const char *key, uint64_t &value) {
    value = uint64_t(map.integer(key));
  }
  static void read(const MapReader &map, const char *key, AtLeastZero size) {
    size.value = uint64_t(std::max<int64_t>(0, map.integer(key)));
  }
  static void read(const MapReader &map, const char *key, Unsigned count) {
    count.value = u64(map.get(key, msgpack::type::POSITIVE_INTEGER), key);
  }
  static void read(const MapReader &map, const char *key, int64_t &value) {
    value = map.integer(key);
  }
  static void read(const MapReader &map, const char *key, double &value) { value = map.real(key); }
  static void read(const MapReader &map, const char *key, std::string &value) {
    value = map.string(key);
  }
  static void read(const MapReader &map, const char *key, std::optional<std::string> &value) {
    value = map.string(key);
  }
  static void read(const MapReader &map, const char *key, std::vector<std::string> &value) {
    value = map.strings(key);
  }
  static void read(const MapReader &map, const char *key, std::vector<uint64_t> &value) {
    readArray(map, key, value, [](const Object &id) { return u64(id, "an id"); });
  }
  static void read(const MapReader &map, const char *key, std::vector<int64_t> &value) {
    readArray(map, key, value, [](const Object &gpu) { return int64_t(u32(gpu, "a GPU index")); });
  }
  static void read(const MapReader &map, const char *key, ByteCounts counts) {
    readArray(map, key, counts.bytes, [](const Object &size) { return u64(size, "a size"); });
  }
  static void read(const MapReader &map, const char *key, Binary binary) {
    const Object &bytes = map.get(key, msgpack::type::BIN);
    binary.bytes.assign(bytes.via.bin.ptr, bytes.via.bin.size);
  }
  static void read(const MapReader &map, const char *key, std::vector<Value> &values) {
    readArray(map, key, values, [](const Object &value) { return readValue(value); });
  }
  static void read(const MapReader &map, const char *key, ItemValues items) {
    readArray(map, key, items.values, [](const Object &value) { return readItemValue(value); });
  }
  static void read(const MapReader &map, const char *key, std::vector<BatchGrain> &grains) {
    readArray(map, key, grains, [](const Object &entry) {
      const Object *at = tuple(entry, 8, "a grain").via.array.ptr;
      return BatchGrain{GrainRef{NodeId(u32(at[0], "node")), EntityId(u32(at[1], "entity"))},
                        u32(at[2], "generation"),
                        GrainLineage{u64(at[3], "root"), u32(at[4], "ordinal"), u32(at[5], "depth"),
                                     u64(at[6], "key"), u64(at[7], "source row")}};
    });
  }
  static void read(const MapReader &map, const char *key, std::vector<PeerAddress> &peers) {
    readArray(map, key, peers, [](const Object &entry) {
      const Object *at = tuple(entry, 3, "a peer").via.array.ptr;
      return PeerAddress{text(at[0], "a peer's name"), text(at[1], "a peer's endpoint"),
                         text(at[2], "a peer's key")};
    });
  }
  static void read(const MapReader &map, const char *key, UsageField field) {
    const Object *at = tuple(map.get(key, msgpack::type::ARRAY), 6, "a usage").via.array.ptr;
    ServiceUsage &usage = field.usage;
    usage.requests = u64(at[0], "requests");
    usage.retries = u64(at[1], "retries");
    usage.failedRequests = u64(at[2], "failed requests");
    usage.promptTokens = u64(at[3], "prompt tokens");
    usage.completionTokens = u64(at[4], "completion tokens");
    if (at[5].type != msgpack::type::ARRAY)
      throw MessagePackError("'usage' latencies must be an array");
    for (uint32_t i = 0; i < at[5].via.array.size; ++i) {
      const Object &seconds = at[5].via.array.ptr[i];
      if (seconds.type != msgpack::type::FLOAT32 && seconds.type != msgpack::type::FLOAT64)
        throw MessagePackError("'usage' latencies must be numbers");
      usage.latencies.push_back(float(seconds.via.f64));
    }
  }
  static void read(const MapReader &map, const char *key, LostFlag lost) {
    if (map.boolean(key))
      lost.loss = BatchLoss::Infrastructure;
  }
  static void read(const MapReader &map, const char *key, LossName loss) {
    const std::string name = map.string(key);
    if (loss.loss == BatchLoss::None || (name != "crash" && name != "timeout"))
      throw MessagePackError("'loss' must be \"crash\" or \"timeout\", with 'lost'");
    loss.loss = name == "crash" ? BatchLoss::Crash : BatchLoss::Timeout;
  }
  static void read(const MapReader &map, const char *key, ReportRows rows) {
    // A batch that failed as a whole has no rows, whatever a peer sends.
    if (rows.report.batchError)
      return;
    readArray(map, key, rows.report.grains, [](const Object &entry) {
      const Object *at = tuple(entry, 6, "a row").via.array.ptr;
      const uint32_t kind = u32(at[3], "row kind");
      if (kind > uint32_t(RowResultKind::GroupFailure))
        throw MessagePackError("unknown row kind " + std::to_string(kind));
      return GrainReport{GrainRef{NodeId(u32(at[0], "node")), EntityId(u32(at[1], "entity"))},
                         u32(at[2], "generation"), RowResultKind(kind), readItemValue(at[4]),
                         text(at[5], "a row message")};
    });
  }
  static void read(const MapReader &map, const char *key, ErrorCodeField code) {
    const std::string name = map.string(key);
    code.code = name == errorCodeName(ErrorCode::DeclaredLost) ? ErrorCode::DeclaredLost
                : name == errorCodeName(ErrorCode::Restart)    ? ErrorCode::Restart
                                                               : ErrorCode::Unspecified;
  }
};

/// Packs one message as a map: "type" first, then its table's fields.
void writeMessage(Packer &out, const Message &message) {
  std::visit(
      [&](const auto &typed) {
        // The tables take a message by reference for reading too; writing only reads it.
        auto &fieldsOf = const_cast<std::decay_t<decltype(typed)> &>(typed);
        out.pack_map(plan::countFields<ProtocolFields>(fieldsOf) + 1);
        out.pack("type");
        out.pack(std::string(kMessageTypes[message.index()]));
        plan::writeFields<ProtocolFields>(out, fieldsOf);
      },
      message);
}

template <size_t... I> Message emptyMessage(size_t index, std::index_sequence<I...>) {
  static constexpr Message (*kMakers[])() = {[] { return Message(std::in_place_index<I>); }...};
  return kMakers[index]();
}

Message readMessage(const Object &root) {
  MapReader map(root, "the message");
  const std::string type = map.string("type");
  for (size_t index = 0; index < std::size(kMessageTypes); ++index) {
    if (type != kMessageTypes[index])
      continue;
    Message message = emptyMessage(index, std::make_index_sequence<std::variant_size_v<Message>>());
    // The sender's version, where the message says it (hello, welcome).
    const Object *version = map.optional("version");
    const uint32_t sender = version && version->type == msgpack::type::POSITIVE_INTEGER &&
                                    version->via.u64 <= UINT32_MAX
                                ? uint32_t(version->via.u64)
                                : kProtocolVersion;
    std::visit(
        [&](auto &typed) {
          plan::readFields<ProtocolFields>(map, typed, sender);
          checkDecoded(typed);
        },
        message);
    return message;
  }
  throw MessagePackError("unknown message type '" + type.substr(0, 40) + "'");
}

// --- describing -------------------------------------------------------------------------------

/// "key=value" for each field a message writes; lists and blobs by their size.
struct FieldDescriber {
  std::string &text;
  template <typename T>
  void operator()(const char *key, const T &value, Presence presence = Presence::Always) {
    if (presence == Presence::WhenSet && !ProtocolFields::isSet(value))
      return;
    text += std::string(text.empty() ? "" : ", ") + key + "=" + describe(value);
  }
  template <typename T> void operator()(const char *key, const T &value, ProtocolFields::Since) {
    (*this)(key, value);
  }
  template <typename T> static std::string describe(const T &value) {
    if constexpr (std::is_same_v<T, std::string>)
      return "\"" + value.substr(0, 60) + (value.size() > 60 ? "…" : "") + "\"";
    else if constexpr (std::is_arithmetic_v<T>)
      return std::to_string(value);
    else
      return "[" + std::to_string(value.size()) + "]";
  }
  static std::string describe(const std::optional<std::string> &value) { return describe(*value); }
  static std::string describe(const Binary &binary) {
    return std::to_string(binary.bytes.size()) + " bytes";
  }
  static std::string describe(const ItemValues &items) { return describe(items.values); }
  static std::string describe(const ByteCounts &counts) { return describe(counts.bytes); }
  static std::string describe(const LostFlag &) { return "true"; }
  static std::string describe(const UsageField &usage) {
    return std::to_string(usage.usage.requests) + " requests";
  }
  static std::string describe(const LossName &loss) { return batchLossName(loss.loss); }
  static std::string describe(const ReportRows &rows) { return describe(rows.report.grains); }
  static std::string describe(const Index &index) { return std::to_string(index.index); }
  static std::string describe(const AtLeastZero &size) { return std::to_string(size.value); }
  static std::string describe(const Unsigned &count) { return std::to_string(count.value); }
  static std::string describe(const ErrorCodeField &code) {
    return "\"" + std::string(errorCodeName(code.code)) + "\"";
  }
};

} // namespace

const char *messageTypeName(const Message &message) { return kMessageTypes[message.index()]; }

std::string describeMessage(const Message &message) {
  std::string text;
  std::visit(
      [&](const auto &typed) {
        ProtocolFields::fields(FieldDescriber{text},
                               const_cast<std::decay_t<decltype(typed)> &>(typed));
      },
      message);
  return std::string(messageTypeName(message)) + " {" + text + "}";
}

std::string encodeMessage(const Message &message) {
  msgpack::sbuffer buffer;
  Packer packer(buffer);
  writeMessage(packer, message);
  return std::string(buffer.data(), buffer.size());
}

EncodedMessage encodeMessageBuffer(const Message &message) {
  msgpack::sbuffer buffer;
  Packer packer(buffer);
  writeMessage(packer, message);
  EncodedMessage encoded;
  encoded.size = buffer.size();
  // sbuffer's storage comes from malloc (msgpack-c's sbuffer.hpp).
  encoded.bytes.reset(buffer.release());
  return encoded;
}

std::variant<Message, std::string> decodeMessage(std::string_view bytes) {
  // Bounded: a hostile message cannot make the reader allocate without limit. An ext's body
  // (a long list's chunks, ValueCodec.h) is bytes the message has, read within the same limits.
  using L = ProtocolLimits;
  const msgpack::unpack_limit limits(L::kArrayElements, L::kMapEntries, L::kStringBytes,
                                     L::kBinaryBytes, L::kMessageBytes, L::kDepth);
  return decodeWhole<Message>(bytes, limits, /*inPlace=*/false, readMessage);
}

} // namespace orch::runtime
