// An expansion makes its children a step at a time (EngineOptions::childrenPerStep): the next
// step when its caller asks for work and none is queued, so a parent with millions of children
// never holds the run loop for seconds; the root finishes only when every child is made, and
// one that finishes early leaves no step behind.
#include "EngineTestPlans.h"

#include "orch/runtime/engine/LineageEngine.h"

#include <gtest/gtest.h>

namespace orch::runtime {
namespace {

const char *kPagesThroughWork = R"(
pipeline steps;
source rows = jsonl("unused.jsonl") as Doc;
pages = expand(test.split(rows, field: "n")) as Page;
done = test.identity(pages) { batch: 4 };
sink jsonl(path: "out.jsonl", record: { id: rows.id, pages: reduce(done) });
)";

Value row(int64_t id, int64_t children) {
  return Value::record({{"id", Value::integer(id)}, {"n", Value::integer(children)}});
}

Value ordinals(int64_t count) {
  ValueList list;
  for (int64_t i = 0; i < count; ++i)
    list.push_back(Value::integer(i));
  return Value::list(std::move(list));
}

using orch::testing::identityReport;

EngineOptions stepsOf(uint32_t children) {
  EngineOptions options;
  options.childrenPerStep = children;
  return options;
}

/// Answers every grain of `batch` with the list of `count` ordinals.
BatchReport split(const Batch &batch, int64_t count) {
  return orch::testing::reportFor(batch, [&](size_t) { return ordinals(count); });
}

/// A step of 4 children with one parent of `children` children admitted and split.
struct OneParentSplit {
  plan::Plan plan;
  LineageEngine engine;
  explicit OneParentSplit(int64_t children)
      : plan(orch::testing::compileRunnable(kPagesThroughWork)), engine(plan, stepsOf(4)) {
    engine.admitRoot(0, row(7, children));
    engine.closeAdmission();
    engine.commit(split(*engine.reserveBatch(), children));
  }
};

TEST(ExpansionStepsTest, ChildrenAreMadeAStepAtATimeAsTheQueuesRunDry) {
  OneParentSplit run(10);
  LineageEngine &engine = run.engine;
  const uint64_t madeByTheCommit = engine.stats().entitiesCreated;
  // Four pages were made by the commit: one batch of them is ready, no more.
  // A step's worth is ready: the caller may block waiting for events (it spun, making
  // nothing, while a consumer worked through its backlog).
  EXPECT_FALSE(engine.makingChildren());
  std::vector<Batch> batches;
  batches.push_back(*engine.reserveBatch());
  EXPECT_EQ(batches[0].grains.size(), 4u);
  EXPECT_TRUE(engine.makingChildren()) << "the queues ran dry: the next step is wanted";
  EXPECT_EQ(engine.stats().entitiesCreated, madeByTheCommit);
  // Nothing else is queued: asking again makes the next four.
  batches.push_back(*engine.reserveBatch());
  EXPECT_EQ(engine.stats().entitiesCreated, madeByTheCommit + 4);
  batches.push_back(*engine.reserveBatch());
  EXPECT_EQ(batches[2].grains.size(), 2u) << "the last step makes what is left";
  EXPECT_FALSE(engine.reserveBatch());
  // Answered out of order: the reduce is in ordinal order, and the root finishes once.
  for (size_t b : {2u, 0u, 1u}) {
    EXPECT_TRUE(engine.takeFinishedRoots().empty());
    engine.commit(identityReport(batches[b]));
  }
  std::vector<RootResult> done = engine.takeFinishedRoots();
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, RootStatus::Written);
  EXPECT_EQ(*done[0].rows[0].values[0].field("pages"), ordinals(10));
  EXPECT_TRUE(engine.complete());
  EXPECT_EQ(engine.stateBytes(), 0u);
}

TEST(ExpansionStepsTest, AFailedChildSuppressesTheReduceBeforeTheRestAreMade) {
  OneParentSplit run(1000);
  LineageEngine &engine = run.engine;
  Batch first = *engine.reserveBatch();
  BatchReport report = identityReport(first);
  report.grains[1].kind = RowResultKind::RecordFailure;
  report.grains[1].message = "page 1 is bad";
  engine.commit(report);
  // The row fails at once: the other 996 pages are never made.
  std::vector<RootResult> done = engine.takeFinishedRoots();
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, RootStatus::Failed);
  EXPECT_EQ(engine.stats().entitiesCreated, 1u + 4u);
  EXPECT_FALSE(engine.reserveBatch());
  EXPECT_TRUE(engine.complete());
  EXPECT_EQ(engine.stateBytes(), 0u);
}

TEST(ExpansionStepsTest, AnotherCallsBacklogDoesNotKeepTheNextChildrenWaiting) {
  // A root-level Call with work queued that cannot run now (its replica is busy): the pages'
  // Call still gets every page, a step at a time (they waited until no grain was queued
  // anywhere: the pages' Call idled for 10 of 15 s behind 2,000 rows of another Call).
  plan::Plan plan = orch::testing::compileRunnable(R"(
pipeline backlog;
source rows = jsonl("unused.jsonl") as Doc;
slow = test.identity(rows.id);
pages = expand(test.split(rows, field: "n")) as Page;
sink jsonl(path: "out.jsonl", record: { id: rows.id, s: slow, pages: reduce(test.identity(pages) { batch: 4 }) });
)");
  LineageEngine engine(plan, stepsOf(4));
  engine.admitRoot(0, row(0, 10));
  engine.admitRoot(0, row(1, 0));
  engine.admitRoot(0, row(2, 0));
  engine.closeAdmission();
  auto notSlow = [&](uint32_t call) { return plan.calls[call].name != "slow"; };
  size_t pagesReserved = 0;
  while (std::optional<Batch> batch = engine.reserveBatch(notSlow)) {
    if (plan.calls[batch->call].name == "test.split@pages")
      engine.commit(orch::testing::reportFor(
          *batch, [&](size_t i) { return ordinals(batch->inputsOf(i)[0].field("n")->asInt()); }));
    else
      pagesReserved += batch->grains.size();
  }
  EXPECT_EQ(pagesReserved, 10u);
  EXPECT_TRUE(engine.hasReadyWork()) << "the slow Call's three grains";
}

TEST(ExpansionStepsTest, TheGlobalBarrierWaitsForChildrenNotMadeYet) {
  plan::Plan plan = orch::testing::compileRunnable(kPagesThroughWork);
  EngineOptions options = stepsOf(2);
  options.gather = GatherMode::GlobalBarrier;
  LineageEngine engine(plan, options);
  engine.admitRoot(0, row(0, 1));
  engine.admitRoot(0, row(1, 5));
  engine.closeAdmission();
  Batch first = *engine.reserveBatch();
  Batch second = *engine.reserveBatch();
  ASSERT_EQ(first.grains.size() + second.grains.size(), 2u);
  engine.commit(split(first, 1));
  engine.commit(split(second, 5));
  // The first root's only page and the second's first two are made; the first root's reduce
  // waits until every page of the domain is made and done.
  Batch pages = *engine.reserveBatch();
  ASSERT_EQ(pages.grains.size(), 3u);
  engine.commit(identityReport(pages));
  EXPECT_TRUE(engine.takeFinishedRoots().empty());
  while (std::optional<Batch> more = engine.reserveBatch())
    engine.commit(identityReport(*more));
  std::vector<RootResult> done = engine.takeFinishedRoots();
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(*done[0].rows[0].values[0].field("pages"), ordinals(1));
  EXPECT_EQ(*done[1].rows[0].values[0].field("pages"), ordinals(5));
  EXPECT_TRUE(engine.complete());
}

} // namespace
} // namespace orch::runtime
