// The engine's lookup tables built from plans: what types bound of a Call's growth per grain,
// which the value budget uses for a Call not measured yet (runtime.md, the value budget).
#include "EngineTestPlans.h"

#include "../../runtime/engine/src/PlanLayout.h"

#include <gtest/gtest.h>

namespace orch::runtime {
namespace {

constexpr uint64_t kScalar = kScalarHeldBytes;
/// The sink's record `{ id: ..., out: ... }` where it is made from the Call's results.
constexpr uint64_t kSinkRecord = kScalar + (2 + kScalar) + (3 + kScalar);

/// The growth bound of the Call named "done" in `program`.
uint64_t growthBoundIn(const std::string &program) {
  const plan::Plan plan = orch::testing::compileRunnable(program);
  const PlanLayout layout = buildPlanLayout(plan);
  for (CallId c : layout.calls.ids())
    if (plan.calls[c.index].name == "done")
      return layout.calls[c].growthBytesBound;
  ADD_FAILURE() << "no Call named done";
  return 0;
}

/// The growth bound of `done = call` in a program whose pages it reads; `lines` are more
/// statements, and `out` is what the sink writes beside each document's id.
uint64_t growthBound(const std::string &call, const std::string &lines, const std::string &out) {
  return growthBoundIn("pipeline pages;\n"
                       "source docs = jsonl(\"in.jsonl\") as Doc;\n"
                       "pages = expand(test.split(docs, field: \"n\")) as Page;\n"
                       "done = " +
                       call + ";\n" + lines +
                       "\n"
                       "sink jsonl(path: \"out.jsonl\", record: { id: docs.id, out: " +
                       out + " });\n");
}

TEST(PlanLayoutTest, AScalarResultAndTheScalarsAndRecordsMadeFromItAreBounded) {
  EXPECT_EQ(growthBound("test.checksum(pages)", "", "reduce(done)"), kScalar + kSinkRecord);
  EXPECT_EQ(growthBound("test.checksum(pages)", "high = done > 3;", "reduce(high)"),
            kScalar + kScalar + kSinkRecord);
  // A reduce's list is not made by an expression; what is computed from it in the parent's
  // row is made once per row, at most once per grain.
  EXPECT_EQ(growthBound("test.checksum(pages)", "", "list.len(reduce(done))"),
            kScalar + kScalar + kSinkRecord);
  // A record's fields count where none holds more than a scalar: bounded by its fields.
  EXPECT_EQ(growthBound("test.checksum(pages)", "r = { sum: done, page: pages };", "reduce(r)"),
            kScalar + (kScalar + (3 + kScalar) + (4 + kScalar)) + kSinkRecord);
}

TEST(PlanLayoutTest, AnythingUnboundedMadeFromTheResultLeavesTheCallUnbounded) {
  // A result whose type does not bound it.
  EXPECT_EQ(growthBound("test.tag(pages)", "", "reduce(done)"), 0u);
  EXPECT_EQ(growthBound("test.identity({ page: pages })", "", "reduce(done)"), 0u);
  // A String made from it: the count joined to its document's text (1 MiB held 6.9 MiB).
  EXPECT_EQ(growthBound("test.checksum(pages)",
                        "t = string(broadcast(docs.id, pages)) + string(done);", "reduce(t)"),
            0u);
  // Something made for each child of the grain's entity: one grain, any number of values.
  EXPECT_EQ(growthBound("test.checksum(pages)",
                        "lines = expand(test.split(pages, n: 3)) as Line;\n"
                        "shifted = reduce(broadcast(done, lines) + 1);",
                        "reduce(shifted)"),
            0u);
}

TEST(PlanLayoutTest, AChoiceTheResultDecidesIsBoundedOnlyWhereItsOtherOperandsAreMadeAnyway) {
  // The pages a score keeps exist whatever it decides.
  EXPECT_EQ(growthBound("test.checksum(pages)", "kept = filter(pages, done > 3);", "reduce(kept)"),
            kScalar + kScalar + kSinkRecord);
  // A page's text made only where the score keeps it: made when the score comes back, as much
  // as the score's batch asked for (1 MiB held 6.9 MiB). The same with if and coalesce.
  const std::string text = "big = string(broadcast(docs.id, pages)) + \"x\";\n";
  EXPECT_EQ(
      growthBound("test.checksum(pages)", text + "kept = filter(big, done != -1);", "reduce(kept)"),
      0u);
  EXPECT_EQ(growthBound("test.checksum(pages)",
                        text + "kept = if done != -1 then test.checksum(big) else 0;",
                        "reduce(kept)"),
            0u);
  EXPECT_EQ(growthBound("test.checksum(pages)",
                        text + "kept = coalesce(filter(done, done == -1), test.checksum(big));",
                        "reduce(kept)"),
            0u);
}

TEST(PlanLayoutTest, ACallUsedInTwoDomainsIsBoundedOnlyWhereEveryUseIs) {
  // The pages' use reaches `both` within its domain; the documents' use reaches it through a
  // broadcast, one value per page. Either order of the two lines.
  for (const char *uses : {"pn = done(ordinal(pages));\ndn = done(ordinal(docs));\n",
                           "dn = done(ordinal(docs));\npn = done(ordinal(pages));\n"})
    EXPECT_EQ(growthBoundIn(std::string("pipeline pages;\n"
                                        "source docs = jsonl(\"in.jsonl\") as Doc;\n"
                                        "pages = expand(test.split(docs, field: \"n\")) as Page;\n"
                                        "call done = test.checksum() { batch: 16 };\n") +
                            uses +
                            "both = broadcast(dn, pages) + pn;\n"
                            "sink jsonl(path: \"out.jsonl\", record: { id: docs.id, s: "
                            "reduce(both) });\n"),
              0u)
        << uses;
}

TEST(PlanLayoutTest, WhatAnotherCallMakesFromTheResultIsThatCallsGrowth) {
  EXPECT_EQ(growthBound("test.checksum(pages)", "blob = test.blob(done, bytes: 1000);",
                        "reduce(test.checksum(blob))"),
            kScalar);
}

} // namespace
} // namespace orch::runtime
