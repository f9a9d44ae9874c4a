// Output conflicts (OutputConflicts.h): errors, because what they lose is lost without a trace.
#include "orch/passes/OutputConflicts.h"

#include <map>
#include <vector>

namespace orch::passes {
namespace {

const plan::StaticValue *constantNamed(const ir::Sink &sink, const std::string &name) {
  for (const ir::NamedConstant &constant : sink.constants)
    if (constant.name == name)
      return &constant.value;
  return nullptr;
}

class OutputConflictsPass : public Pass {
public:
  std::string_view name() const override { return "output-conflicts"; }

  void run(ir::Module &module, DiagnosticEngine &diags) override {
    if (module.sinks.empty()) {
      diags.error(module.pipelineLocation,
                  "pipeline '" + module.pipelineName +
                      "' has no sink: it would run and write nothing; "
                      "add one, as in `sink jsonl(path: ..., record: ...)`");
      return;
    }
    std::map<std::string, const ir::Sink *> writers;
    for (const ir::Sink &sink : module.sinks) {
      if (const plan::StaticValue *path = constantNamed(sink, "path"))
        if (auto *text = std::get_if<std::string>(path)) {
          auto [first, inserted] = writers.emplace(*text, &sink);
          if (!inserted)
            diags
                .error(sink.location,
                       "two sinks write \"" + *text + "\": their rows would interleave in one file")
                .attachNote(first->second->location, "the other sink writing it is here");
        }
      if (sink.op == "files")
        checkNameVaries(module, sink, diags);
    }
  }

private:
  /// Whether each value differs between the entities of `domain` (it derives from the source
  /// or the expand that makes them) rather than being copied from above (a broadcast, a
  /// constant). Operands come before their users, so one pass in order suffices.
  static std::vector<bool> variesWith(const ir::Module &module, ir::DomainId domain) {
    std::vector<bool> varies(module.ops.size(), false);
    for (ir::ValueId id = 0; id < module.ops.size(); ++id) {
      const ir::Operation &op = module.op(id);
      switch (op.kind) {
      case ir::OpKind::Constant:
      case ir::OpKind::Broadcast:
        break;
      case ir::OpKind::Source:
        varies[id] = op.domain == domain;
        break;
      default:
        varies[id] = op.kind == ir::OpKind::Expand && op.opens == domain;
        for (ir::ValueId operand : op.operands)
          varies[id] = varies[id] || varies[operand];
      }
    }
    return varies;
  }

  /// A `files` sink writes one file per row, named by `name`: a name that does not vary with
  /// the rows (a constant, or a value broadcast from above) is the same for many of them, and
  /// each file overwrites the last.
  static void checkNameVaries(const ir::Module &module, const ir::Sink &sink,
                              DiagnosticEngine &diags) {
    if (sink.domain == ir::kNoDomain)
      return;
    for (size_t i = 0; i < sink.labels.size(); ++i) {
      if (sink.labels[i] != "name" || variesWith(module, sink.domain)[sink.operands[i]])
        continue;
      const SourceLocation at = i < sink.operandLocations.size()
                                    ? sink.operandLocations[i]
                                    : module.op(sink.operands[i]).location;
      const std::string rows = module.domainName(sink.domain);
      diags
          .error(at, "every " + rows +
                         " row of this files sink gets the same name: each file would "
                         "overwrite the last")
          .attachNote(sink.location, "make the name depend on the " + rows +
                                         " itself, for instance on its index: `... + \"-\" + "
                                         "string(INDEX)`");
    }
  }
};

} // namespace

std::unique_ptr<Pass> createOutputConflictsPass() {
  return std::make_unique<OutputConflictsPass>();
}

} // namespace orch::passes
