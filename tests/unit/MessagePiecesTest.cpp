// Messages in pieces without sockets (MessagePieces): the shared budget and its line, pieces in
// turn, and workers that stall or trickle.
#include "MessagePieces.h"

#include <gtest/gtest.h>

namespace orch::runtime {
namespace {

using Clock = MessagePieces::Clock;
using std::chrono::milliseconds;

PieceMessage piece(uint64_t total, uint64_t offset, size_t bytes, char fill = 'x') {
  return PieceMessage{total, offset, std::string(bytes, fill)};
}

TEST(MessagePiecesTest, FirstPiecesWaitInLineForTheBudgetAndTheWholeMessageComesBack) {
  const Clock::time_point t0 = Clock::now();
  MessagePieces pieces(milliseconds(1000), /*budget=*/100, /*slowest=*/1000);
  PieceMessage a0 = piece(60, 0, 10, 'a');
  MessagePieces::Taken taken = pieces.take(1, a0, t0);
  EXPECT_EQ(taken.granted, std::vector<uint32_t>{1}) << "it fits: told MORE at once";
  EXPECT_EQ(pieces.reserved(), 60u);
  PieceMessage b0 = piece(50, 0, 10, 'b');
  taken = pieces.take(2, b0, t0);
  EXPECT_TRUE(taken.granted.empty()) << "60 + 50 is over the budget of 100: it waits";
  EXPECT_FALSE(taken.whole);

  PieceMessage a1 = piece(60, 10, 50, 'a');
  taken = pieces.take(1, a1, t0 + milliseconds(10));
  ASSERT_TRUE(taken.whole);
  EXPECT_EQ(*taken.whole, std::string(60, 'a'));
  EXPECT_EQ(taken.granted, std::vector<uint32_t>{2}) << "the budget freed: the next one goes";
  EXPECT_EQ(pieces.reserved(), 50u);
}

TEST(MessagePiecesTest, APieceOutOfTurnOrAnImpossibleAnnouncementBreaksTheProtocol) {
  const Clock::time_point t0 = Clock::now();
  MessagePieces pieces(milliseconds(1000), 100, 1000);
  PieceMessage early = piece(60, 10, 10);
  EXPECT_EQ(pieces.take(1, early, t0).broken, "it sent a piece out of turn");
  PieceMessage tooBig = piece(101, 0, 10);
  EXPECT_TRUE(pieces.take(2, tooBig, t0).broken) << "more than the whole budget";
  PieceMessage noMore = piece(10, 0, 10);
  EXPECT_TRUE(pieces.take(3, noMore, t0).broken) << "a whole message in its first piece";
  PieceMessage first = piece(60, 0, 10);
  EXPECT_FALSE(pieces.take(4, first, t0).broken);
  PieceMessage again = piece(60, 0, 10);
  EXPECT_EQ(pieces.take(4, again, t0).broken,
            "it began a message in pieces before its last one ended");
  PieceMessage skipped = piece(60, 20, 10);
  EXPECT_EQ(pieces.take(4, skipped, t0).broken, "it sent a piece out of turn");
  PieceMessage overlong = piece(60, 10, 51);
  EXPECT_EQ(pieces.take(4, overlong, t0).broken, "it sent a piece out of turn");
}

TEST(MessagePiecesTest, AWorkerThatStallsOrTricklesIsNamedAndItsDropFreesTheBudget) {
  const Clock::time_point t0 = Clock::now();
  // 1000 bytes at no less than 1000 bytes/s: all of it within patience + 1 s.
  MessagePieces pieces(milliseconds(500), 2000, 1000);
  PieceMessage slow0 = piece(1000, 0, 10);
  ASSERT_EQ(pieces.take(1, slow0, t0).granted, std::vector<uint32_t>{1});
  PieceMessage waiting0 = piece(1500, 0, 10);
  EXPECT_TRUE(pieces.take(2, waiting0, t0).granted.empty());
  EXPECT_TRUE(pieces.stalled(t0 + milliseconds(400)).empty());
  auto stalled = pieces.stalled(t0 + milliseconds(600));
  ASSERT_EQ(stalled.size(), 1u);
  EXPECT_EQ(stalled[0].first, 1u);
  EXPECT_NE(stalled[0].second.find("sent none for 500 ms"), std::string::npos);

  // Sending a little now and then keeps it from stalling, but not from trickling.
  for (int step = 1; step <= 4; ++step) {
    PieceMessage trickle = piece(1000, 10 * uint64_t(step), 10);
    EXPECT_FALSE(pieces.take(1, trickle, t0 + milliseconds(400 * step)).broken);
  }
  stalled = pieces.stalled(t0 + milliseconds(1600));
  ASSERT_EQ(stalled.size(), 1u);
  EXPECT_NE(stalled[0].second.find("sent a message in pieces slower than"), std::string::npos)
      << stalled[0].second;

  EXPECT_EQ(pieces.drop(1, t0 + milliseconds(1600)), std::vector<uint32_t>{2})
      << "the stalled worker's budget goes to the next in line";
  EXPECT_EQ(pieces.reserved(), 1500u);
  EXPECT_TRUE(pieces.drop(7, t0).empty()) << "a worker without pieces";
  EXPECT_TRUE(pieces.drop(2, t0).empty());
  EXPECT_EQ(pieces.reserved(), 0u);
}

} // namespace
} // namespace orch::runtime
