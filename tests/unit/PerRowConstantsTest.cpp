// Per-row values of constants an operator batches by (`ocr.tesseract(image, lang: rows.lang)`):
// grains batch only with grains of the same value, under every dispatch policy; the compiler
// still refuses a per-row value for a constant that cannot vary, and says which can.
#include "CompileExample.h"
#include "EngineDriver.h"

#include "orch/runtime/engine/LineageEngine.h"
#include "orch/runtime/operators/TestOperators.h"
#include "orch/stdlib/CoreOperators.h"
#include "orch/stdlib/StandardOperators.h"

#include <gtest/gtest.h>

#include <set>

namespace orch::runtime {
namespace {

using testing::DriverOptions;
using testing::EngineDriver;

Value doc(int64_t id, int64_t pages, const std::string &lang) {
  return Value::record(
      {{"id", Value::integer(id)}, {"n", Value::integer(pages)}, {"lang", Value::string(lang)}});
}

const char *kTagged = R"(
pipeline tagged;
source rows = jsonl("unused.jsonl") as Doc;
pages = expand(test.split(rows, field: "n")) as Page;
lang = broadcast(rows.lang as String, pages);
tagged = test.tag(pages, tag: lang) { batch: 4 };
sink jsonl(path: "out.jsonl", record: { id: rows.id, pages: reduce(tagged) });
)";

TEST(PerRowConstantsTest, BatchesHoldGrainsOfOneKeyUnderEveryPolicy) {
  std::string error;
  std::optional<plan::Plan> plan = orch::testing::compileText(kTagged, &error);
  ASSERT_TRUE(plan) << error;
  ASSERT_EQ(plan->calls.back().batchKeys, std::vector<std::string>{"tag"});
  const std::vector<Value> docs{doc(0, 3, "eng"), doc(1, 2, "deu"), doc(2, 5, "eng"),
                                doc(3, 1, "fra"), doc(4, 4, "deu")};
  for (int policy = 0; policy < 4; ++policy) {
    EngineOptions options;
    options.readyOrder = policy == 1 ? ReadyOrder::Unordered : ReadyOrder::Fifo;
    options.batching = policy == 2 ? BatchingScope::ParentBound : BatchingScope::CrossParent;
    options.probeFirst = policy == 3;
    auto log = std::make_shared<TestOperatorLog>();
    OperatorRegistry registry;
    registerTestOperators(registry, log);
    stdlib::registerCoreOperators(registry);
    EngineDriver driver(*plan, options, registry, DriverOptions{uint64_t(policy) + 3, 3});
    testing::DriverRun run = driver.run(docs);
    ASSERT_EQ(run.error, "ok");
    ASSERT_EQ(run.roots.size(), docs.size());
    // test.tag throws on a batch of mixed tags: every row written means none was mixed.
    for (const RootResult &root : run.roots) {
      ASSERT_EQ(root.status, RootStatus::Written) << "policy " << policy;
      const std::string lang = docs[root.sourceRow].field("lang")->asString();
      const ValueList &pages = root.rows.at(0).values.at(0).field("pages")->asList();
      for (size_t p = 0; p < pages.size(); ++p)
        EXPECT_EQ(pages[p].asString(), lang + ":" + std::to_string(p));
    }
    EXPECT_EQ(driver.engine().stats().batchErrors, 0u) << "policy " << policy;
    EXPECT_EQ(log->rowsRun("tagged"), 15u);
    // 8 eng, 6 deu, 1 fra pages in batches of at most 4: at least 2 + 2 + 1 batches.
    EXPECT_GE(log->batchesRun("tagged"), 5u);
  }
}

TEST(PerRowConstantsTest, AConstantThatCannotVarySaysWhichCan) {
  std::string error;
  EXPECT_FALSE(orch::testing::compileText(R"(
pipeline wrong;
source rows = jsonl("unused.jsonl") as Doc;
sink jsonl(path: "out.jsonl", record: { t: test.split(rows, n: rows.n as Int) });
)",
                                          &error));
  EXPECT_NE(error.find("argument 'n' of 'test.split' must be a constant (a literal or a param); "
                       "no parameter of 'test.split' may vary per row"),
            std::string::npos)
      << error;
  EXPECT_FALSE(orch::testing::compileText(R"(
pipeline wrong;
source rows = jsonl("unused.jsonl") as Doc;
call ocr = ocr.tesseract(lang: rows.lang as String);
sink jsonl(path: "out.jsonl", record: { id: rows.id });
)",
                                          &error));
  EXPECT_NE(error.find("'lang' may vary per row only where the operator is used inline"),
            std::string::npos)
      << error;
}

TEST(PerRowConstantsTest, TesseractReadsEachRowInItsOwnLanguageAndAMissingOneFailsOnlyItsRows) {
  // eng is installed, "xyz" is not: its rows fail with the reason, the others are read.
  const Value file =
      Value::record({{"path", Value::string(ORCH_EXAMPLES_DIR "/samples/pdfs/scanned.pdf")}});
  OperatorRegistry registry;
  stdlib::registerStandardOperators(registry);
  const std::vector<plan::NamedConstant> dpi{{"dpi", int64_t(150)}};
  const std::vector<plan::NamedConstant> none;
  OperatorConfig pagesConfig("pages", "pdf.pages", dpi, {"file"});
  std::vector<RowResult> pages;
  (*registry.transform("pdf.pages"))(pagesConfig)
      ->process(std::vector<OperatorRow>{OperatorRow{std::span<const Value>(&file, 1), {}}}, pages);
  ASSERT_EQ(pages.at(0).kind, RowResultKind::Value) << pages[0].message;
  const Value page = pages[0].value.asList().at(1);
  OperatorConfig renderConfig("render", "pdf.render", dpi, {"page"});
  std::vector<RowResult> rendered;
  (*registry.transform("pdf.render"))(renderConfig)
      ->process(std::vector<OperatorRow>{OperatorRow{std::span<const Value>(&page, 1), {}}},
                rendered);
  ASSERT_EQ(rendered.at(0).kind, RowResultKind::Value) << rendered[0].message;
  OperatorConfig config("ocr", "ocr.tesseract", none, {"image", "lang"});
  std::unique_ptr<Operator> ocr = (*registry.transform("ocr.tesseract"))(config);
  // An empty language after a loaded one crashed tesseract (a review found it), and "eng+xyz"
  // loaded eng alone without a word.
  const std::vector<std::string> langs{"eng", "xyz", "", "eng+xyz", "eng"};
  std::vector<std::vector<Value>> inputs;
  for (const std::string &lang : langs)
    inputs.push_back({rendered[0].value, Value::string(lang)});
  std::vector<OperatorRow> rows;
  for (const std::vector<Value> &input : inputs)
    rows.push_back(OperatorRow{input, {}});
  std::vector<RowResult> results;
  ocr->process(rows, results);
  ASSERT_EQ(results.size(), 5u);
  EXPECT_EQ(results[0].kind, RowResultKind::Value) << results[0].message;
  EXPECT_NE(results[0].value.asString().find("bravo"), std::string::npos);
  const std::pair<size_t, const char *> failed[] = {{1, "cannot load language \"xyz\""},
                                                    {2, "no language given"},
                                                    {3, "cannot load language \"xyz\""}};
  for (const auto &[row, why] : failed) {
    EXPECT_EQ(results[row].kind, RowResultKind::RecordFailure) << langs[row];
    EXPECT_NE(results[row].message.find(why), std::string::npos) << results[row].message;
  }
  EXPECT_EQ(results[4].kind, RowResultKind::Value) << "the next row's language loads again";
  EXPECT_EQ(results[4].value, results[0].value);
}

} // namespace
} // namespace orch::runtime
