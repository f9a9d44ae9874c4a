// The operator catalog, the implementations and the reference agree: every operator a program
// may name is implemented, every implementation is in the catalog, and docs/operators.md
// documents each one.
#include "orch/plan/OperatorCatalog.h"
#include "orch/plan/Plan.h"
#include "orch/runtime/operators/TestOperators.h"
#include "orch/stdlib/StandardOperators.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace orch {
namespace {

runtime::OperatorRegistry everything() {
  runtime::OperatorRegistry registry;
  stdlib::registerStandardOperators(registry);
  runtime::registerTestOperators(registry, nullptr);
  return registry;
}

TEST(OperatorCatalogTest, EveryCatalogOperatorIsImplemented) {
  const runtime::OperatorRegistry registry = everything();
  for (const plan::OperatorSignature &op : plan::standardCatalog().all()) {
    switch (op.kind) {
    case plan::OperatorKind::Source:
      EXPECT_TRUE(registry.source(op.name)) << "source " << op.name;
      break;
    case plan::OperatorKind::Transform:
      EXPECT_EQ(bool(registry.transform(op.name)), !op.loweredByCompiler) << "operator " << op.name;
      break;
    case plan::OperatorKind::Sink:
      EXPECT_TRUE(registry.sink(op.name)) << "sink " << op.name;
      break;
    }
  }
}

TEST(OperatorCatalogTest, EveryRegisteredOperatorIsInTheCatalogAndDocumented) {
  std::ifstream file(ORCH_DOCS_DIR "/operators.md");
  ASSERT_TRUE(file) << "docs/operators.md is missing";
  std::stringstream text;
  text << file.rdbuf();
  const std::string reference = text.str();
  const runtime::OperatorRegistry registry = everything();
  const plan::OperatorCatalog &catalog = plan::standardCatalog();
  auto check = [&](plan::OperatorKind kind, const std::vector<std::string> &names) {
    for (const std::string &name : names) {
      EXPECT_TRUE(catalog.find(kind, name)) << name << " is registered but not in the catalog";
      EXPECT_NE(reference.find("### `" + name + "`"), std::string::npos)
          << name << " is not documented in docs/operators.md (regenerate it with "
          << "`orch operators > docs/operators.md`)";
    }
  };
  check(plan::OperatorKind::Transform, registry.transformNames());
  check(plan::OperatorKind::Source, registry.sourceNames());
  check(plan::OperatorKind::Sink, registry.sinkNames());
}

plan::PlanSink sinkWith(std::string op, std::vector<plan::NamedConstant> constants) {
  plan::PlanSink sink;
  sink.op = std::move(op);
  sink.constants = std::move(constants);
  return sink;
}

TEST(OperatorCatalogTest, EverySinkSaysWhereItWritesFromItsOwnConstants) {
  for (const plan::OperatorSignature &op : plan::standardCatalog().all())
    if (op.kind == plan::OperatorKind::Sink) {
      EXPECT_FALSE(op.target.empty()) << op.name << " does not say where it writes";
      for (size_t open = op.target.find('{'); open != std::string::npos;
           open = op.target.find('{', open + 1)) {
        const std::string name = op.target.substr(open + 1, op.target.find('}', open) - open - 1);
        EXPECT_TRUE(op.param(name)) << op.name << "'s target names no constant '" << name << "'";
      }
    }
  EXPECT_EQ(plan::sinkTarget(sinkWith("jsonl", {{"path", std::string("out/docs.jsonl")}})),
            "out/docs.jsonl");
  EXPECT_EQ(plan::sinkTarget(
                sinkWith("files", {{"dir", std::string("out/md")}, {"ext", std::string(".md")}})),
            "out/md/*.md");
  EXPECT_EQ(plan::sinkTarget(sinkWith("webdataset", {{"dir", std::string("shards")}})),
            "shards/shard-*.tar");
  EXPECT_EQ(plan::sinkTarget(sinkWith("nowhere", {{"path", std::string("x")}})), "x")
      << "a sink the catalog does not know: its path";
  EXPECT_EQ(plan::sinkTarget(sinkWith("nowhere", {})), "");
}

} // namespace
} // namespace orch

// The catalog itself: what it holds and how signatures are built.
namespace orch::plan {
namespace {

TEST(OperatorCatalogTest, HoldsEveryOperatorTheLanguageReferenceUses) {
  const OperatorCatalog &catalog = standardCatalog();
  for (const char *name :
       {"pdf.pages", "pdf.render", "pdf.text", "ocr.tesseract", "text.join", "text.nonempty",
        "list.len", "list.mean", "math.gt", "video.clips", "video.frames", "video.decode",
        "image.sharpness", "test.split", "test.sleep", "test.fail", "test.identity"})
    EXPECT_NE(catalog.find(OperatorKind::Transform, name), nullptr) << name;
  EXPECT_NE(catalog.find(OperatorKind::Source, "files"), nullptr);
  EXPECT_NE(catalog.find(OperatorKind::Sink, "files"), nullptr);
  EXPECT_NE(catalog.find(OperatorKind::Sink, "jsonl"), nullptr);
  EXPECT_EQ(catalog.find(OperatorKind::Transform, "files"), nullptr);
  EXPECT_TRUE(catalog.find(OperatorKind::Transform, "image.sharpness")->gpu);
  EXPECT_FALSE(catalog.find(OperatorKind::Transform, "ocr.tesseract")->gpu);
}

TEST(OperatorCatalogTest, SignaturesListTheOptionsTheyAccept) {
  const OperatorCatalog &catalog = standardCatalog();
  auto accepts = [&](OperatorKind kind, const char *op, const char *option) {
    const std::vector<std::string> &options = catalog.find(kind, op)->options;
    return std::find(options.begin(), options.end(), option) != options.end();
  };
  EXPECT_TRUE(accepts(OperatorKind::Transform, "image.sharpness", "gpus"));
  EXPECT_TRUE(accepts(OperatorKind::Transform, "image.sharpness", "batch"));
  EXPECT_FALSE(accepts(OperatorKind::Transform, "ocr.tesseract", "gpus"));
  EXPECT_FALSE(accepts(OperatorKind::Transform, "ocr.tesseract", "require_gpu"));
  EXPECT_TRUE(accepts(OperatorKind::Transform, "ocr.tesseract", "timeout"));
  EXPECT_TRUE(catalog.find(OperatorKind::Sink, "jsonl")->options.empty());
  EXPECT_TRUE(catalog.find(OperatorKind::Source, "files")->options.empty());
  for (const OperatorSignature &signature : catalog.all())
    for (const std::string &option : signature.options)
      EXPECT_NE(findCallOption(option), nullptr) << signature.name << " lists " << option;
}

TEST(OperatorCatalogTest, EverySignatureIsWellFormed) {
  for (const OperatorSignature &signature : standardCatalog().all()) {
    EXPECT_FALSE(signature.doc.empty()) << signature.name;
    std::set<std::string> names;
    for (const OperatorParam &param : signature.params) {
      EXPECT_TRUE(names.insert(param.name).second) << signature.name << "." << param.name;
      if (param.defaultValue) {
        EXPECT_TRUE(isAssignable(typeOf(*param.defaultValue), param.type))
            << signature.name << "." << param.name;
      }
      if (signature.kind == OperatorKind::Source) {
        EXPECT_EQ(param.role, ParamRole::Static) << signature.name;
      }
    }
    if (signature.kind != OperatorKind::Source) {
      bool hasInput = false;
      for (const OperatorParam &param : signature.params)
        hasInput |= param.role == ParamRole::Input;
      EXPECT_TRUE(hasInput) << signature.name << " has no dataflow input, so it could never run";
    }
    if (signature.kind == OperatorKind::Transform && signature.result.containsVar()) {
      bool bindsVar = false;
      for (const OperatorParam &param : signature.params)
        bindsVar |= param.role == ParamRole::Input && param.type.containsVar();
      EXPECT_TRUE(bindsVar) << signature.name << " returns T but no input binds it";
    }
  }
}

TEST(OperatorCatalogTest, ALaterSignatureReplacesAnEarlierOneOfTheSameKindAndName) {
  auto named = [](OperatorKind kind, std::string doc) {
    OperatorSignature signature;
    signature.name = "x";
    signature.kind = kind;
    signature.doc = std::move(doc);
    return signature;
  };
  OperatorCatalog catalog;
  catalog.add(named(OperatorKind::Transform, "first"));
  catalog.add(named(OperatorKind::Sink, "sink"));
  catalog.add(named(OperatorKind::Transform, "second"));
  EXPECT_EQ(catalog.all().size(), 2u);
  EXPECT_EQ(catalog.find(OperatorKind::Transform, "x")->doc, "second");
}

} // namespace
} // namespace orch::plan
