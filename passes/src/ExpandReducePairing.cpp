// Expand/reduce pairing. A reduce always lands one level up, closing the expand that opened its
// input's domain, so the brackets nest by construction; what remains to check is a reduce with
// nothing to close (a root-domain value) and expands whose results go nowhere.
#include "orch/passes/ExpandReducePairing.h"

#include "DomainExplanations.h"

namespace orch::passes {
namespace {

class ExpandReducePairingPass : public Pass {
public:
  std::string_view name() const override { return "expand-reduce-pairing"; }

  void run(ir::Module &module, DiagnosticEngine &diags) override {
    std::vector<bool> consumed(module.domains.size(), false);
    for (const ir::Operation &op : module.ops) {
      if (op.kind != ir::OpKind::Reduce)
        continue;
      ir::DomainId input = module.op(op.operands[0]).domain;
      if (input == ir::kNoDomain)
        continue;
      if (module.domains[input].parent == ir::kNoDomain) {
        diags
            .error(op.location, "reduce of a value in the root domain " +
                                    quotedDomain(module, input) + ": there is no expand to close")
            .attachNote(module.domains[input].location,
                        quotedDomain(module, input) + " is a root domain, read by a source");
        continue;
      }
      consumed[input] = true;
    }
    for (const ir::Sink &sink : module.sinks)
      for (ir::DomainId domain = sink.domain; domain != ir::kNoDomain;
           domain = module.domains[domain].parent)
        consumed[domain] = true;
    for (ir::DomainId domain = 0; domain < module.domains.size(); ++domain) {
      const ir::Domain &info = module.domains[domain];
      if (info.openedBy == ir::kNoValue || consumed[domain])
        continue;
      diags.warning(info.location, "the values of domain " + quotedDomain(module, domain) +
                                       " are never reduced or written by a sink; the work of this "
                                       "expand is lost");
    }
  }
};

} // namespace

std::unique_ptr<Pass> createExpandReducePairingPass() {
  return std::make_unique<ExpandReducePairingPass>();
}

} // namespace orch::passes
