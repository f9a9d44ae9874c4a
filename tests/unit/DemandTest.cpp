// Demand (semantics.md): a grain runs only if some consumer needs it for its entity. An if
// runs only its chosen branch, a coalesce its later operands only where the earlier ones are
// dropped, a filter its value only where the mask is true; what nothing needed reads never
// runs; the grains left out are sealed NOT NEEDED and counted, under every dispatch policy and
// gather mode.
#include "EngineDriver.h"
#include "EngineTestPlans.h"

#include "orch/runtime/engine/LineageEngine.h"
#include "orch/runtime/operators/TestOperators.h"
#include "orch/stdlib/CoreOperators.h"

#include <gtest/gtest.h>

#include <map>

namespace orch::runtime {
namespace {

using testing::DriverOptions;
using testing::EngineDriver;

plan::Plan compile(const std::string &text) { return orch::testing::compileRunnable(text); }
using Operators = orch::testing::EngineTestOperators;

Value doc(int64_t id, int64_t pages) {
  return Value::record({{"id", Value::integer(id)}, {"n", Value::integer(pages)}});
}

/// Runs `plan` over `docs` under `options`, returning the finished roots in source order.
std::vector<RootResult> runAll(const plan::Plan &plan, Operators &ops,
                               const std::vector<Value> &docs, EngineOptions options = {},
                               DriverOptions driver = {3, 4}, EngineStats *stats = nullptr) {
  EngineDriver engine(plan, options, ops.registry, driver);
  testing::DriverRun run = engine.run(docs);
  EXPECT_EQ(run.error, "ok");
  std::sort(run.roots.begin(), run.roots.end(),
            [](const RootResult &a, const RootResult &b) { return a.sourceRow < b.sourceRow; });
  if (stats)
    *stats = engine.engine().stats();
  return run.roots;
}

const Value &field(const RootResult &root, size_t row, const char *name) {
  return *root.rows.at(row).values.at(0).field(name);
}

// The problem the issue reports: "text layer if it is long enough, else OCR" ran the render
// and the OCR on every page. The expensive chain behind the untaken branch must not run.
const char *kTextOrOcr = R"(
pipeline text_or_ocr;
source rows = jsonl("unused.jsonl") as Doc;
pages = expand(test.split(rows, field: "n")) as Page;
short = pages < 2;
rendered = test.identity(pages) { batch: 3 };
ocred = test.identity(rendered) { batch: 3 };
layer = test.identity(pages) { batch: 3 };
text = if short then ocred else layer;
sink jsonl(path: "out.jsonl", record: { id: rows.id, text: reduce(text) });
)";

TEST(DemandTest, AnIfRunsOnlyTheChainOfTheBranchItChooses) {
  plan::Plan plan = compile(kTextOrOcr);
  for (GatherMode gather : {GatherMode::Lineage, GatherMode::GlobalBarrier}) {
    Operators ops;
    EngineOptions options;
    options.gather = gather;
    EngineStats stats;
    std::vector<RootResult> roots =
        runAll(plan, ops, {doc(0, 5), doc(1, 1), doc(2, 0)}, options, {5, 3}, &stats);
    ASSERT_EQ(roots.size(), 3u);
    // Pages 0 and 1 are short (OCR'd), the others use their text layer.
    EXPECT_EQ(ops.log->rowsRun("rendered"), 3u);
    EXPECT_EQ(ops.log->rowsRun("ocred"), 3u);
    EXPECT_EQ(ops.log->rowsRun("layer"), 3u);
    EXPECT_EQ(stats.grainsNotNeeded, 9u) << "each page leaves out one branch: 1 or 2 grains";
    EXPECT_EQ(field(roots[0], 0, "text").str(), "[0, 1, 2, 3, 4]");
    EXPECT_EQ(field(roots[1], 0, "text").str(), "[0]");
    EXPECT_EQ(roots[2].status, RootStatus::Written);
  }
}

TEST(DemandTest, ACoalesceNeedsALaterOperandOnlyWhereTheEarlierOnesAreDropped) {
  plan::Plan plan = compile(R"(
pipeline fallback;
source rows = jsonl("unused.jsonl") as Doc;
pages = expand(test.split(rows, field: "n")) as Page;
first = test.identity(filter(pages, pages > 2)) { batch: 2 };
second = test.identity(filter(pages, pages > 0)) { batch: 2 };
third = test.identity(pages) { batch: 2 };
sink jsonl(path: "out.jsonl", record: { v: reduce(coalesce(first, second, third)) });
)");
  Operators ops;
  EngineStats stats;
  std::vector<RootResult> roots = runAll(plan, ops, {doc(0, 5)}, {}, {2, 2}, &stats);
  EXPECT_EQ(field(roots.at(0), 0, "v").str(), "[0, 1, 2, 3, 4]");
  EXPECT_EQ(ops.log->rowsRun("first"), 2u) << "pages 3 and 4 pass the first filter";
  EXPECT_EQ(ops.log->rowsRun("second"), 2u) << "pages 1 and 2, where first is dropped";
  EXPECT_EQ(ops.log->rowsRun("third"), 1u) << "page 0 only";
  EXPECT_EQ(stats.grainsNotNeeded, 2u + 4u) << "second on pages 3 and 4, third on pages 1 to 4";
}

TEST(DemandTest, AFilterComputesItsValueOnlyWhereTheMaskIsTrue) {
  plan::Plan plan = compile(R"(
pipeline filtered;
source rows = jsonl("unused.jsonl") as Doc;
pages = expand(test.split(rows, field: "n")) as Page;
costly = test.identity(test.identity(pages) { batch: 2 }) { batch: 2 };
kept = filter(costly, pages % 2 == 0);
sink jsonl(path: "out.jsonl", record: { v: reduce(kept) });
)");
  Operators ops;
  EngineStats stats;
  std::vector<RootResult> roots = runAll(plan, ops, {doc(0, 6)}, {}, {2, 2}, &stats);
  EXPECT_EQ(field(roots.at(0), 0, "v").str(), "[0, 2, 4]");
  EXPECT_EQ(ops.log->rowsRun("costly"), 3u);
  EXPECT_EQ(stats.grainsNotNeeded, 6u) << "both Calls on the three odd pages";
}

TEST(DemandTest, AValueNothingReadsNeverRuns) {
  plan::Plan plan = compile(R"(
pipeline unused;
source rows = jsonl("unused.jsonl") as Doc;
pages = expand(test.split(rows, field: "n")) as Page;
wasted = test.identity(test.fail(pages, ordinals: "1"));
sink jsonl(path: "out.jsonl", record: { id: rows.id, n: reduce(pages) });
)");
  Operators ops;
  EngineStats stats;
  std::vector<RootResult> roots = runAll(plan, ops, {doc(0, 3)}, {}, {2, 2}, &stats);
  EXPECT_EQ(roots.at(0).status, RootStatus::Written) << "the failure nobody needed never ran";
  EXPECT_EQ(ops.log->rowsRun("wasted"), 0u);
  EXPECT_EQ(stats.grainsNotNeeded, 6u);
  EXPECT_EQ(stats.grainsRun, 1u) << "only the split";
}

TEST(DemandTest, AConstantConditionChoosesWithoutWaitingForAnything) {
  plan::Plan plan = compile(R"(
pipeline constant;
source rows = jsonl("unused.jsonl") as Doc;
param fast: Bool = true;
pages = expand(test.split(rows, field: "n")) as Page;
text = if fast then test.identity(pages) else test.fail(pages, ordinals: "0");
sink jsonl(path: "out.jsonl", record: { v: reduce(text) });
)");
  Operators ops;
  std::vector<RootResult> roots = runAll(plan, ops, {doc(0, 3)});
  EXPECT_EQ(roots.at(0).status, RootStatus::Written);
  EXPECT_EQ(field(roots.at(0), 0, "v").str(), "[0, 1, 2]");
}

TEST(DemandTest, AFailureInAnUntakenBranchDoesNotFailTheRow) {
  plan::Plan plan = compile(R"(
pipeline untaken;
source rows = jsonl("unused.jsonl") as Doc;
pages = expand(test.split(rows, field: "n")) as Page;
bad = test.fail(pages, ordinals: "0,1,2");
text = if pages > 5 then bad else pages;
sink jsonl(path: "out.jsonl", record: { v: reduce(text) });
)");
  Operators ops;
  std::vector<RootResult> roots = runAll(plan, ops, {doc(0, 3)});
  EXPECT_EQ(roots.at(0).status, RootStatus::Written);
  EXPECT_TRUE(roots.at(0).failures.empty());
  EXPECT_EQ(ops.log->rowsRun("bad"), 0u);
}

TEST(DemandTest, AnUnusedValueBesideAChoiceNeitherRunsNorDisturbsItsCount) {
  // `unused` reads x, which only the if's branch needs: x's count of consumers must not count
  // the never-needed `unused` (a review found this aborted the run).
  plan::Plan plan = compile(R"(
pipeline unused_beside;
source rows = jsonl("unused.jsonl") as Doc;
pages = expand(test.split(rows, field: "n")) as Page;
x = test.identity(pages) { batch: 2 };
unused = x + 1;
also = test.identity(unused);
t = if pages >= 1 then x else 100;
sink jsonl(path: "out.jsonl", record: { t: reduce(t) });
)");
  Operators ops;
  EngineStats stats;
  std::vector<RootResult> roots = runAll(plan, ops, {doc(0, 3)}, {}, {2, 2}, &stats);
  ASSERT_EQ(roots.size(), 1u);
  EXPECT_EQ(field(roots[0], 0, "t").str(), "[100, 1, 2]");
  EXPECT_EQ(ops.log->rowsRun("x"), 2u);
  EXPECT_EQ(ops.log->rowsRun("also"), 0u);
}

// Resume down to the child: a grain whose value an earlier run kept does not run again, and
// neither does what only it would have read (the render of a page whose OCR is kept). The
// kept grains here are those of odd pages; even pages render and OCR again.
TEST(DemandTest, WhatOnlyAKeptGrainReadsIsNotNeeded) {
  plan::Plan plan = compile(R"(
pipeline resumed;
source rows = jsonl("unused.jsonl") as Doc;
pages = expand(test.split(rows, field: "n")) as Page;
ocred = test.identity(test.identity(pages) { batch: 2 }) { batch: 2 };
sink jsonl(path: "out.jsonl", record: { id: rows.id, text: reduce(ocred) });
)");
  uint32_t ocrNode = plan::kNone;
  for (uint32_t n = 0; n < plan.nodes.size(); ++n)
    if (plan.nodes[n].kind == plan::NodeKind::Invoke &&
        plan.calls[plan.nodes[n].index].name == "ocred")
      ocrNode = n;
  ASSERT_NE(ocrNode, plan::kNone);
  const std::vector<Value> docs = {doc(0, 4), doc(1, 3)};
  // The earlier run: every grain's value, as the run journal keeps them.
  std::map<uint64_t, Value> kept;
  EngineOptions first;
  first.onGrainValue = [&](uint32_t node, uint64_t key, uint32_t, uint64_t, const Value &value) {
    if (node == ocrNode && value.asInt() % 2 == 1)
      kept.emplace(key, value);
  };
  Operators earlier;
  std::vector<RootResult> before = runAll(plan, earlier, docs, first);
  ASSERT_EQ(kept.size(), 3u) << "pages 1 and 3 of doc 0, page 1 of doc 1";
  for (GatherMode gather : {GatherMode::Lineage, GatherMode::GlobalBarrier}) {
    EngineOptions resumed;
    resumed.gather = gather;
    resumed.recall = [&](uint32_t node, uint64_t key) -> const Value * {
      auto found = node == ocrNode ? kept.find(key) : kept.end();
      return found == kept.end() ? nullptr : &found->second;
    };
    Operators ops;
    EngineStats stats;
    std::vector<RootResult> after = runAll(plan, ops, docs, resumed, {2, 2}, &stats);
    ASSERT_EQ(after.size(), before.size());
    for (size_t i = 0; i < after.size(); ++i)
      EXPECT_EQ(field(after[i], 0, "text").str(), field(before[i], 0, "text").str());
    EXPECT_EQ(stats.grainsRecalled, 3u);
    EXPECT_EQ(ops.log->rowsRun("ocred"), 4u) << "the even pages";
    EXPECT_EQ(ops.log->rowsRun("test.identity@ocred"), 4u)
        << "nothing renders a page whose OCR is kept";
    EXPECT_EQ(stats.grainsNotNeeded, 3u);
  }
}

} // namespace
} // namespace orch::runtime
