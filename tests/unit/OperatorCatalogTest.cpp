// The operator catalog, the implementations and the reference agree: every operator a program
// may name is implemented, every implementation is in the catalog, and docs/operators.md
// documents each one.
#include "orch/plan/OperatorCatalog.h"
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

} // namespace
} // namespace orch
