// The .orch parser: accepts the language's examples, reports syntax errors with exact
// locations and recovers to report several. Hostile input: FrontendRobustnessTest.
#include "orch/frontend/Parser.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <gtest/gtest.h>

namespace orch {
namespace {

struct ParseOutcome {
  bool ok = false;
  std::vector<Diagnostic> diagnostics;
};

ParseOutcome parseText(const std::string &text) {
  llvm::SourceMgr sources;
  uint32_t id = sources.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, "test.orch"),
                                           llvm::SMLoc());
  ParseOutcome outcome;
  DiagnosticEngine diags([&](const Diagnostic &d) { outcome.diagnostics.push_back(d); });
  outcome.ok = frontend::parseFile(sources, id, diags).ok;
  return outcome;
}

std::string readExample(const std::string &name) {
  auto buffer = llvm::MemoryBuffer::getFile(std::string(ORCH_EXAMPLES_DIR) + "/" + name);
  EXPECT_TRUE(bool(buffer)) << name;
  return buffer ? (*buffer)->getBuffer().str() : std::string();
}

TEST(ParserTest, AcceptsTheLanguageExamples) {
  for (const char *name : {"pdf_to_markdown.orch", "clip_quality.orch"}) {
    ParseOutcome outcome = parseText(readExample(name));
    EXPECT_TRUE(outcome.ok) << name;
    EXPECT_TRUE(outcome.diagnostics.empty()) << name << ": " << outcome.diagnostics[0].message;
  }
}

TEST(ParserTest, AcceptsEveryLiteralForm) {
  ParseOutcome outcome = parseText(R"(pipeline literals;
param s: String = "tab\t quote\" unicode\u00e9";
param i: Int = -42;
param f: Float = 2.5e-3;
param b: Bool = false;
param d: Duration = 250ms;
param m: Size = 512MB;
x: List<Int> = { a: 1_000, b: 30s, c: true };
)");
  EXPECT_TRUE(outcome.ok);
  EXPECT_TRUE(outcome.diagnostics.empty());
}

TEST(ParserTest, MissingSemicolonIsReportedAfterThePreviousToken) {
  ParseOutcome outcome = parseText("pipeline p;\nsource docs = files(\"a\") as Doc\nx = docs;\n");
  EXPECT_FALSE(outcome.ok);
  ASSERT_FALSE(outcome.diagnostics.empty());
  const Diagnostic &first = outcome.diagnostics.front();
  EXPECT_EQ(first.message, "expected ';'");
  EXPECT_EQ(first.location.line, 2u);
  EXPECT_EQ(first.location.column, 32u);
}

TEST(ParserTest, NamesTheUnexpectedTokenOnTheSameLine) {
  ParseOutcome outcome = parseText("pipeline p;\nx = reduce(y;\n");
  ASSERT_FALSE(outcome.diagnostics.empty());
  EXPECT_EQ(outcome.diagnostics.front().message, "expected ')' or ',', found ';'");
  EXPECT_EQ(outcome.diagnostics.front().location, (SourceLocation{1, 2, 13, 1}));
}

TEST(ParserTest, ReportsSeveralErrorsInOneRunInSourceOrder) {
  ParseOutcome outcome =
      parseText("pipeline p;\nx = ;\ny = reduce(;\nparam s: String = \"open;\nz = 1;\n");
  EXPECT_FALSE(outcome.ok);
  ASSERT_EQ(outcome.diagnostics.size(), 3u);
  EXPECT_EQ(outcome.diagnostics[0].message, "expected an expression, found ';'");
  EXPECT_EQ(outcome.diagnostics[0].location, (SourceLocation{1, 2, 5, 1}));
  EXPECT_EQ(outcome.diagnostics[1].message, "expected an expression, found ';'");
  EXPECT_EQ(outcome.diagnostics[1].location, (SourceLocation{1, 3, 12, 1}));
  EXPECT_EQ(outcome.diagnostics[2].message, "unterminated string literal");
  EXPECT_EQ(outcome.diagnostics[2].location.line, 4u);
}

TEST(ParserTest, ReportsUnterminatedStringOnce) {
  ParseOutcome outcome = parseText("pipeline p;\nparam s: String = \"abc;\n");
  ASSERT_FALSE(outcome.diagnostics.empty());
  EXPECT_EQ(outcome.diagnostics[0].message, "unterminated string literal");
  EXPECT_EQ(outcome.diagnostics[0].location, (SourceLocation{1, 2, 19, 1}));
  for (size_t i = 1; i < outcome.diagnostics.size(); ++i)
    EXPECT_NE(outcome.diagnostics[i].location.column, 19u) << outcome.diagnostics[i].message;
}

TEST(ParserTest, ReportsInvalidCharactersAndInvalidUtf8) {
  ParseOutcome invalid = parseText("pipeline p;\nx = 1 # 2;\n");
  ASSERT_FALSE(invalid.diagnostics.empty());
  EXPECT_EQ(invalid.diagnostics[0].message, "invalid character '#'");
  EXPECT_EQ(invalid.diagnostics[0].location, (SourceLocation{1, 2, 7, 1}));

  ParseOutcome binary = parseText("pipeline p;\nx = \"\xff\xfe\";\n");
  ASSERT_EQ(binary.diagnostics.size(), 1u);
  EXPECT_EQ(binary.diagnostics[0].message, "source file is not valid UTF-8");
  EXPECT_EQ(binary.diagnostics[0].location, (SourceLocation{1, 2, 6, 1}));
}

TEST(ParserTest, ColumnsCountBytesAfterMultiByteCharacters) {
  // 'é' is two bytes: '#' is the 9th code point but the 10th byte of its line.
  ParseOutcome outcome = parseText("pipeline p;\nx = \"é\" # 1;\n");
  ASSERT_FALSE(outcome.diagnostics.empty());
  EXPECT_EQ(outcome.diagnostics[0].message, "invalid character '#'");
  EXPECT_EQ(outcome.diagnostics[0].location.column, 10u);
}

} // namespace
} // namespace orch
