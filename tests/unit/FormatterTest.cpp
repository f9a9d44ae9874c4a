// `orchc fmt`: every .orch file of the repository that parses is already in canonical form;
// scrambled layouts of the examples format back to it; the plan never changes; comments stay.
#include "CompileExample.h"
#include "SourceTokens.h"

#include "orch/format/Formatter.h"
#include "orch/plan/PlanCodec.h"
#include "orch/plan/PlanFingerprint.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <sstream>

namespace orch {
namespace {

struct Formatted {
  std::optional<std::string> text;
  std::string firstError;
};

Formatted format(const std::string &text) {
  llvm::SourceMgr sources;
  uint32_t id = sources.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, "t.orch"),
                                           llvm::SMLoc());
  Formatted result;
  DiagnosticEngine diags([&](const Diagnostic &d) {
    if (d.severity == DiagnosticSeverity::Error && result.firstError.empty())
      result.firstError = d.message;
  });
  result.text = format::formatSource(sources, id, diags);
  return result;
}

/// The plan's bytes, as `orchc -o` writes them (source positions are beside them): what must not
/// change when only the layout does.
std::string planBytes(const std::string &text) {
  std::optional<plan::Plan> compiled = testing::compileText(text);
  return compiled ? plan::encodePlan(*compiled) : std::string();
}

std::string readFile(const std::filesystem::path &path) {
  auto buffer = llvm::MemoryBuffer::getFile(path.string());
  return buffer ? (*buffer)->getBuffer().str() : std::string();
}

/// The same program with its layout scrambled: other spacing, lines joined and split, tabs,
/// runs of blank lines. Comments and their lines are kept (a comment's line is its meaning).
std::string scramble(const std::string &text, unsigned seed) {
  const std::vector<std::string> tokens = testing::sourceTokens(text);
  auto isSpace = [](const std::string &t) {
    return !t.empty() && std::isspace((unsigned char)t[0]);
  };
  auto isComment = [](const std::string &t) {
    return t.rfind("//", 0) == 0 || t.rfind("/*", 0) == 0;
  };
  auto isWord = [](const std::string &t) {
    return !t.empty() && (std::isalnum((unsigned char)t[0]) || t[0] == '_' || t[0] == '"');
  };
  std::mt19937 random(seed);
  const std::vector<std::string> anySpace = {" ", "   ", "\t", "\n    ", " \n\t", "\n\n\n"};
  std::string out;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const std::string &current = tokens[i];
    const std::string previous = i > 0 ? tokens[i - 1] : "";
    const std::string next = i + 1 < tokens.size() ? tokens[i + 1] : "";
    const bool nearComment = isComment(previous) || isComment(next);
    const size_t newlines = size_t(std::count(current.begin(), current.end(), '\n'));
    if (isSpace(current)) {
      if (nearComment || newlines >= 2)
        out += newlines >= 2 ? std::string(newlines + random() % 3, '\n') : current;
      else if (isWord(previous) && isWord(next))
        out += anySpace[random() % anySpace.size() % 5];
      else
        out += random() % 3 ? "" : anySpace[random() % 5];
      continue;
    }
    out += current;
    // Space where there was none, between tokens that are not comments.
    if (!isSpace(next) && !next.empty() && !isComment(current) && !isComment(next) &&
        random() % 4 == 0)
      out += anySpace[random() % 4];
  }
  return out;
}

std::vector<std::filesystem::path> repositoryOrchFiles() {
  std::vector<std::filesystem::path> files;
  const std::filesystem::path root = std::filesystem::path(ORCH_EXAMPLES_DIR).parent_path();
  for (const char *folder : {"examples", "tests", "docs", "bench", "deploy"}) {
    if (!std::filesystem::exists(root / folder))
      continue;
    for (const auto &entry : std::filesystem::recursive_directory_iterator(root / folder))
      if (entry.is_regular_file() && entry.path().extension() == ".orch")
        files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(FormatterTest, EveryOrchFileOfTheRepositoryIsAFixedPoint) {
  size_t formatted = 0, refused = 0;
  for (const std::filesystem::path &path : repositoryOrchFiles()) {
    const std::string text = readFile(path);
    Formatted result = format(text);
    if (!result.text) {
      // Only the deliberately broken files of the diagnostics tests may be refused.
      EXPECT_NE(path.string().find("tests/lit"), std::string::npos) << path;
      EXPECT_FALSE(result.firstError.empty()) << path;
      ++refused;
      continue;
    }
    EXPECT_EQ(*result.text, text) << path << " is not formatted: run `orchc fmt " << path.string()
                                  << "`";
    ++formatted;
  }
  EXPECT_GE(formatted, 25u);
  EXPECT_LE(refused, 6u);
  std::printf("%zu files formatted, %zu with syntax errors refused\n", formatted, refused);
}

TEST(FormatterTest, ScrambledExamplesFormatToTheCanonicalTextAndTheSamePlan) {
  for (const char *name :
       {"pdf_to_markdown.orch", "pdf_text.orch", "clip_quality.orch", "clip_features.orch"}) {
    const std::string canonical = testing::readExample(name);
    ASSERT_FALSE(canonical.empty()) << name;
    const std::string plan = planBytes(canonical);
    ASSERT_FALSE(plan.empty()) << name;
    for (unsigned seed = 1; seed <= 40; ++seed) {
      const std::string messy = scramble(canonical, seed);
      ASSERT_NE(messy, canonical) << name << " seed " << seed;
      EXPECT_EQ(planBytes(messy), plan) << name << " seed " << seed << ":\n" << messy;
      Formatted result = format(messy);
      ASSERT_TRUE(result.text) << result.firstError << "\n" << messy;
      EXPECT_EQ(*result.text, canonical) << name << " seed " << seed << ":\n" << messy;
    }
  }
}

TEST(FormatterTest, CommentsLayoutAndFormattingKeepWhatEveryPlanOfTheRepositoryDoes) {
  // A run killed, then resumed after a comment, a blank line or `orchc fmt`, resumes: the run
  // journal's fingerprint (and inline Call names) do not depend on where the text is, nor do
  // the plan's bytes (positions are written beside them).
  size_t compared = 0;
  for (const std::filesystem::path &path : repositoryOrchFiles()) {
    const std::string text = readFile(path);
    std::string error;
    std::optional<plan::Plan> original = testing::compileText(text, &error, path.string());
    if (!original)
      continue; // a diagnostics test's broken input
    const std::string fingerprint = plan::planFingerprint(*original);
    const std::string bytes = plan::encodePlan(*original);
    std::vector<std::string> variants = {"// a comment added before resuming\n\n\n" + text};
    Formatted formatted = format(variants[0]);
    ASSERT_TRUE(formatted.text) << path << ": " << formatted.firstError;
    variants.push_back(*formatted.text);
    // Other spacing and line breaks too, where the scrambler keeps every token whole.
    if (std::string messy = scramble(text, 7); testing::compileText(messy, &error, path.string()))
      variants.push_back(messy);
    for (const std::string &variant : variants) {
      std::optional<plan::Plan> edited = testing::compileText(variant, &error, path.string());
      ASSERT_TRUE(edited) << path << ": " << error << "\n" << variant;
      EXPECT_TRUE(plan::encodePlan(*edited) == bytes) << path << ": the plan's bytes changed:\n"
                                                      << variant;
      EXPECT_EQ(plan::planFingerprint(*edited), fingerprint)
          << path << ":\n"
          << variant << "\nchanges: "
          << (plan::describePlanChanges(*original, *edited).empty()
                  ? std::string("(none described)")
                  : plan::describePlanChanges(*original, *edited).front());
    }
    ++compared;
  }
  // Every example, and the lit inputs that are not broken on purpose.
  EXPECT_GE(compared, 12u);
  std::printf("%zu plans compared\n", compared);
}

TEST(FormatterTest, KeepsEveryCommentWhereItBelongs) {
  const std::string messy = "// header\n\n\npipeline p ;   // the name\n"
                            "source docs=files( \"in/*.txt\" ) as Doc;\n"
                            "/* block */ n = list.len( reduce( expand( test.split( docs.path ,\n"
                            "  // why three\n  n: 3 ) ) as Part ) );\n"
                            "sink jsonl(path:\"o.jsonl\",record:{ n : n , } ) ; /* end */ // last\n"
                            "// footer\n";
  Formatted result = format(messy);
  ASSERT_TRUE(result.text) << result.firstError;
  EXPECT_EQ(*result.text, "// header\n\n"
                          "pipeline p;  // the name\n"
                          "source docs = files(\"in/*.txt\") as Doc;\n"
                          "/* block */ n = list.len(\n"
                          "    reduce(\n"
                          "        expand(\n"
                          "            test.split(\n"
                          "                docs.path,\n"
                          "                // why three\n"
                          "                n: 3\n"
                          "            )\n"
                          "        ) as Part\n"
                          "    )\n"
                          ");\n"
                          "sink jsonl(path: \"o.jsonl\", record: { n: n });  /* end */ // last\n"
                          "// footer\n");
  EXPECT_EQ(format(*result.text).text, result.text) << "formatting twice changes nothing";
  EXPECT_EQ(planBytes(*result.text), planBytes(messy));
}

TEST(FormatterTest, BreaksOnlyTheGroupsThatDoNotFitOnALine) {
  const std::string longSink =
      "pipeline p;\nsource docs = files(\"in/*.txt\") as Doc;\n"
      "sink jsonl(path: \"out/a-rather-long-name-for-the-output-file.jsonl\", record: { path: "
      "docs.path, size: docs.size, stem: docs.stem, name: docs.name });\n";
  Formatted result = format(longSink);
  ASSERT_TRUE(result.text) << result.firstError;
  EXPECT_EQ(*result.text,
            "pipeline p;\nsource docs = files(\"in/*.txt\") as Doc;\n"
            "sink jsonl(\n"
            "    path: \"out/a-rather-long-name-for-the-output-file.jsonl\",\n"
            "    record: { path: docs.path, size: docs.size, stem: docs.stem, name: docs.name }\n"
            ");\n");
  std::istringstream lines(*result.text);
  for (std::string line; std::getline(lines, line);)
    EXPECT_LE(line.size(), format::kFormatLineWidth);
  EXPECT_EQ(format(*result.text).text, result.text);
}

TEST(FormatterTest, SpacesBinaryOperatorsButNotTypeBracketsOrNegation) {
  const std::string scrambled =
      "pipeline p;\nparam k: Int = -3;\nsource rows = jsonl(\"in.jsonl\") as Row;\n"
      "x: Row<Int> = -(rows.n as Int)-k*-2;\ny = rows.v as List<Int>;\n"
      "z = if x<1 and not(x==0) then -x else x%2;\n"
      "sink jsonl(path: \"o.jsonl\", record: { x: x>=0, y: y, z: z });\n";
  Formatted result = format(scrambled);
  ASSERT_TRUE(result.text) << result.firstError;
  EXPECT_EQ(*result.text,
            "pipeline p;\nparam k: Int = -3;\nsource rows = jsonl(\"in.jsonl\") as Row;\n"
            "x: Row<Int> = -(rows.n as Int) - k * -2;\ny = rows.v as List<Int>;\n"
            "z = if x < 1 and not (x == 0) then -x else x % 2;\n"
            "sink jsonl(path: \"o.jsonl\", record: { x: x >= 0, y: y, z: z });\n");
  EXPECT_EQ(format(*result.text).text, result.text);
  EXPECT_EQ(planBytes(*result.text), planBytes(scrambled));
}

TEST(FormatterTest, PutsALongOperatorDeclarationsRunnerOnItsOwnLine) {
  const std::string scrambled =
      "pipeline p;\noperator   quality.score( text :Text,const  min_words:Int=20 )->Float="
      "python( \"models/quality.py\",class:\"Scorer\" ) ;\n"
      "operator up(text: String)->String=exec(\"bin/up\",args:[ \"-v\" ,\"--fast\" ]);\n";
  Formatted result = format(scrambled);
  ASSERT_TRUE(result.text) << result.firstError;
  EXPECT_EQ(
      *result.text,
      "pipeline p;\n"
      "operator quality.score(text: Text, const min_words: Int = 20) -> Float\n"
      "    = python(\"models/quality.py\", class: \"Scorer\");\n"
      "operator up(text: String) -> String = exec(\"bin/up\", args: [\"-v\", \"--fast\"]);\n");
  EXPECT_EQ(format(*result.text).text, result.text);
}

TEST(FormatterTest, RefusesAFileWithSyntaxErrors) {
  Formatted result = format("pipeline p;\nx = reduce(;\n");
  EXPECT_FALSE(result.text);
  EXPECT_NE(result.firstError.find("';'"), std::string::npos) << result.firstError;
}

} // namespace
} // namespace orch
