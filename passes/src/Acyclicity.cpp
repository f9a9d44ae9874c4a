// Acyclicity: a depth-first search over operand edges. IR built from a checked AST is acyclic
// by construction (no use before definition); this guards every other way of building IR.
#include "orch/passes/Acyclicity.h"

namespace orch::passes {
namespace {

class AcyclicityPass : public Pass {
public:
  std::string_view name() const override { return "acyclicity"; }

  void run(ir::Module &module, DiagnosticEngine &diags) override {
    enum class Mark : uint8_t { Unvisited, OnPath, Done };
    std::vector<Mark> marks(module.ops.size(), Mark::Unvisited);
    for (ir::ValueId root = 0; root < module.ops.size(); ++root) {
      if (marks[root] != Mark::Unvisited)
        continue;
      // Iterative DFS: (value, next operand to visit).
      std::vector<std::pair<ir::ValueId, size_t>> stack = {{root, 0}};
      marks[root] = Mark::OnPath;
      while (!stack.empty()) {
        auto &[value, next] = stack.back();
        const std::vector<ir::ValueId> &operands = module.op(value).operands;
        if (next == operands.size()) {
          marks[value] = Mark::Done;
          stack.pop_back();
          continue;
        }
        ir::ValueId operand = operands[next++];
        if (operand >= module.ops.size() || marks[operand] == Mark::Done)
          continue;
        if (marks[operand] == Mark::OnPath) {
          reportCycle(module, stack, operand, diags);
          return;
        }
        marks[operand] = Mark::OnPath;
        stack.push_back({operand, 0});
      }
    }
  }

private:
  static void reportCycle(const ir::Module &module,
                          const std::vector<std::pair<ir::ValueId, size_t>> &stack,
                          ir::ValueId closing, DiagnosticEngine &diags) {
    std::string path;
    bool onCycle = false;
    for (const auto &[value, next] : stack) {
      onCycle |= value == closing;
      if (onCycle)
        path += "%" + std::to_string(value) + " -> ";
    }
    path += "%" + std::to_string(closing);
    diags.error(module.op(closing).location, "the dataflow has a cycle: " + path);
  }
};

} // namespace

std::unique_ptr<Pass> createAcyclicityPass() { return std::make_unique<AcyclicityPass>(); }

} // namespace orch::passes
