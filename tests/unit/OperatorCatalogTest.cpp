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
      EXPECT_TRUE(registry.transform(op.name)) << "operator " << op.name;
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
  EXPECT_EQ(plan::sinkTarget(sinkWith("nowhere", {{"path", std::string("x")}})), "");
}

} // namespace
} // namespace orch
