// What a value, a batch and a result may hold to travel in one message between processes
// (docs/protocol.md, "Limits"). Every executor checks them, in-process runs too, so that a value
// too large to travel fails its own row the same way whatever runs it.
#pragma once

#include "orch/runtime/engine/EngineTypes.h"

#include <cstdint>
#include <optional>
#include <string>

namespace orch::runtime {

/// What a protocol message may hold at most (a hostile message cannot make the reader allocate
/// without limit). Senders check values against them first, so that a value too large to
/// travel fails its own row instead of a batch that nobody can read (docs/protocol.md).
struct ProtocolLimits {
  static constexpr uint32_t kArrayElements = 1u << 20;
  static constexpr uint32_t kMapEntries = 1u << 16;
  static constexpr uint32_t kStringBytes = 64u << 20;
  static constexpr uint32_t kBinaryBytes = 256u << 20;
  /// A whole message (a batch's inputs, a result's values) at most: the sockets refuse and
  /// disconnect a peer that sends more (ZMQ_MAXMSGSIZE).
  static constexpr uint64_t kMessageBytes = uint64_t(1) << 30;
  /// What a coordinator without keys accepts in one message on a tcp:// endpoint, where
  /// anyone may connect: larger messages come in pieces of at most kPieceBytes.
  static constexpr uint64_t kUnauthenticatedMessageBytes = 64u << 10;
  static constexpr uint64_t kPieceBytes = 60u << 10;
  /// The messages in pieces such a coordinator holds for all its workers together at once;
  /// one larger than this cannot be sent to it (a worker turns such a result into a batch
  /// error).
  static constexpr uint64_t kUnauthenticatedPiecesBytes = 64u << 20;
  /// Nesting of a whole message; a value inside a batch or result may nest a few levels less.
  static constexpr uint32_t kDepth = 64;
  static constexpr uint32_t kValueDepth = kDepth - 4;
};

/// About how many bytes `value` takes in a message (a reference: a few dozen).
uint64_t messageBytes(const Value &value);

/// Why `value` cannot travel in a message (the first limit it breaks), or nullopt.
std::optional<std::string> exceedsProtocolLimits(const Value &value);

/// The batch error for a batch with an input, or a report with a value, that cannot travel:
/// every executor uses it (in-process runs too), so that outputs do not depend on the executor.
std::optional<std::string> batchExceedsProtocolLimits(const Batch &batch);
std::optional<std::string> reportExceedsProtocolLimits(const BatchReport &report);

} // namespace orch::runtime
