// What a run journal resumes under (plan/PlanFingerprint.h): layout leaves the fingerprint
// alone (FormatterTest checks every file of the repository), meaning changes it, and
// describePlanChanges names each change the way a refused resume prints it.
#include "CompileExample.h"

#include "orch/plan/PlanFingerprint.h"

#include <gtest/gtest.h>

namespace orch {
namespace {

const char *const kProgram = R"(pipeline p;
source rows = jsonl("in.jsonl") as Doc;
call work = test.sleep(ms: 5) { batch: 8 };
sink jsonl(path: "out/a.jsonl", record: { w: work(rows), n: text.len(format("{}", rows)) });
)";

plan::Plan compiled(const std::string &text) {
  std::string error;
  std::optional<plan::Plan> plan = testing::compileText(text, &error);
  EXPECT_TRUE(plan) << error;
  return plan.value_or(plan::Plan{});
}

std::string edited(std::string text, const std::string &from, const std::string &to) {
  text.replace(text.find(from), from.size(), to);
  return text;
}

TEST(PlanFingerprintTest, EachChangeOfMeaningIsNamedAndLayoutIsNone) {
  const plan::Plan original = compiled(kProgram);
  EXPECT_TRUE(plan::describePlanChanges(original, compiled(std::string("// a note\n\n") + kProgram))
                  .empty());
  EXPECT_EQ(plan::planFingerprint(original),
            plan::planFingerprint(compiled(edited(kProgram, "{ batch: 8 }", "{batch:8}"))));

  const auto changes = [&](const std::string &from, const std::string &to) {
    const plan::Plan changed = compiled(edited(kProgram, from, to));
    EXPECT_NE(plan::planFingerprint(changed), plan::planFingerprint(original)) << to;
    return plan::describePlanChanges(original, changed);
  };
  EXPECT_EQ(changes("batch: 8", "batch: 16"),
            std::vector<std::string>{"Call `work`: batch 8 → 16"});
  EXPECT_EQ(changes("ms: 5", "ms: 6"), std::vector<std::string>{"Call `work`: ms 5.0 → 6.0"});
  EXPECT_EQ(changes("out/a.jsonl", "out/b.jsonl"),
            std::vector<std::string>{"sink 0 (jsonl): path \"out/a.jsonl\" → \"out/b.jsonl\""});
  EXPECT_EQ(changes("in.jsonl", "other.jsonl"),
            std::vector<std::string>{"source 0 (jsonl): path \"in.jsonl\" → \"other.jsonl\""});
  // (text.len is evaluated by the engine, not a Call; text.normalize is one.)
  EXPECT_EQ(changes("text.len(", "text.normalize("),
            std::vector<std::string>{"Call `text.normalize@sink0` (text.normalize) was added"});
  // A literal (or a param's value) and a binding's name are named where they are now.
  const std::vector<std::string> literal =
      changes("format(\"{}\", rows)", "format(\"<{}>\", rows)");
  ASSERT_EQ(literal.size(), 1u);
  EXPECT_NE(literal[0].find("the constant at "), std::string::npos) << literal[0];
  EXPECT_NE(literal[0].find(":4:"), std::string::npos) << literal[0];
  EXPECT_NE(literal[0].find(": \"{}\" → \"<{}>\""), std::string::npos) << literal[0];
  // A change only in how values flow is still a change, said in general.
  EXPECT_EQ(changes("format(\"{}\", rows)", "format(\"{}\", work(rows))"),
            std::vector<std::string>{"the dataflow between the sources and the sinks changed"});
}

TEST(PlanFingerprintTest, AParamsValueAndARenamedBindingAreNamed) {
  const char *program = R"(pipeline q;
param least: Int = 1;
source rows = jsonl("in.jsonl") as Doc;
big = filter(rows, rows.v as Int > least);
sink jsonl(path: "out/q.jsonl", record: { v: big.v });
)";
  const plan::Plan original = compiled(program);
  std::vector<std::string> changes =
      plan::describePlanChanges(original, compiled(edited(program, "= 1;", "= 2;")));
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_NE(changes[0].find("the constant at "), std::string::npos) << changes[0];
  EXPECT_NE(changes[0].find(": 1 → 2"), std::string::npos) << changes[0];
  changes = plan::describePlanChanges(
      original, compiled(edited(edited(program, "big =", "large ="), "big.v", "large.v")));
  EXPECT_EQ(changes, std::vector<std::string>{"`big` is named `large` now"});
}

} // namespace
} // namespace orch
