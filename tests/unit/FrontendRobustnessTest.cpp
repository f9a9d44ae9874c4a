// Thousands of mutated variants of the language's examples go through the whole frontend in
// process: none may crash or hang, and every rejected one gets an error with a location.
#include "SourceTokens.h"

#include "orch/frontend/Frontend.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <gtest/gtest.h>

#include <random>

namespace orch {
namespace {

std::string readExample(const std::string &name) {
  auto buffer = llvm::MemoryBuffer::getFile(std::string(ORCH_EXAMPLES_DIR) + "/" + name);
  return buffer ? (*buffer)->getBuffer().str() : std::string();
}

std::vector<std::string> tokenize(const std::string &text) { return testing::sourceTokens(text); }

std::string join(const std::vector<std::string> &tokens) {
  std::string out;
  for (const std::string &token : tokens)
    out += token;
  return out;
}

class Mutator {
public:
  explicit Mutator(uint32_t seed) : random_(seed) {}

  std::string mutate(const std::string &text, int kind) {
    std::vector<std::string> tokens = tokenize(text);
    if (tokens.empty())
      kind = 1; // only an insertion can change an empty file
    switch (kind) {
    case 0: // delete a token
      tokens.erase(tokens.begin() + pick(tokens.size()));
      break;
    case 1: // insert a token from the language or a stray one
      tokens.insert(tokens.begin() + pick(tokens.size() + 1),
                    vocabulary()[pick(vocabulary().size())]);
      break;
    case 2: // swap two tokens
      std::swap(tokens[pick(tokens.size())], tokens[pick(tokens.size())]);
      break;
    case 3: // truncate
      tokens.resize(pick(tokens.size()));
      break;
    default: { // overwrite random bytes
      std::string bytes = join(tokens);
      for (int flips = 1 + int(pick(4)); flips > 0 && !bytes.empty(); --flips)
        bytes[pick(bytes.size())] = char(pick(256));
      return bytes;
    }
    }
    return join(tokens);
  }

private:
  static const std::vector<std::string> &vocabulary() {
    static const std::vector<std::string> words = {"pipeline",
                                                   "param",
                                                   "source",
                                                   "call",
                                                   "sink",
                                                   "as",
                                                   "expand",
                                                   "reduce",
                                                   "filter",
                                                   "broadcast",
                                                   "true",
                                                   "if",
                                                   "then",
                                                   "else",
                                                   "and",
                                                   "not",
                                                   "coalesce(",
                                                   " as Int",
                                                   "+",
                                                   "*",
                                                   "==",
                                                   "<=",
                                                   "(",
                                                   ")",
                                                   "{",
                                                   "}",
                                                   "<",
                                                   ">",
                                                   ",",
                                                   ";",
                                                   ":",
                                                   "=",
                                                   ".",
                                                   "-",
                                                   "docs",
                                                   "pages",
                                                   "x",
                                                   "pdf.render",
                                                   "\"s\"",
                                                   "\"open",
                                                   "/*",
                                                   "42",
                                                   "2.5",
                                                   "30s",
                                                   "512MB",
                                                   "9999999999999999999999",
                                                   "{ batch: 0 }",
                                                   "List<",
                                                   "@",
                                                   "\\u",
                                                   "é"};
    return words;
  }

  size_t pick(size_t bound) { return bound == 0 ? 0 : size_t(random_() % bound); }

  std::mt19937 random_;
};

TEST(FrontendRobustnessTest, MutatedExamplesNeverCrashAndRejectionsCarryALocation) {
  const std::vector<std::string> examples = {readExample("pdf_to_markdown.orch"),
                                             readExample("clip_quality.orch")};
  ASSERT_FALSE(examples[0].empty());
  ASSERT_FALSE(examples[1].empty());
  Mutator mutator(20261129);
  int variants = 0, rejected = 0;
  for (int round = 0; round < 500; ++round) {
    for (int kind = 0; kind < 5; ++kind) {
      const std::string &example = examples[size_t(round) % examples.size()];
      // Later rounds stack several mutations.
      std::string text = mutator.mutate(example, kind);
      for (int extra = round % 3; extra > 0; --extra)
        text = mutator.mutate(text, (kind + extra) % 5);
      llvm::SourceMgr sources;
      uint32_t id = sources.AddNewSourceBuffer(
          llvm::MemoryBuffer::getMemBufferCopy(text, "mutant.orch"), llvm::SMLoc());
      std::vector<Diagnostic> diagnostics;
      DiagnosticEngine diags([&](const Diagnostic &d) { diagnostics.push_back(d); });
      frontend::FrontendResult result =
          frontend::runFrontend(sources, id, frontend::FrontendOptions{}, diags);
      ++variants;
      if (result.ok)
        continue;
      ++rejected;
      ASSERT_TRUE(diags.hadErrors()) << "rejected without an error:\n" << text;
      for (const Diagnostic &d : diagnostics) {
        ASSERT_TRUE(d.location.isKnown()) << d.message << "\n" << text;
        ASSERT_GE(d.location.line, 1u);
        ASSERT_GE(d.location.column, 1u);
      }
    }
  }
  EXPECT_GE(variants, 2000);
  // Most mutations break something; if none were rejected the mutator would be broken.
  EXPECT_GT(rejected, variants / 2);
}

/// The first error `text` gets from the frontend, or "" when it compiles.
std::string firstError(const std::string &text) {
  llvm::SourceMgr sources;
  uint32_t id = sources.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, "deep.orch"),
                                           llvm::SMLoc());
  std::string first;
  DiagnosticEngine diags([&](const Diagnostic &d) {
    if (d.severity == DiagnosticSeverity::Error && first.empty())
      first = d.message;
  });
  frontend::runFrontend(sources, id, frontend::FrontendOptions{}, diags);
  return first;
}

std::string repeat(const std::string &piece, size_t times) {
  std::string out;
  for (size_t i = 0; i < times; ++i)
    out += piece;
  return out;
}

std::string programWith(const std::string &expression) {
  return "pipeline deep;\nsource rows = jsonl(\"in.jsonl\") as Row;\nx = " + expression +
         ";\nsink jsonl(path: \"out.jsonl\", record: { x: x });\n";
}

TEST(FrontendRobustnessTest, DeepNestingIsAnErrorNotAStackOverflow) {
  // Each of these crashed orchc (SIGSEGV) before nesting was limited.
  const std::string nested = "brackets, 'if's and prefix operators nest more than 256 levels";
  EXPECT_NE(
      firstError(programWith(repeat("(", 100000) + "rows" + repeat(")", 100000))).find(nested),
      std::string::npos);
  EXPECT_NE(firstError(programWith(repeat("test.identity(", 5000) + "rows" + repeat(")", 5000)))
                .find(nested),
            std::string::npos);
  EXPECT_NE(firstError(programWith(repeat("-", 50000) + "1")).find(nested), std::string::npos);
  EXPECT_NE(firstError(programWith(repeat("not ", 50000) + "true")).find(nested),
            std::string::npos);
  EXPECT_NE(firstError(programWith(repeat("if true then ", 5000) + "1" + repeat(" else 2", 5000)))
                .find(nested),
            std::string::npos);
  EXPECT_NE(firstError(programWith("rows.n as Int" + repeat(" + 1", 50000)))
                .find("an expression nests more than 1000 levels"),
            std::string::npos);
  // What stays below the limits compiles: nesting up to 256, siblings without limit.
  EXPECT_EQ(firstError(programWith(repeat("(", 200) + "rows" + repeat(")", 200))), "");
  EXPECT_EQ(firstError(programWith("rows.n as Int" + repeat(" + 1", 900))), "");
  // A source beyond the size limit is refused up front (it used to take minutes and gigabytes).
  std::string huge = programWith("rows.n as Int");
  while (huge.size() <= 2 * 1024 * 1024)
    huge += "v" + std::to_string(huge.size()) + " = 1 + 2;\n";
  EXPECT_NE(firstError(huge).find("the compiler takes sources of up to 2 MiB"), std::string::npos);
  std::string manyFields = "{ ";
  for (int i = 0; i < 2000; ++i)
    manyFields += "a" + std::to_string(i) + ": if rows.n as Int > 1 then 1 else 2, ";
  EXPECT_EQ(firstError(programWith(manyFields + "b: 1 }")), "");
}

} // namespace
} // namespace orch
