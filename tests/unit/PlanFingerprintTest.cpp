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
  // A change only in how values flow is still a change, said in general.
  EXPECT_EQ(changes("format(\"{}\", rows)", "format(\"<{}>\", rows)"),
            std::vector<std::string>{"the dataflow between the sources and the sinks changed"});
}

} // namespace
} // namespace orch
