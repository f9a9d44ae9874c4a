// Passes on IR built by hand, for what the frontend can never produce (a cycle, a malformed
// module), and the trigger indexes lowering precomputes.
#include "CompileExample.h"

#include "orch/ir/Builder.h"
#include "orch/ir/Verifier.h"
#include "orch/passes/Acyclicity.h"
#include "orch/passes/DomainInference.h"

#include <gtest/gtest.h>

namespace orch::passes {
namespace {

std::vector<Diagnostic> runPass(std::unique_ptr<Pass> pass, ir::Module &module) {
  std::vector<Diagnostic> diagnostics;
  DiagnosticEngine diags([&](const Diagnostic &d) { diagnostics.push_back(d); });
  PassManager passes;
  passes.add(std::move(pass));
  passes.run(module, diags);
  return diagnostics;
}

ir::Operation op(ir::OpKind kind, std::vector<ir::ValueId> operands) {
  ir::Operation operation;
  operation.kind = kind;
  operation.operands = std::move(operands);
  operation.type = plan::Type::scalar(plan::TypeKind::Text);
  return operation;
}

TEST(PassesTest, AcyclicityReportsACycleWithItsOperations) {
  ir::Module module;
  module.ops = {op(ir::OpKind::Project, {2}), op(ir::OpKind::Project, {0}),
                op(ir::OpKind::Project, {1})};
  std::vector<Diagnostic> diagnostics = runPass(createAcyclicityPass(), module);
  ASSERT_EQ(diagnostics.size(), 1u);
  EXPECT_EQ(diagnostics[0].message, "the dataflow has a cycle: %0 -> %2 -> %1 -> %0");
}

TEST(PassesTest, AcyclicityAcceptsADiamond) {
  ir::Module module;
  ir::Builder build(module);
  const plan::Type text = plan::Type::scalar(plan::TypeKind::Text);
  ir::DomainId doc = build.domain("Doc", {});
  ir::ValueId docs = build.source(ir::Source{"files", {}, doc}, text, {});
  ir::ValueId left = build.project({docs, {}}, "path", text, {});
  ir::ValueId right = build.project({docs, {}}, "name", text, {});
  build.record({"a", "b"}, {{left, {}}, {right, {}}}, text, {});
  EXPECT_TRUE(runPass(createAcyclicityPass(), module).empty());
}

TEST(PassesTest, DomainInferenceRejectsExpandingAConstant) {
  ir::Module module;
  ir::Builder build(module);
  ir::DomainId part = build.domain("Part", {});
  ir::ValueId list = build.constant(plan::StaticValue(int64_t(1)), {});
  ir::ValueId parts = build.expand({list, {}}, part, plan::Type::scalar(plan::TypeKind::Int), {});
  EXPECT_EQ(module.domains[part].openedBy, parts);
  std::vector<Diagnostic> diagnostics = runPass(createDomainInferencePass(), module);
  ASSERT_EQ(diagnostics.size(), 1u);
  EXPECT_EQ(diagnostics[0].message,
            "expand needs a list from a domain, but its input is a constant");
}

TEST(PassesTest, DomainInferenceBuildsTheDomainTreeFromExpands) {
  ir::Module module;
  ir::Builder build(module);
  const plan::Type text = plan::Type::scalar(plan::TypeKind::Text);
  ir::DomainId doc = build.domain("Doc", {});
  ir::DomainId page = build.domain("Page", {});
  ir::ValueId docs = build.source(ir::Source{"files", {}, doc}, text, {});
  ir::ValueId pages = build.expand({docs, {}}, page, text, {});
  ir::ValueId back = build.reduce({pages, {}}, plan::Type::list(text), {});
  EXPECT_TRUE(runPass(createDomainInferencePass(), module).empty());
  EXPECT_EQ(module.domains[page].parent, doc);
  EXPECT_EQ(module.op(pages).domain, page);
  EXPECT_EQ(module.op(back).domain, doc);
}

TEST(PassesTest, TheVerifierCatchesMalformedIrAsAnInternalError) {
  ir::Module module;
  module.ops = {op(ir::OpKind::Filter, {0}), op(ir::OpKind::Invoke, {7})};
  module.ops[1].labels = {"x"};
  std::vector<std::string> messages;
  DiagnosticEngine diags([&](const Diagnostic &d) { messages.push_back(d.message); });
  EXPECT_FALSE(ir::verifyModule(module, diags));
  EXPECT_EQ(diags.internalErrorCount(), 3u);
  ASSERT_EQ(messages.size(), 3u);
  EXPECT_EQ(messages[0],
            "internal compiler error: invalid IR: %0 (filter) has 1 operands, expected 2");
  EXPECT_EQ(messages[1],
            "internal compiler error: invalid IR: %1 (invoke) uses undefined value %7");
  EXPECT_EQ(messages[2],
            "internal compiler error: invalid IR: %1 (invoke) invokes an undefined call");
}

TEST(PassesTest, LoweringPrecomputesWhatEachValueFeeds) {
  std::optional<plan::Plan> plan = orch::testing::compileExample("pdf_to_markdown.orch");
  ASSERT_TRUE(plan);
  // docs feeds the split call and two projections; markdown feeds the record and sink 0.
  const plan::PlanNode &docs = plan->nodes[0];
  EXPECT_EQ(docs.name, "docs");
  EXPECT_EQ(docs.consumers, (std::vector<uint32_t>{1, 9, 10}));
  for (const plan::PlanNode &node : plan->nodes)
    if (node.name == "markdown") {
      EXPECT_EQ(node.sinks, (std::vector<uint32_t>{0}));
      EXPECT_EQ(node.consumers.size(), 1u);
    }
  EXPECT_EQ(plan->domains[1].parent, 0u);
  EXPECT_EQ(plan->sinks[0].domain, 0u);
}

} // namespace
} // namespace orch::passes
