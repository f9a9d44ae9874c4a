// Messages that workers send in pieces to a coordinator without keys on tcp:// (docs/protocol.md,
// "Pieces"), without a socket: a first piece waits in line until the messages in pieces of all
// workers together fit the budget, then its worker is told MORE (its whole message's bytes are
// reserved at once); the rest must come in order, neither stalling for longer than a worker may
// be silent nor trickling slower than a floor rate. The Coordinator sends MORE, answers a broken
// protocol and loses stalled workers as these decide.
#pragma once

#include "orch/runtime/cluster/Protocol.h"

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace orch::runtime {

class MessagePieces {
public:
  using Clock = std::chrono::steady_clock;

  /// `patience`: how long a worker told MORE may send no piece; `budget`: bytes of messages in
  /// pieces held at once for all workers; `slowestBytesPerSecond`: the floor rate once told MORE.
  MessagePieces(std::chrono::milliseconds patience,
                uint64_t budget = ProtocolLimits::kUnauthenticatedPiecesBytes,
                uint64_t slowestBytesPerSecond = uint64_t(1) << 20);

  struct Taken {
    /// The whole message, once its last piece came.
    std::optional<std::string> whole;
    /// Why the piece breaks the protocol (the worker is to be lost).
    std::optional<std::string> broken;
    /// Workers to tell MORE now.
    std::vector<uint32_t> granted;
  };
  /// Takes a piece of the message worker `w` sends in pieces.
  Taken take(uint32_t w, PieceMessage &piece, Clock::time_point now);
  /// Forgets worker `w`'s message in pieces (the worker is gone); the workers to tell MORE now.
  std::vector<uint32_t> drop(uint32_t w, Clock::time_point now);
  /// Workers told MORE that stalled or trickle, each with why.
  std::vector<std::pair<uint32_t, std::string>> stalled(Clock::time_point now) const;

  /// Bytes reserved for the workers told MORE.
  uint64_t reserved() const { return reserved_; }

private:
  struct Pieces {
    std::string bytes;
    uint64_t total = 0;
    /// Told MORE: its `total` bytes are reserved.
    bool granted = false;
    /// When it was told MORE or last sent a piece, and by when it must have sent all.
    Clock::time_point progress, deadline;
  };
  std::vector<uint32_t> grant(Clock::time_point now);

  std::chrono::milliseconds patience_;
  uint64_t budget_, slowest_;
  std::map<uint32_t, Pieces> pieces_;
  /// Workers whose first piece waits for MORE, in order.
  std::deque<uint32_t> waiting_;
  uint64_t reserved_ = 0;
};

} // namespace orch::runtime
