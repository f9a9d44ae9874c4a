// The coordinator <-> worker protocol (docs/protocol.md): each ZeroMQ message body is one
// MessagePack map with a "type" key. Readers ignore keys they do not know; the protocol
// version travels in the handshake. Nothing outside Protocol.cpp touches the bytes.
#pragma once

#include "orch/runtime/engine/EngineTypes.h"
#include "orch/runtime/operators/MessageLimits.h"

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace orch::runtime {

/// 2: values kept on the worker that made them (references in batches and results, drop,
/// fetch and blobs between workers).
/// 5: plans of format 2, their source positions beside them in welcome.
inline constexpr uint32_t kProtocolVersion = 7;

/// Defaults of the liveness and pipelining settings (`orch run --heartbeat-ms --liveness
/// --depth`): a heartbeat every 500 ms, a peer lost after 5 silent intervals, 2 batches sent
/// ahead to each replica.
inline constexpr uint32_t kDefaultHeartbeatMs = 500;
inline constexpr uint32_t kDefaultLiveness = 5;
inline constexpr uint32_t kDefaultDepth = 2;
/// `orch run --keep-values-over`'s default: 64 KiB (a thumbnail travels, a page image stays).
inline constexpr uint64_t kDefaultKeepValuesOver = 64 << 10;

/// Worker -> coordinator, first message: who it is and what it offers.
struct HelloMessage {
  uint32_t version = kProtocolVersion;
  std::string worker;
  int64_t pid = 0;
  std::string host;
  double cpus = 1;
  std::vector<int64_t> gpus;
  std::vector<std::string> operators;
  /// Bytes of memory it offers replicas (0: not said), against the Calls' `memory` hints.
  uint64_t memoryBytes = 0;
  /// Where other workers fetch the values it keeps ("": it keeps none), and the CURVE public
  /// key of that socket ("": no CURVE).
  std::string peerEndpoint;
  std::string peerKey;
  /// Bytes of memory of each of `gpus`, in that order (empty: not said).
  std::vector<uint64_t> gpuMemory;
};

/// Coordinator -> worker, the answer to HELLO: timing and the plan the replicas come from.
struct WelcomeMessage {
  uint32_t version = kProtocolVersion;
  uint32_t heartbeatMs = kDefaultHeartbeatMs;
  uint32_t liveness = kDefaultLiveness;
  /// The encoded plan (plan/PlanCodec.h).
  std::string plan;
  /// With CURVE: the public keys its peer socket admits (the workers of this run).
  std::vector<std::string> peerKeys;
  /// The plan's source positions (plan/PlanPositions.h), for the worker's messages.
  std::string planPositions;
};

/// Coordinator -> worker: host replica `replica` of Call `call` (an operator instance kept for
/// every batch sent to that replica).
struct InitMessage {
  uint32_t replica = 0;
  uint32_t call = 0;
  /// The Call's dataflow inputs in the order batches carry them.
  std::vector<std::string> inputs;
  /// Results of at least this many bytes stay on the worker and travel as references (0: all
  /// travel inline).
  uint64_t keepOver = 0;
  /// The replica's number among its Call's replicas, for messages and ORCH_REPLICA (`replica`
  /// numbers every replica of the run).
  uint32_t callReplica = 0;
};

/// Coordinator -> worker: replica `replica` moved to another worker; this one stops hosting it
/// (it has no batches queued here).
struct ReleaseMessage {
  uint32_t replica = 0;
};

/// A worker that keeps values other workers fetch: its name, its peer endpoint and the CURVE
/// public key of that endpoint ("" without CURVE).
struct PeerAddress {
  std::string worker;
  std::string endpoint;
  std::string key;
  friend bool operator==(const PeerAddress &, const PeerAddress &) = default;
};

/// Coordinator -> worker: run this batch on this replica.
struct BatchMessage {
  uint32_t replica = 0;
  Batch batch;
  /// Where the references among the inputs are kept (other workers than the receiver).
  std::vector<PeerAddress> peers;
};

/// Coordinator -> worker: nothing reads these kept values any more.
struct DropMessage {
  std::vector<uint64_t> ids;
};

/// Coordinator -> worker: that worker was lost; a fetch from it ends at once (the batch is
/// reported lost and runs again with the values computed again) instead of waiting out its
/// time limit.
struct LostMessage {
  std::string worker;
};

/// Worker -> worker (peer socket): send me these kept values.
struct FetchMessage {
  std::vector<uint64_t> ids;
};

/// Worker -> worker: the values asked for that it still keeps, id for id (a missing id is
/// left out).
struct BlobsMessage {
  std::vector<uint64_t> ids;
  std::vector<Value> values;
};

/// Worker -> coordinator: one batch's report.
struct ResultMessage {
  uint32_t replica = 0;
  double seconds = 0;
  BatchReport report;
  /// With a lost report: the worker whose peer socket this one could not reach for an input
  /// ("": none); the coordinator then relays that worker's values for this one.
  std::string unreachable;
};

/// Worker -> coordinator: a replica of a declared operator (whose process starts before any
/// batch) started, or could not (`error`, with the operator's traceback).
struct StartedMessage {
  uint32_t replica = 0;
  double seconds = 0;
  std::optional<std::string> error;
};

/// Either way; any message also counts as a heartbeat.
struct HeartbeatMessage {};

/// Either way: the sender is going away (the run is over, the worker shuts down).
struct ByeMessage {
  std::string reason;
};

/// What an ERROR asks of the worker that receives it (absent in older peers' messages).
enum class ErrorCode : uint8_t {
  /// Information only.
  Unspecified,
  /// The coordinator no longer counts on this worker: it ends its session (and, unless it
  /// runs with --once, connects again).
  DeclaredLost,
  /// A batch ran past its Call's timeout on this worker: a replica may be stuck inside its
  /// operator, so the worker process starts afresh.
  Restart,
};

/// Either way: the peer sent something this side cannot accept.
struct ErrorMessage {
  std::string message;
  ErrorCode code = ErrorCode::Unspecified;
};

/// Worker -> a coordinator without keys (tcp://): one piece of a message larger than such a
/// coordinator accepts at once (ProtocolLimits::kUnauthenticatedMessageBytes). The first piece
/// (offset 0) comes unasked; the others only after the coordinator said MORE, in order, until
/// `total` bytes (docs/protocol.md, "Pieces").
struct PieceMessage {
  uint64_t total = 0;
  uint64_t offset = 0;
  std::string bytes;
};

/// Coordinator -> worker: send the rest of the message you began in pieces.
struct MoreMessage {};

using Message =
    std::variant<HelloMessage, WelcomeMessage, InitMessage, BatchMessage, ResultMessage,
                 HeartbeatMessage, ByeMessage, ErrorMessage, StartedMessage, ReleaseMessage,
                 DropMessage, FetchMessage, BlobsMessage, PieceMessage, MoreMessage, LostMessage>;

const char *messageTypeName(const Message &message);
/// The message as its fields: `batch {batch=3, replica=1, ..., grains=[2]}` (for logs and tests).
std::string describeMessage(const Message &message);

std::string encodeMessage(const Message &message);

/// An encoded message in a buffer of its own (from malloc; `free` releases it), which a
/// ZeroMQ frame can take over without copying a large value's bytes again.
struct EncodedMessage {
  std::unique_ptr<char, void (*)(void *)> bytes{nullptr, &std::free};
  size_t size = 0;
};
EncodedMessage encodeMessageBuffer(const Message &message);

/// The message in `bytes`, or a description of what is wrong with them.
std::variant<Message, std::string> decodeMessage(std::string_view bytes);

/// The environment variable that hands local workers the CURVE keys the coordinator made for
/// them: "PUBLIC SECRET COORDINATOR-PUBLIC" (Z85). A worker reads and then removes it.
inline constexpr const char *kWorkerCurveEnvironment = "ORCH_WORKER_CURVE";

} // namespace orch::runtime
