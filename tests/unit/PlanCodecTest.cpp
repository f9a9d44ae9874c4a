// The plan codec: exact round trips, deterministic bytes, forward compatibility, and clear
// rejection of anything that is not a plan this reader understands.
#include "orch/plan/PlanCodec.h"

#include <msgpack.hpp>

#include <gtest/gtest.h>

#include <random>

namespace orch::plan {
namespace {

Plan samplePlan() {
  Plan plan;
  plan.pipelineName = "pdf_to_markdown";
  plan.sourcePath = "examples/pdf_to_markdown.orch";
  return plan;
}

std::string errorOf(const std::variant<Plan, PlanDecodeError> &result) {
  return std::holds_alternative<PlanDecodeError>(result) ? std::get<PlanDecodeError>(result).message
                                                         : std::string();
}

/// Writes a plan the way a newer orchc might: the given format and extra keys everywhere.
std::string encodeAs(uint32_t major, uint32_t minor, bool extraKeys) {
  msgpack::sbuffer buffer;
  msgpack::packer<msgpack::sbuffer> out(buffer);
  out.pack_map(extraKeys ? 4 : 3);
  out.pack(std::string("magic"));
  out.pack(std::string("orch.plan"));
  out.pack(std::string("format"));
  out.pack_array(2);
  out.pack(major);
  out.pack(minor);
  if (extraKeys) {
    out.pack(std::string("written_by"));
    out.pack(std::string("orchc 9.9"));
  }
  out.pack(std::string("plan"));
  out.pack_map(extraKeys ? 3 : 2);
  out.pack(std::string("pipeline"));
  out.pack(std::string("p"));
  if (extraKeys) {
    out.pack(std::string("future_field"));
    out.pack_array(2);
    out.pack(1);
    out.pack(2);
  }
  out.pack(std::string("source"));
  out.pack(std::string("p.orch"));
  return std::string(buffer.data(), buffer.size());
}

TEST(PlanCodecTest, RoundTripsAndReencodesByteIdentically) {
  std::string bytes = encodePlan(samplePlan());
  auto decoded = decodePlan(bytes);
  ASSERT_TRUE(std::holds_alternative<Plan>(decoded)) << errorOf(decoded);
  EXPECT_EQ(std::get<Plan>(decoded), samplePlan());
  EXPECT_EQ(encodePlan(std::get<Plan>(decoded)), bytes);
}

TEST(PlanCodecTest, LoadsPlansFromNewerMinorVersionsWithUnknownKeys) {
  auto decoded = decodePlan(encodeAs(1, 7, /*extraKeys=*/true));
  ASSERT_TRUE(std::holds_alternative<Plan>(decoded)) << errorOf(decoded);
  EXPECT_EQ(std::get<Plan>(decoded).pipelineName, "p");
  EXPECT_EQ(std::get<Plan>(decoded).format, (FormatVersion{1, 7}));
}

TEST(PlanCodecTest, RejectsAnUnknownMajorVersionWithAClearMessage) {
  EXPECT_EQ(errorOf(decodePlan(encodeAs(2, 0, false))),
            "plan format 2.0 is not supported (this orch reads 1.x); recompile it with orchc");
}

TEST(PlanCodecTest, RejectsThingsThatAreNotPlans) {
  EXPECT_EQ(errorOf(decodePlan("")), "corrupt plan: the file is truncated");
  EXPECT_EQ(errorOf(decodePlan("\x93\x01\x02\x03")),
            "corrupt plan: not an Orch plan (the file is not a MessagePack map)");
  std::string bytes = encodePlan(samplePlan());
  EXPECT_EQ(errorOf(decodePlan(bytes + "x")), "corrupt plan: 1 unexpected bytes after the plan");
}

TEST(PlanCodecTest, EveryTruncationAndRandomCorruptionIsRejectedOrDecodedWithoutCrashing) {
  std::string bytes = encodePlan(samplePlan());
  for (size_t length = 0; length < bytes.size(); ++length) {
    std::string error = errorOf(decodePlan(bytes.substr(0, length)));
    EXPECT_EQ(error.rfind("corrupt plan: ", 0), 0u) << "length " << length << ": " << error;
  }
  std::mt19937 random(7);
  for (int round = 0; round < 2000; ++round) {
    std::string corrupted = bytes;
    for (int flips = 1 + random() % 3; flips > 0; --flips)
      corrupted[random() % corrupted.size()] = char(random() % 256);
    auto decoded = decodePlan(corrupted);
    if (auto *error = std::get_if<PlanDecodeError>(&decoded)) {
      EXPECT_FALSE(error->message.empty());
    }
  }
}

} // namespace
} // namespace orch::plan
