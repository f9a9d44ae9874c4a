// The diagnostics engine and its SourceMgr-based printer.
#include "orch/ir/Diagnostics.h"
#include "orch/ir/DiagnosticPrinter.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

namespace orch {
namespace {

class DiagnosticsTest : public ::testing::Test {
protected:
  uint32_t addBuffer(llvm::StringRef text, llvm::StringRef name) {
    return sources.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, name),
                                      llvm::SMLoc());
  }

  std::string print(const Diagnostic &diagnostic, DiagnosticPrintOptions options = {}) {
    std::string text;
    llvm::raw_string_ostream out(text);
    printDiagnostic(sources, diagnostic, out, options);
    return out.str();
  }

  llvm::SourceMgr sources;
};

TEST_F(DiagnosticsTest, CountsBySeverityAndDeliversNotesWithTheirDiagnostic) {
  std::vector<Diagnostic> delivered;
  DiagnosticEngine diags([&](const Diagnostic &d) { delivered.push_back(d); });
  diags.error({1, 2, 3, 4}, "first").attachNote({1, 1, 1, 1}, "declared here");
  diags.warning({1, 5, 1, 1}, "second");
  diags.error({}, "third");

  EXPECT_EQ(diags.errorCount(), 2u);
  EXPECT_EQ(diags.warningCount(), 1u);
  ASSERT_EQ(delivered.size(), 3u);
  EXPECT_EQ(delivered[0].message, "first");
  ASSERT_EQ(delivered[0].notes.size(), 1u);
  EXPECT_EQ(delivered[0].notes[0].severity, DiagnosticSeverity::Note);
  EXPECT_EQ(delivered[0].notes[0].location, (SourceLocation{1, 1, 1, 1}));
  EXPECT_EQ(delivered[1].severity, DiagnosticSeverity::Warning);
}

TEST_F(DiagnosticsTest, ControlCharactersNeverReachTheTerminal) {
  // A NUL byte used to be echoed raw in the message and the quoted line.
  uint32_t id = addBuffer(llvm::StringRef("x = a\0b;\n", 10), "nul.orch");
  const std::string printed = print(Diagnostic{
      DiagnosticSeverity::Error, {id, 1, 6, 1}, std::string("invalid character '\0'", 22), {}});
  EXPECT_EQ(printed.find('\0'), std::string::npos);
  EXPECT_NE(printed.find("invalid character '\\x00'"), std::string::npos) << printed;
  EXPECT_NE(printed.find("x = a?b;"), std::string::npos) << printed;
}

TEST_F(DiagnosticsTest, PrintsFileLineColumnSourceLineAndCaret) {
  uint32_t id = addBuffer("pipeline p;\nx = y;\n", "demo.orch");
  EXPECT_EQ(
      print(Diagnostic{DiagnosticSeverity::Error, {id, 2, 5, 1}, "use of undefined name 'y'", {}}),
      "demo.orch:2:5: error: use of undefined name 'y'\n"
      "x = y;\n"
      "    ^\n");
}

TEST_F(DiagnosticsTest, UnderlinesLongerRangesAndPrintsNotesAfterwards) {
  uint32_t id = addBuffer("pipeline p;\nabc = 1;\nabc = 2;\n", "twice.orch");
  Diagnostic error{DiagnosticSeverity::Error, {id, 3, 1, 3}, "name 'abc' is bound twice", {}};
  error.notes.push_back(
      Diagnostic{DiagnosticSeverity::Note, {id, 2, 1, 3}, "first bound here", {}});
  EXPECT_EQ(print(error), "twice.orch:3:1: error: name 'abc' is bound twice\n"
                          "abc = 2;\n"
                          "^~~\n"
                          "twice.orch:2:1: note: first bound here\n"
                          "abc = 1;\n"
                          "^~~\n");
}

TEST_F(DiagnosticsTest, ClampsAnUnderlineThatRunsPastTheEndOfTheBuffer) {
  uint32_t id = addBuffer("pipeline", "short.orch");
  EXPECT_EQ(print(Diagnostic{DiagnosticSeverity::Warning, {id, 1, 6, 100}, "clamped", {}}),
            "short.orch:1:6: warning: clamped\n"
            "pipeline\n"
            "     ^~~\n");
}

TEST_F(DiagnosticsTest, DiagnosticsWithoutLocationNameTheProgram) {
  DiagnosticPrintOptions options;
  options.programName = "orchc";
  EXPECT_EQ(print(Diagnostic{DiagnosticSeverity::Error, {}, "cannot read 'x.orch'", {}}, options),
            "orchc: error: cannot read 'x.orch'\n");
}

} // namespace
} // namespace orch
