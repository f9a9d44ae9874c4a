// The budget and order of messages in pieces (MessagePieces.h).
#include "MessagePieces.h"

namespace orch::runtime {

MessagePieces::MessagePieces(std::chrono::milliseconds patience, uint64_t budget,
                             uint64_t slowestBytesPerSecond)
    : patience_(patience), budget_(budget), slowest_(slowestBytesPerSecond) {}

MessagePieces::Taken MessagePieces::take(uint32_t w, PieceMessage &piece, Clock::time_point now) {
  Taken taken;
  auto found = pieces_.find(w);
  if (piece.offset == 0) {
    if (found != pieces_.end()) {
      taken.broken = "it began a message in pieces before its last one ended";
      return taken;
    }
    if (piece.total <= piece.bytes.size() || piece.total > budget_) {
      taken.broken = "it announced a message in pieces of " + std::to_string(piece.total) +
                     " bytes (more than its first piece, and at most " + std::to_string(budget_) +
                     ")";
      return taken;
    }
    Pieces &pieces = pieces_[w];
    pieces.total = piece.total;
    pieces.bytes = std::move(piece.bytes);
    waiting_.push_back(w);
    taken.granted = grant(now);
    return taken;
  }
  if (found == pieces_.end() || !found->second.granted || piece.bytes.empty() ||
      piece.offset != found->second.bytes.size() ||
      piece.bytes.size() > found->second.total - piece.offset) {
    taken.broken = "it sent a piece out of turn";
    return taken;
  }
  found->second.bytes += piece.bytes;
  found->second.progress = now;
  if (found->second.bytes.size() < found->second.total)
    return taken;
  taken.whole = std::move(found->second.bytes);
  taken.granted = drop(w, now);
  return taken;
}

std::vector<uint32_t> MessagePieces::grant(Clock::time_point now) {
  std::vector<uint32_t> granted;
  while (!waiting_.empty()) {
    const uint32_t w = waiting_.front();
    Pieces &pieces = pieces_.at(w);
    if (reserved_ + pieces.total > budget_)
      break;
    reserved_ += pieces.total;
    pieces.granted = true;
    pieces.progress = now;
    pieces.deadline = now + patience_ + std::chrono::milliseconds(1000 * pieces.total / slowest_);
    pieces.bytes.reserve(pieces.total);
    waiting_.pop_front();
    granted.push_back(w);
  }
  return granted;
}

std::vector<uint32_t> MessagePieces::drop(uint32_t w, Clock::time_point now) {
  auto found = pieces_.find(w);
  if (found == pieces_.end())
    return {};
  if (found->second.granted)
    reserved_ -= found->second.total;
  else
    std::erase(waiting_, w);
  pieces_.erase(found);
  return grant(now);
}

std::vector<std::pair<uint32_t, std::string>> MessagePieces::stalled(Clock::time_point now) const {
  std::vector<std::pair<uint32_t, std::string>> found;
  for (const auto &[w, pieces] : pieces_) {
    if (!pieces.granted)
      continue;
    if (now - pieces.progress > patience_)
      found.emplace_back(w, "it was asked for the rest of a message in pieces and sent none for " +
                                std::to_string(patience_.count()) + " ms");
    else if (now > pieces.deadline)
      found.emplace_back(w, "it sent a message in pieces slower than " +
                                std::to_string(slowest_ >> 10) + " KiB/s");
  }
  return found;
}

} // namespace orch::runtime
