// Property test of the lineage engine: random .orch programs (up to 3 levels of nesting,
// filters, ifs and coalesces over Calls (demand), broadcasts, several sinks, injected failures,
// dedup.exact of children's values: the same survivors and duplicates whatever the policy) run
// under random policies, batch sizes, completion orders and lost batches must produce exactly the
// rows of the sequential reference interpreter below, in ordinal order, with every source row
// accounted for.
#include "CompileExample.h"
#include "EngineDriver.h"
#include "RandomPrograms.h"
#include "ReferenceInterpreter.h"

#include "orch/runtime/engine/LineageEngine.h"
#include "orch/runtime/operators/TestOperators.h"
#include "orch/stdlib/CoreOperators.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <map>
#include <random>
#include <set>
#include <sstream>

namespace orch::runtime {
namespace {

using orch::testing::chance;
using orch::testing::pick;
using orch::testing::ProgramGenerator;
using orch::testing::Random;
using orch::testing::ReferenceInterpreter;

// --- The property ---------------------------------------------------------------------------

std::string describe(const std::vector<DuplicateRow> &duplicates) {
  std::string text;
  for (const DuplicateRow &d : duplicates) {
    text += d.dedup + " [";
    for (uint32_t ordinal : d.path)
      text += std::to_string(ordinal) + ",";
    text += "] of row " + std::to_string(d.survivorRow) + " [";
    for (uint32_t ordinal : d.survivorPath)
      text += std::to_string(ordinal) + ",";
    text += "]; ";
  }
  return text;
}

bool extends(const std::vector<uint32_t> &path, const std::vector<uint32_t> &prefix) {
  return path.size() > prefix.size() && std::equal(prefix.begin(), prefix.end(), path.begin());
}

std::string describe(const SinkRow &row) {
  std::string text = "sink " + std::to_string(row.sink) + " [";
  for (uint32_t ordinal : row.path)
    text += std::to_string(ordinal) + ",";
  text += std::string("] ") + rowStatusName(row.status);
  for (const Value &value : row.values)
    text += " " + value.str();
  return text;
}

/// Compares one root's rows. Rows below a parent poisoned by a GroupFailure may differ only as
/// the barrier allows: a sibling the engine ran before the barrier has the reference's row, the
/// others failed (or never existed, when the suppression stopped an expand).
void compareRoot(const RootResult &engine, const RootResult &reference, const std::string &where) {
  std::vector<std::vector<uint32_t>> poisoned;
  for (const Failure &failure : engine.failures)
    if (failure.kind == FailureKind::GroupFailure && !failure.path.empty())
      poisoned.emplace_back(failure.path.begin(), failure.path.end() - 1);
  auto tainted = [&](const SinkRow &row) {
    for (const auto &prefix : poisoned)
      if (extends(row.path, prefix))
        return true;
    return false;
  };
  std::vector<const SinkRow *> engineRows, referenceRows;
  for (const SinkRow &row : engine.rows)
    if (!tainted(row))
      engineRows.push_back(&row);
  for (const SinkRow &row : reference.rows)
    if (!tainted(row))
      referenceRows.push_back(&row);
  ASSERT_EQ(engineRows.size(), referenceRows.size()) << where;
  for (size_t i = 0; i < engineRows.size(); ++i) {
    const SinkRow &got = *engineRows[i], &want = *referenceRows[i];
    ASSERT_TRUE(got.sink == want.sink && got.path == want.path && got.status == want.status &&
                got.values == want.values)
        << where << "\n  engine:    " << describe(got) << "\n  reference: " << describe(want);
  }
  for (const SinkRow &row : engine.rows) {
    if (!tainted(row) || row.status == RowStatus::Failed)
      continue;
    auto same = std::find_if(reference.rows.begin(), reference.rows.end(), [&](const SinkRow &r) {
      return r.sink == row.sink && r.path == row.path;
    });
    ASSERT_TRUE(same != reference.rows.end() && same->status == row.status &&
                same->values == row.values)
        << where << "\n  engine row below a poisoned parent: " << describe(row);
  }
  if (poisoned.empty()) {
    ASSERT_EQ(engine.status, reference.status) << where;
  }
  for (const SinkRow &row : engine.rows) {
    if (row.status == RowStatus::Failed) {
      ASSERT_LT(row.failure, engine.failures.size()) << where;
    }
  }
}

void checkOrdinalOrder(const RootResult &root, const std::string &where) {
  for (size_t i = 1; i < root.rows.size(); ++i) {
    if (root.rows[i].sink == root.rows[i - 1].sink) {
      ASSERT_LT(root.rows[i - 1].path, root.rows[i].path) << where << ": rows out of order";
    }
  }
}

struct DispatchChoice {
  const char *policy;
  ReadyOrder order;
  BatchingScope scope;
  bool probeFirst;
};
constexpr std::array<DispatchChoice, 4> kDispatchChoices{{
    {"fifo", ReadyOrder::Fifo, BatchingScope::CrossParent, false},
    {"unordered", ReadyOrder::Unordered, BatchingScope::CrossParent, false},
    {"parent-bound", ReadyOrder::Fifo, BatchingScope::ParentBound, false},
    {"probe-first", ReadyOrder::Fifo, BatchingScope::CrossParent, true},
}};

TEST(EnginePropertyTest, RandomPlansMatchTheSequentialReference) {
  std::map<std::string, int> plansPerPolicy;
  constexpr int kPlans = 600;
  int compared = 0, withFailures = 0, withLosses = 0, nested = 0, withFilters = 0,
      withBroadcasts = 0, withSeveralSinks = 0, emptyExpansions = 0, withBudget = 0,
      withChoices = 0, withDedups = 0, withSteps = 0;
  uint64_t notNeeded = 0, duplicatesCompared = 0;
  for (int seed = 1; seed <= kPlans; ++seed) {
    Random random(static_cast<uint64_t>(seed) * 7919);
    orch::testing::ProgramShape shape;
    shape.dedups = seed % 3 == 0;
    // A GroupFailure's barrier decides which siblings run, so which of them a dedup indexed
    // depends on timing within that (failed) row: its other rows could differ from the
    // reference's. The row takes no part afterwards either way (DedupEngineTest).
    shape.groupFailures = !shape.dedups;
    const std::string program = ProgramGenerator(random, shape).generate();
    std::string error;
    std::optional<plan::Plan> plan = orch::testing::compileText(program, &error, "prop.orch");
    ASSERT_TRUE(plan) << "seed " << seed << ": " << error << "\n" << program;
    ASSERT_FALSE(checkPlanRunnable(*plan)) << program;
    nested += plan->domains.size() > 3;
    withSeveralSinks += plan->sinks.size() > 1;
    for (const plan::PlanNode &node : plan->nodes) {
      withFilters += node.kind == plan::NodeKind::Filter && node.domain != plan::kNone;
      withBroadcasts += node.kind == plan::NodeKind::Broadcast;
      withChoices +=
          node.kind == plan::NodeKind::Compute && node.field != "greater" && node.field != "less";
    }
    withDedups += program.find("dedup.exact") != std::string::npos;

    std::vector<Value> rows;
    const int rowCount = pick(random, 0, 6);
    for (int i = 0; i < rowCount; ++i)
      rows.push_back(
          Value::record({{"id", Value::integer(i)}, {"n", Value::integer(pick(random, 0, 5))}}));

    // Every dispatch policy in turn, each with the options that choose it.
    EngineOptions engineOptions;
    const DispatchChoice &choice = kDispatchChoices[seed % kDispatchChoices.size()];
    engineOptions.readyOrder = choice.order;
    engineOptions.batching = choice.scope;
    engineOptions.probeFirst = choice.probeFirst;
    ASSERT_STREQ(dispatchPolicyName(engineOptions), choice.policy);
    ++plansPerPolicy[choice.policy];
    engineOptions.gather = chance(random, 0.8) ? GatherMode::Lineage : GatherMode::GlobalBarrier;
    // Under the global barrier a dedup does not wait for a survivor's row to finish (it could
    // not), so a failed row's values are retracted only from what comes after its failure.
    if (shape.dedups)
      engineOptions.gather = GatherMode::Lineage;
    engineOptions.maxLiveRoots = static_cast<uint32_t>(pick(random, 1, 8));
    engineOptions.infrastructureRetries = 1000;
    engineOptions.seed = static_cast<uint64_t>(seed);
    // A byte budget, often smaller than one value: outputs never depend on it, nor does the
    // run stall.
    engineOptions.valueBudgetBytes = chance(random, 0.4) ? uint64_t(pick(random, 1, 2048)) : 0;
    withBudget += engineOptions.valueBudgetBytes > 0;
    testing::DriverOptions driverOptions;
    driverOptions.seed = static_cast<uint64_t>(seed);
    driverOptions.maxInFlight = static_cast<size_t>(pick(random, 1, 8));
    driverOptions.lossRate = chance(random, 0.3) ? 0.15 : 0.0;
    withLosses += driverOptions.lossRate > 0;
    // Expansions made a few children at a time (the rest when the queues run dry).
    if (chance(random, 0.5))
      engineOptions.childrenPerStep = static_cast<uint32_t>(pick(random, 1, 3));
    withSteps += engineOptions.childrenPerStep < 4;

    OperatorRegistry registry;
    registerTestOperators(registry, std::make_shared<TestOperatorLog>(false));
    stdlib::registerCoreOperators(registry);
    testing::EngineDriver driver(*plan, engineOptions, registry, driverOptions);
    testing::DriverRun run = driver.run(rows);
    const std::string where = "seed " + std::to_string(seed) + "\n" + program;
    ASSERT_EQ(run.error, "ok") << where;
    ASSERT_EQ(run.staleRejected, run.staleDelivered) << where;
    notNeeded += driver.engine().stats().grainsNotNeeded;

    // Every source row accounted for exactly once.
    ASSERT_EQ(run.roots.size(), rows.size()) << where;
    std::set<uint64_t> seen;
    for (const RootResult &root : run.roots)
      ASSERT_TRUE(seen.insert(root.sourceRow).second) << where;

    // In source order: a Dedup node's survivors are the first in source order.
    std::sort(run.roots.begin(), run.roots.end(),
              [](const RootResult &a, const RootResult &b) { return a.sourceRow < b.sourceRow; });
    ReferenceInterpreter reference(*plan);
    for (const RootResult &root : run.roots) {
      checkOrdinalOrder(root, where);
      RootResult expected = reference.run(root.sourceRow, rows[root.sourceRow]);
      compareRoot(root, expected, where + "\nroot " + std::to_string(root.sourceRow));
      if (::testing::Test::HasFatalFailure())
        return;
      ASSERT_EQ(describe(root.duplicates), describe(expected.duplicates))
          << where << "\nroot " << root.sourceRow << ": other duplicates";
      duplicatesCompared += root.duplicates.size();
      withFailures += root.status == RootStatus::Failed;
      for (const SinkRow &row : root.rows)
        emptyExpansions +=
            row.status == RowStatus::Written && row.values[0].str().find("[]") != std::string::npos;
      ++compared;
    }
  }
  // The generator must actually exercise what the property is about.
  EXPECT_GT(compared, 1000);
  EXPECT_GT(withBudget, 150);
  EXPECT_GT(withFailures, 100);
  EXPECT_GT(withLosses, 100);
  EXPECT_GT(nested, 100);
  EXPECT_GT(withFilters, 100);
  EXPECT_GT(withBroadcasts, 100);
  EXPECT_GT(withSeveralSinks, 100);
  EXPECT_GT(emptyExpansions, 100);
  EXPECT_GT(withChoices, 200);
  EXPECT_GT(notNeeded, 500u) << "choices left work out";
  EXPECT_GT(withDedups, 80);
  EXPECT_GT(withSteps, 200);
  EXPECT_GT(duplicatesCompared, 300u);
  for (const DispatchChoice &choice : kDispatchChoices)
    EXPECT_EQ(plansPerPolicy[choice.policy], kPlans / int(kDispatchChoices.size()))
        << choice.policy;
  std::printf("compared %d roots (%d failed); plans: %d with 4+ domains, %d filters, %d "
              "broadcasts, %d if/coalesce, %d with several sinks, %d with lost batches; %d empty "
              "child lists; %llu grains not needed; %d plans with dedup, %llu duplicates; %d plans "
              "making children in steps\n",
              compared, withFailures, nested, withFilters, withBroadcasts, withChoices,
              withSeveralSinks, withLosses, emptyExpansions, (unsigned long long)notNeeded,
              withDedups, (unsigned long long)duplicatesCompared, withSteps);
}

} // namespace
} // namespace orch::runtime
