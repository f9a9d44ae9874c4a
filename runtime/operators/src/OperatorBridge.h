// The worker <-> operator process protocol (docs/protocol.md, "Operator processes"): frames of
// a 4-byte big-endian length and one MessagePack map with a "type" key, over the socket on the
// child's fd 3. The child says hello; the worker sends init (constants, types); the child
// answers ready or error; then batch -> result (one value or one error per item) or
// batch_error; shutdown ends it. python/orch_operator.py is the child side for Python classes.
#pragma once

#include "orch/plan/Plan.h"
#include "orch/runtime/values/Value.h"

#include <msgpack.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace orch::runtime {

inline constexpr uint32_t kBridgeVersion = 1;
/// The largest frame either side accepts.
inline constexpr uint32_t kMaxBridgeFrameBytes = 1u << 30;

using BridgeDeadline = std::optional<std::chrono::steady_clock::time_point>;

enum class FrameStatus { Ok, TimedOut, Closed, Malformed };

/// Writes one frame; Closed when the peer is gone, TimedOut at the deadline.
FrameStatus writeFrame(int fd, std::string_view body, BridgeDeadline deadline);
/// Whether `fd` has something to read (or was closed) within `timeout`.
bool waitReadable(int fd, std::chrono::milliseconds timeout);
/// Reads one frame into the first `size` bytes of `buffer`, which only grows (a batch of
/// images would otherwise cost fresh pages every time); Malformed for a length over
/// kMaxBridgeFrameBytes.
FrameStatus readFrame(int fd, std::string &buffer, size_t &size, BridgeDeadline deadline);

/// What the worker tells a new operator process.
struct BridgeInit {
  const plan::PlanExternalOperator *op = nullptr;
  std::string call;
  uint32_t replica = 0;
  const std::vector<plan::NamedConstant> *constants = nullptr;
};

std::string encodeInit(const BridgeInit &init);
/// Where batches are encoded: its memory is kept from one batch to the next (fresh pages for
/// every batch of images would cost more than copying them).
struct BatchBuffer {
  msgpack::sbuffer bytes;
  size_t capacity = 0;
};

/// One batch: `columns[k]` holds input parameter k's values (declaration order), one per item.
void encodeBatch(uint64_t id, const std::vector<std::vector<const Value *>> &columns,
                 BatchBuffer &buffer);
std::string encodeShutdown();

struct ChildHello {
  uint32_t version = 0;
  int64_t pid = 0;
};
struct ChildReady {
  double seconds = 0;
};
/// The operator could not start (init) or a whole batch failed: a message, with the Python
/// traceback when there is one.
struct ChildError {
  uint64_t batch = 0;
  std::string message;
};
struct ChildResult {
  uint64_t batch = 0;
  /// One per item (Null where the item failed).
  std::vector<Value> values;
  /// Items that failed, by position, with their messages.
  std::map<uint32_t, std::string> errors;
};

using ChildMessage = std::variant<ChildHello, ChildReady, ChildError, ChildResult>;

/// The message in `bytes`, or what is wrong with them.
std::variant<ChildMessage, std::string> decodeChildMessage(std::string_view bytes);

} // namespace orch::runtime
