// Expressions end to end: compiled from .orch, evaluated by the engine per entity (no batches),
// written by real sinks. Arithmetic and its failures, comparisons and logic, conversions, Json
// casts checked when they run, the conditional and coalesce over filtered branches.
#include "RuntimeFixture.h"

#include "orch/runtime/execution/ThreadExecutor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>

namespace orch::runtime {
namespace {

class ExpressionsTest : public orch::testing::RuntimeFixture {
protected:
  RunSummary run(const std::string &program) {
    plan_ = compile(program);
    RunOptions options;
    options.onRootFinished = [this](const RootResult &root, auto &) { finished_.push_back(root); };
    return runOnThreads(plan_, registry_, options, 2);
  }

  /// The first failure message of each failed root, by source row.
  std::map<uint64_t, std::string> failureMessages() const {
    std::map<uint64_t, std::string> messages;
    for (const RootResult &root : finished_)
      if (!root.failures.empty())
        messages[root.sourceRow] = root.failures.front().message;
    return messages;
  }

  plan::Plan plan_;
  std::vector<RootResult> finished_;
};

TEST_F(ExpressionsTest, ArithmeticComparisonsAndLogicFollowTheUsualRules) {
  writeFile("in.jsonl", "{\"a\": 7, \"b\": 2}\n{\"a\": -7, \"b\": 2}\n{\"a\": 3, \"b\": 3}\n");
  RunSummary summary = run(R"(
pipeline arithmetic;
source rows = jsonl("$DIR/in.jsonl") as Row;
a = rows.a as Int;
b = rows.b as Int;
sink jsonl(path: "$DIR/out.jsonl", record: {
  sum: a + b, difference: a - b, product: a * b, quotient: a / b, remainder: a % b,
  real: float(a) / b, negated: -a, precedence: a + b * 2 - (a - b) * 2,
  less: a < b, equal: a == b, different: a != b, mixed: a >= 2.5,
  logic: (a > b and b > 0) or not (a == 3),
  text: "a=" + string(a) + ", half=" + string(float(a) / 2)
});
)");
  ASSERT_TRUE(summary.started) << summary.error.value_or("");
  EXPECT_EQ(summary.written, 3u);
  EXPECT_TRUE(plan_.calls.empty()) << "expressions are evaluated by the engine, never batched";
  EXPECT_EQ(lines("out.jsonl"),
            (std::vector<std::string>{
                "{\"sum\":9,\"difference\":5,\"product\":14,\"quotient\":3,\"remainder\":1,"
                "\"real\":3.5,\"negated\":-7,\"precedence\":1,\"less\":false,\"equal\":false,"
                "\"different\":true,\"mixed\":true,\"logic\":true,\"text\":\"a=7, half=3.5\"}",
                "{\"sum\":-5,\"difference\":-9,\"product\":-14,\"quotient\":-3,\"remainder\":-1,"
                "\"real\":-3.5,\"negated\":7,\"precedence\":15,\"less\":true,\"equal\":false,"
                "\"different\":true,\"mixed\":false,\"logic\":true,\"text\":\"a=-7, "
                "half=-3.5\"}",
                "{\"sum\":6,\"difference\":0,\"product\":9,\"quotient\":1,\"remainder\":0,"
                "\"real\":1.0,\"negated\":-3,\"precedence\":9,\"less\":false,\"equal\":true,"
                "\"different\":false,\"mixed\":true,\"logic\":false,\"text\":\"a=3, "
                "half=1.5\"}"}));
}

TEST_F(ExpressionsTest, ADivisionByZeroFailsItsRowWithTheExpressionsLocation) {
  writeFile("in.jsonl", "{\"n\": 6, \"d\": 3}\n{\"n\": 6, \"d\": 0}\n{\"n\": 1, \"d\": 1}\n");
  RunSummary summary = run(R"(pipeline divide;
param out: String = "$DIR/out.jsonl";
source rows = jsonl("$DIR/in.jsonl") as Row;
n = rows.n as Int;
d = rows.d as Int;
sink jsonl(path: out, record: { ratio: n / d, rest: n % d });
)");
  ASSERT_TRUE(summary.started) << summary.error.value_or("");
  EXPECT_EQ(summary.written, 2u);
  EXPECT_EQ(summary.failed, 1u);
  EXPECT_EQ(lines("out.jsonl"),
            (std::vector<std::string>{"{\"ratio\":2,\"rest\":0}", "{\"ratio\":1,\"rest\":0}"}));
  const std::map<uint64_t, std::string> failures = failureMessages();
  ASSERT_EQ(failures.size(), 1u);
  // The lowest failed path first: both expressions fail; the cause is one of them, located.
  EXPECT_TRUE(failures.at(1) == "test.orch:6:42: division by zero" ||
              failures.at(1) == "test.orch:6:55: remainder of a division by zero")
      << failures.at(1);
}

TEST_F(ExpressionsTest, JsonCastsAreCheckedWhenTheyRunAndNameTheField) {
  writeFile("in.jsonl", "{\"text\": \"ok\", \"score\": 2}\n{\"score\": 1}\n"
                        "{\"text\": 42, \"score\": 1}\n{\"text\": \"x\", \"score\": 0.5}\n");
  RunSummary summary = run(R"(pipeline casts;
param out: String = "$DIR/out.jsonl";
source rows = jsonl("$DIR/in.jsonl") as Row;
sink jsonl(path: out, record: { text: rows.text as String, score: rows.score as Float });
)");
  ASSERT_TRUE(summary.started) << summary.error.value_or("");
  EXPECT_EQ(summary.written, 2u);
  EXPECT_EQ(lines("out.jsonl"), (std::vector<std::string>{"{\"text\":\"ok\",\"score\":2.0}",
                                                          "{\"text\":\"x\",\"score\":0.5}"}))
      << "an Int field cast to Float is a Float";
  const std::map<uint64_t, std::string> failures = failureMessages();
  ASSERT_EQ(failures.size(), 2u);
  EXPECT_EQ(failures.at(1), "test.orch:4:49: field 'text' is missing or null, expected String");
  EXPECT_EQ(failures.at(2),
            "test.orch:4:49: field 'text' does not have type String: expected String, got 42");
}

TEST_F(ExpressionsTest, APathCastToFileSaysToUseFileAndLenMeasuresBytes) {
  writeFile("in.jsonl", "{\"path\": \"a.pdf\", \"n\": 3}\n");
  RunSummary summary = run(R"(pipeline paths;
source rows = jsonl("$DIR/in.jsonl") as Row;
sink jsonl(path: "$DIR/out.jsonl", record: { size: len(test.blob(rows, bytes: 1000)) });
sink jsonl(path: "$DIR/files.jsonl", record: { f: rows.path as File });
)");
  ASSERT_TRUE(summary.started) << summary.error.value_or("");
  EXPECT_EQ(summary.failed, 1u) << "the cast fails the row (both sinks commit together)";
  const std::map<uint64_t, std::string> failures = failureMessages();
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_NE(failures.at(0).find("field 'path' is a String (\"a.pdf\"), not a File: a path "
                                "becomes a File with file(...), which checks it exists"),
            std::string::npos)
      << failures.at(0);
  // Text (what text.normalize returns) and String mix in expressions: one type at run time.
  summary = run(R"(pipeline sizes;
source rows = jsonl("$DIR/in.jsonl") as Row;
t = text.normalize(rows.path as String);
sink jsonl(path: "$DIR/out.jsonl", record: { size: len(test.blob(rows, bytes: 1000)),
                                             t: t + "!", same: t == "a.pdf", less: t < "b" });
)");
  ASSERT_TRUE(summary.started) << summary.error.value_or("");
  EXPECT_EQ(
      lines("out.jsonl"),
      (std::vector<std::string>{"{\"size\":1000,\"t\":\"a.pdf!\",\"same\":true,\"less\":true}"}));
}

TEST_F(ExpressionsTest, ConversionsParseTextAndFailOnWhatIsNotANumber) {
  writeFile("in.jsonl", "{\"t\": \"12\"}\n{\"t\": \"twelve\"}\n{\"t\": \"-3\"}\n");
  RunSummary summary = run(R"(pipeline conversions;
source rows = jsonl("$DIR/in.jsonl") as Row;
t = rows.t as String;
sink jsonl(path: "$DIR/out.jsonl", record: {
  i: int(t) + 1, f: float(t) * 2, s: string(int(t) > 0), r: string(2.0), b: int(true)
});
)");
  ASSERT_TRUE(summary.started) << summary.error.value_or("");
  EXPECT_EQ(
      lines("out.jsonl"),
      (std::vector<std::string>{"{\"i\":13,\"f\":24.0,\"s\":\"true\",\"r\":\"2.0\",\"b\":1}",
                                "{\"i\":-2,\"f\":-6.0,\"s\":\"false\",\"r\":\"2.0\",\"b\":1}"}));
  const std::map<uint64_t, std::string> failures = failureMessages();
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_NE(failures.at(1).find("\"twelve\" is not an Int"), std::string::npos) << failures.at(1);
}

TEST_F(ExpressionsTest, IfWaitsOnlyForTheBranchItChooses) {
  writeFile("in.jsonl", "{\"n\": 6, \"d\": 3}\n{\"n\": 6, \"d\": 0}\n");
  RunSummary summary = run(R"(pipeline conditional;
source rows = jsonl("$DIR/in.jsonl") as Row;
n = rows.n as Int;
d = rows.d as Int;
sink jsonl(path: "$DIR/out.jsonl", record: { ratio: if d == 0 then -1 else n / d });
)");
  ASSERT_TRUE(summary.started) << summary.error.value_or("");
  EXPECT_EQ(summary.failed, 0u) << "the division by zero is in the branch not taken";
  EXPECT_EQ(lines("out.jsonl"), (std::vector<std::string>{"{\"ratio\":2}", "{\"ratio\":-1}"}));
}

TEST_F(ExpressionsTest, CoalesceMergesFilteredBranchesOfOneDomainInOrder) {
  // "The text layer if it is long enough, else OCR": here even pages take one branch and odd
  // pages the other, and each document's pages come back as one list, in page order.
  writeFile("in.jsonl", "{\"id\": 0, \"n\": 5}\n{\"id\": 1, \"n\": 0}\n{\"id\": 2, \"n\": 2}\n");
  RunSummary summary = run(R"(pipeline merge;
source rows = jsonl("$DIR/in.jsonl") as Doc;
call split = test.split(field: "n");
call work = test.sleep(ms: 0.1) { batch: 4 };
page = expand(split(rows)) as Page;
number = work(page) as Int;
even = filter("even " + string(number), number % 2 == 0);
odd = filter("odd " + string(number * 10), number % 2 == 1);
sink jsonl(path: "$DIR/out.jsonl", record: { id: rows.id, pages: reduce(coalesce(even, odd)) });
)");
  ASSERT_TRUE(summary.started) << summary.error.value_or("");
  EXPECT_EQ(summary.written, 3u);
  std::vector<std::string> written = lines("out.jsonl");
  std::sort(written.begin(), written.end());
  EXPECT_EQ(written,
            (std::vector<std::string>{
                "{\"id\":0,\"pages\":[\"even 0\",\"odd 10\",\"even 2\",\"odd 30\",\"even 4\"]}",
                "{\"id\":1,\"pages\":[]}", "{\"id\":2,\"pages\":[\"even 0\",\"odd 10\"]}"}));
}

TEST_F(ExpressionsTest, OrdinalIsTheRowNumberOfARootAndTheIndexOfAChild) {
  writeFile("in.jsonl", "{\"n\": 2}\n{\"n\": 0}\n{\"n\": 3}\n");
  RunSummary summary = run(R"(pipeline ordinals;
source rows = jsonl("$DIR/in.jsonl") as Doc;
call split = test.split(field: "n");
page = expand(split(rows)) as Page;
label = string(broadcast(ordinal(rows), page)) + "." + string(ordinal(page));
sink jsonl(path: "$DIR/out.jsonl", record: { row: ordinal(rows), pages: reduce(label) });
)");
  ASSERT_TRUE(summary.started) << summary.error.value_or("");
  std::vector<std::string> written = lines("out.jsonl");
  std::sort(written.begin(), written.end());
  EXPECT_EQ(written, (std::vector<std::string>{"{\"row\":0,\"pages\":[\"0.0\",\"0.1\"]}",
                                               "{\"row\":1,\"pages\":[]}",
                                               "{\"row\":2,\"pages\":[\"2.0\",\"2.1\",\"2.2\"]}"}));
}

TEST_F(ExpressionsTest, FormatFillsEachHoleWithTheNextValue) {
  writeFile("in.jsonl", "{\"doc\": \"report\", \"n\": 2}\n{\"doc\": \"memo\", \"n\": 1}\n");
  RunSummary summary = run(R"(pipeline names;
source rows = jsonl("$DIR/in.jsonl") as Doc;
call split = test.split(field: "n");
page = expand(split(rows)) as Page;
name = format("{}-p{}.png {{{}}}", broadcast(rows.doc as String, page), ordinal(page) + 1, 0.5);
sink jsonl(path: "$DIR/out.jsonl", record: { names: reduce(name) });
)");
  ASSERT_TRUE(summary.started) << summary.error.value_or("");
  std::vector<std::string> written = lines("out.jsonl");
  std::sort(written.begin(), written.end());
  EXPECT_EQ(written, (std::vector<std::string>{
                         "{\"names\":[\"memo-p1.png {0.5}\"]}",
                         "{\"names\":[\"report-p1.png {0.5}\",\"report-p2.png {0.5}\"]}"}));
}

TEST_F(ExpressionsTest, CoalesceDropsOnlyWhenEveryValueIsDroppedAndNeverHidesAFailure) {
  writeFile("in.jsonl", "{\"n\": 1, \"d\": 1}\n{\"n\": -1, \"d\": 1}\n{\"n\": 1, \"d\": 0}\n");
  RunSummary summary = run(R"(pipeline failures;
source rows = jsonl("$DIR/in.jsonl") as Row;
n = rows.n as Int;
d = rows.d as Int;
sink jsonl(path: "$DIR/out.jsonl", record: { v: coalesce(filter(n / d, n > 0), filter(0, n > 5)) });
)");
  ASSERT_TRUE(summary.started) << summary.error.value_or("");
  EXPECT_EQ(summary.written, 1u);
  EXPECT_EQ(summary.dropped, 1u) << "n = -1: both values are dropped";
  EXPECT_EQ(summary.failed, 1u) << "n / 0 fails its row: coalesce does not skip a failure";
  EXPECT_EQ(lines("out.jsonl"), (std::vector<std::string>{"{\"v\":1}"}));
}

TEST_F(ExpressionsTest, HelperCallsWithDefaultOptionsAreEvaluatedInPlaceWithTheSameResults) {
  writeFile("in.jsonl", "{\"t\": \"héllo\", \"l\": [1, 2]}\n{\"t\": \"  \", \"l\": []}\n");
  const std::string plain = R"(pipeline helpers;
source rows = jsonl("$DIR/in.jsonl") as Row;
t = rows.t as String;
n = text.len(t);
sink jsonl(path: "$DIR/OUT", record: {
  n: n, blank: not text.nonempty(t), items: list.len(rows.l as List<Int>),
  big: math.gt(n, 3), small: math.lt(n, 3), same: len(t) == n
});
)";
  auto withOut = [](std::string program, const std::string &out, const std::string &options) {
    program.replace(program.find("OUT"), 3, out);
    program.replace(program.find("text.len(t)"), 11, "text.len(t)" + options);
    return program;
  };
  RunSummary summary = run(withOut(plain, "fused.jsonl", ""));
  ASSERT_TRUE(summary.started) << summary.error.value_or("");
  EXPECT_TRUE(plan_.calls.empty()) << "every helper was fused: no Call, no batch";
  summary = run(withOut(plain, "batched.jsonl", " { batch: 64 }"));
  ASSERT_TRUE(summary.started) << summary.error.value_or("");
  ASSERT_EQ(plan_.calls.size(), 1u) << "a helper given options keeps them, as a Call";
  EXPECT_EQ(plan_.calls[0].op, "text.len");
  EXPECT_EQ(plan_.calls[0].options.batch, 64);
  const std::vector<std::string> expected = {
      "{\"n\":5,\"blank\":false,\"items\":2,\"big\":true,\"small\":false,\"same\":true}",
      "{\"n\":2,\"blank\":true,\"items\":0,\"big\":false,\"small\":true,\"same\":true}"};
  EXPECT_EQ(lines("fused.jsonl"), expected);
  EXPECT_EQ(lines("batched.jsonl"), expected) << "the operator computes what the fusion does";
}

TEST_F(ExpressionsTest, FusedAndUnfusedHelpersGiveTheSameRowsOnRandomEdgeValues) {
  // Ints beyond 2^53 (not exact as doubles), NaN, infinities, signed zeros, mixed Int and
  // Float: before, math.gt compared doubles as an operator and exactly when fused.
  const std::vector<std::string> ints = {"9007199254740993",
                                         "9007199254740992",
                                         "-9223372036854775808",
                                         "9223372036854775807",
                                         "0",
                                         "-1",
                                         "1",
                                         "4503599627370497"};
  const std::vector<std::string> floats = {
      "nan", "inf", "-inf", "-0.0", "0.0", "9007199254740992.0", "1e308", "-1e-308", "0.5", "2.5"};
  std::mt19937_64 random(20261201);
  std::string rows;
  auto pick = [&](const std::vector<std::string> &pool) {
    if (random() % 4 == 0)
      return std::to_string(int64_t(random() % 2001) - 1000);
    return pool[random() % pool.size()];
  };
  for (int i = 0; i < 300; ++i)
    rows += "{\"ai\": \"" + pick(ints) + "\", \"bi\": \"" + pick(ints) + "\", \"af\": \"" +
            pick(floats) + "\", \"bf\": \"" + pick(floats) + "\", \"t\": \"" +
            std::string(random() % 3, ' ') + std::string(random() % 3, 'x') + "\", \"l\": [" +
            std::string(random() % 2 ? "1, 2" : "") + "]}\n";
  writeFile("in.jsonl", rows);
  const std::string program = R"(pipeline helpers;
source rows = jsonl("$DIR/in.jsonl") as Row;
ai = int(rows.ai as String);
bi = int(rows.bi as String);
af = float(rows.af as String);
bf = float(rows.bf as String);
t = rows.t as String;
sink jsonl(path: "$DIR/OUT", record: {
  ii: math.gt(ai, bi)OPT, i_f: math.gt(ai, bf)OPT, fi: math.lt(af, bi)OPT, ff: math.lt(af, bf)OPT,
  n: text.len(t)OPT, e: text.nonempty(t)OPT, l: list.len(rows.l as List<Int>)OPT
});
)";
  auto outcomes = [&](const std::string &out, const std::string &options) {
    std::string text = program;
    text.replace(text.find("OUT"), 3, out);
    for (size_t at; (at = text.find("OPT")) != std::string::npos;)
      text.replace(at, 3, options);
    finished_.clear();
    RunSummary summary = run(text);
    EXPECT_TRUE(summary.started) << summary.error.value_or("");
    std::map<uint64_t, std::string> status;
    for (const RootResult &root : finished_)
      status[root.sourceRow] = rootStatusName(root.status);
    return std::make_pair(status, lines(out));
  };
  auto fused = outcomes("fused.jsonl", "");
  EXPECT_TRUE(plan_.calls.empty());
  auto unfused = outcomes("unfused.jsonl", " { batch: 7 }");
  EXPECT_EQ(plan_.calls.size(), 7u);
  ASSERT_EQ(fused.first.size(), 300u);
  EXPECT_EQ(fused.first, unfused.first) << "the same rows fail either way";
  EXPECT_EQ(fused.second, unfused.second) << "and the written rows are the same";
  size_t failed = 0;
  for (const auto &[row, status] : fused.first)
    failed += status == "failed";
  EXPECT_GT(failed, 0u) << "NaN cannot be ordered";
  EXPECT_LT(failed, 300u);
}

TEST_F(ExpressionsTest, ConstantExpressionsAreComputedOnceAndAFailingOneStopsTheRunBeforeItStarts) {
  writeFile("in.jsonl", "{\"n\": 4}\n");
  RunSummary summary = run(R"(pipeline constants;
param scale: Int = 3;
source rows = jsonl("$DIR/in.jsonl") as Row;
sink jsonl(path: "$DIR/out.jsonl", record: { v: (rows.n as Int) * (scale * 2 + 1) });
)");
  ASSERT_TRUE(summary.started) << summary.error.value_or("");
  EXPECT_EQ(lines("out.jsonl"), (std::vector<std::string>{"{\"v\":28}"}));

  // Constants dropped by a filter of constants follow the same rules as per-entity values.
  summary = run(R"(pipeline dropped_constants;
param on: Bool = false;
source rows = jsonl("$DIR/in.jsonl") as Row;
picked = coalesce(filter("first", on), "second");
sink jsonl(path: "$DIR/picked.jsonl", record: { n: rows.n, picked: picked, chosen: if on then 1 else 2 });
)");
  ASSERT_TRUE(summary.started) << summary.error.value_or("");
  EXPECT_EQ(lines("picked.jsonl"),
            (std::vector<std::string>{"{\"n\":4,\"picked\":\"second\",\"chosen\":2}"}));

  finished_.clear();
  summary = run(R"(pipeline broken;
param zero: Int = 0;
param out: String = "$DIR/broken.jsonl";
source rows = jsonl("$DIR/in.jsonl") as Row;
sink jsonl(path: out, record: { v: (rows.n as Int) + 1 / zero });
)");
  EXPECT_FALSE(summary.started);
  ASSERT_TRUE(summary.error);
  EXPECT_NE(summary.error->find("test.orch:5:56: division by zero"), std::string::npos)
      << *summary.error;
}

} // namespace
} // namespace orch::runtime
