// The frontend's results beyond diagnostics: what names resolve to, the types and constants
// it computes, how arguments bind to parameters, and how options and overrides land.
#include "orch/frontend/Frontend.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <gtest/gtest.h>

namespace orch {
namespace {

struct Compiled {
  llvm::SourceMgr sources;
  std::vector<Diagnostic> diagnostics;
  frontend::FrontendResult result;

  const ast::Statement &statement(const std::string &name) const {
    for (const auto &statement : result.file->statements)
      if (const ast::Identifier *declared = ast::declaredName(*statement))
        if (declared->name == name)
          return *statement;
    throw std::runtime_error("no statement " + name);
  }
  const ast::Expr &value(const std::string &name) const {
    return *std::get<ast::BindingDecl>(statement(name).node).value;
  }
  const ast::ParamDecl &param(const std::string &name) const {
    return std::get<ast::ParamDecl>(statement(name).node);
  }
};

std::unique_ptr<Compiled> compile(const std::string &text,
                                  std::vector<frontend::ParamOverride> overrides = {}) {
  auto compiled = std::make_unique<Compiled>();
  uint32_t id = compiled->sources.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(text, "sema.orch"), llvm::SMLoc());
  DiagnosticEngine diags([&](const Diagnostic &d) { compiled->diagnostics.push_back(d); });
  frontend::FrontendOptions options;
  options.overrides = std::move(overrides);
  compiled->result = frontend::runFrontend(compiled->sources, id, options, diags);
  return compiled;
}

std::string firstMessage(const Compiled &compiled) {
  return compiled.diagnostics.empty() ? "" : compiled.diagnostics.front().message;
}

TEST(SemaTest, NamesResolveToTheirDeclarationsAndCallsToTheirCall) {
  auto compiled = compile(R"(pipeline p;
source docs = files("*.pdf") as Doc;
call split = pdf.pages(dpi: 72);
pages = expand(split(docs)) as Page;
)");
  ASSERT_TRUE(compiled->result.ok) << firstMessage(*compiled);
  const auto &expand = std::get<ast::Expand>(compiled->value("pages").node);
  const auto &invoke = std::get<ast::Invoke>(expand.input->node);
  EXPECT_EQ(invoke.call, &compiled->statement("split"));
  const auto &name = std::get<ast::NameRef>(invoke.use.arguments[0].value->node);
  EXPECT_EQ(name.target, &compiled->statement("docs"));
  ASSERT_EQ(compiled->result.file->domains.size(), 2u);
  EXPECT_EQ(compiled->result.file->domains[0].name, "Doc");
  EXPECT_EQ(compiled->result.file->domains[1].name, "Page");
}

TEST(SemaTest, ASourceWithoutAsNamesItsDomainAfterItself) {
  auto compiled = compile("pipeline p;\nsource rows = jsonl(\"m.jsonl\");\n");
  ASSERT_TRUE(compiled->result.ok);
  EXPECT_EQ(compiled->result.file->domains.at(0).name, "rows");
}

TEST(SemaTest, EveryExpressionGetsItsType) {
  auto compiled = compile(R"(pipeline p;
source docs = files("*.pdf") as Doc;
pages = expand(pdf.pages(docs)) as Page;
texts = ocr.tesseract(pdf.render(pages));
grouped = reduce(texts);
count = list.len(grouped);
row = { path: docs.path, count: count, first: filter(texts, text.nonempty(texts)) };
)");
  ASSERT_TRUE(compiled->result.ok) << firstMessage(*compiled);
  EXPECT_EQ(compiled->value("pages").type->str(), "PdfPage");
  EXPECT_EQ(compiled->value("texts").type->str(), "Text");
  EXPECT_EQ(compiled->value("grouped").type->str(), "List<Text>");
  EXPECT_EQ(compiled->value("count").type->str(), "Int");
  EXPECT_EQ(compiled->value("row").type->str(), "{path: String, count: Int, first: Text}");
}

TEST(SemaTest, ArgumentsBindInParameterOrderWithDefaultsFilledIn) {
  auto compiled = compile(R"(pipeline p;
source docs = files("*.pdf") as Doc;
images = pdf.render(expand(pdf.pages(docs)) as Page);
small = image.resize(height: 32, image: images, width: 64);
)");
  ASSERT_TRUE(compiled->result.ok) << firstMessage(*compiled);
  const auto &render = std::get<ast::Invoke>(compiled->value("images").node).use;
  ASSERT_EQ(render.bound.size(), 2u);
  EXPECT_EQ(render.bound[1].param->name, "dpi");
  EXPECT_EQ(render.bound[1].expr, nullptr);
  EXPECT_EQ(std::get<int64_t>(*render.bound[1].value), 150);
  const auto &resize = std::get<ast::Invoke>(compiled->value("small").node).use;
  ASSERT_EQ(resize.bound.size(), 3u);
  EXPECT_EQ(resize.bound[0].param->name, "image");
  EXPECT_EQ(std::get<int64_t>(*resize.bound[1].value), 64);
  EXPECT_EQ(std::get<int64_t>(*resize.bound[2].value), 32);
}

TEST(SemaTest, LiteralsDecodeToTheirValues) {
  auto compiled = compile(R"(pipeline p;
param s: String = "tab\t\u00e9\ud83d\ude00\"";
param i: Int = -1_000_000;
param f: Float = 7;
param d: Duration = 1.5s;
param z: Size = 4GiB;
param m: Size = 512MB;
param b: Bool = true;
)");
  ASSERT_TRUE(compiled->result.ok) << firstMessage(*compiled);
  EXPECT_EQ(std::get<std::string>(*compiled->param("s").resolvedValue),
            "tab\t\xC3\xA9\xF0\x9F\x98\x80\"");
  EXPECT_EQ(std::get<int64_t>(*compiled->param("i").resolvedValue), -1'000'000);
  EXPECT_EQ(std::get<double>(*compiled->param("f").resolvedValue), 7.0);
  EXPECT_EQ(std::get<plan::Duration>(*compiled->param("d").resolvedValue).nanoseconds,
            1'500'000'000);
  EXPECT_EQ(std::get<plan::ByteSize>(*compiled->param("z").resolvedValue).bytes, int64_t(4) << 30);
  EXPECT_EQ(std::get<plan::ByteSize>(*compiled->param("m").resolvedValue).bytes, 512'000'000);
  EXPECT_TRUE(std::get<bool>(*compiled->param("b").resolvedValue));
}

TEST(SemaTest, CallOptionsAreRecordedWithParamsSubstituted) {
  auto compiled = compile(R"(pipeline p;
param n: Int = 32;
call ocr = ocr.tesseract(lang: "deu") { batch: n, replicas: 3, retries: 2, recovery: "isolate",
                                        timeout: 30s, memory: 2GiB, cpus: 2 };
)",
                          {{"n", "48"}});
  ASSERT_TRUE(compiled->result.ok) << firstMessage(*compiled);
  const plan::CallOptions &options =
      std::get<ast::CallDecl>(compiled->statement("ocr").node).use.callOptions;
  EXPECT_EQ(options.batch, 48);
  EXPECT_EQ(options.replicas, 3);
  EXPECT_EQ(options.retries, 2);
  EXPECT_EQ(options.recovery, plan::RecoveryPolicy::Isolate);
  EXPECT_EQ(options.timeoutNanoseconds, 30'000'000'000);
  EXPECT_EQ(options.memoryBytes, int64_t(2) << 30);
  EXPECT_EQ(options.cpus, 2.0);
  EXPECT_EQ(options.gpus, 0.0);
}

TEST(SemaTest, OverridesReplaceParamValuesBeforeTheyAreUsed) {
  auto compiled = compile(R"(pipeline p;
param input: String = "a/*.pdf";
source docs = files(input) as Doc;
)",
                          {{"input", "b/*.pdf"}});
  ASSERT_TRUE(compiled->result.ok) << firstMessage(*compiled);
  const auto &use = std::get<ast::SourceDecl>(compiled->statement("docs").node).use;
  EXPECT_EQ(std::get<std::string>(*use.bound.at(0).value), "b/*.pdf");
}

TEST(SemaTest, GenericOperatorsTakeTheirTypeFromTheirInput) {
  auto compiled = compile(R"(pipeline p;
source docs = files("*.pdf") as Doc;
same = test.identity(docs);
n = list.len(reduce(expand(test.split(docs, n: 3)) as Part));
)");
  ASSERT_TRUE(compiled->result.ok) << firstMessage(*compiled);
  EXPECT_EQ(compiled->value("same").type->str(), "File");
  EXPECT_EQ(compiled->value("n").type->str(), "Int");
}

TEST(SemaTest, EveryStatementsErrorsAreReportedInOneRunAndNoneTwice) {
  // A syntax error does not hide the name error of another statement; the name the broken
  // statement declares is known, so its uses are not reported again.
  auto syntax = compile("pipeline p;\nx = ;\ny = undefined_name;\nz = x;\n");
  EXPECT_FALSE(syntax->result.ok);
  ASSERT_EQ(syntax->diagnostics.size(), 2u);
  EXPECT_EQ(syntax->diagnostics[1].message, "use of undefined name 'undefined_name'");
  // A name error does not hide the type error of another statement.
  auto names = compile("pipeline p;\nx = y;\nz = pdf.nope(1);\n");
  ASSERT_EQ(names->diagnostics.size(), 2u);
  EXPECT_EQ(names->diagnostics[0].message, "use of undefined name 'y'");
  EXPECT_EQ(names->diagnostics[1].message.rfind("unknown operator 'pdf.nope'", 0), 0u)
      << names->diagnostics[1].message;
  // A callee name resolution reported is not looked up among the operators as well.
  auto callee = compile("pipeline p;\nsource docs = files(\"*\") as Doc;\nx = docs(docs);\n");
  ASSERT_EQ(callee->diagnostics.size(), 1u);
  EXPECT_EQ(callee->diagnostics[0].message, "'docs' is a source, not a call");
}

} // namespace
} // namespace orch
