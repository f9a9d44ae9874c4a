// Broadcast scoping: `broadcast(x, like)` shows an ancestor's value in a descendant domain, so
// x's domain must be a strict ancestor of like's.
#include "orch/passes/BroadcastScoping.h"

#include "DomainExplanations.h"

namespace orch::passes {
namespace {

class BroadcastScopingPass : public Pass {
public:
  std::string_view name() const override { return "broadcast-scoping"; }

  void run(ir::Module &module, DiagnosticEngine &diags) override {
    for (const ir::Operation &op : module.ops) {
      if (op.kind != ir::OpKind::Broadcast)
        continue;
      const ir::Operation &value = module.op(op.operands[0]);
      const ir::Operation &like = module.op(op.operands[1]);
      if (like.domain == ir::kNoDomain) {
        diags.error(module.useLocation(op, 1),
                    "broadcast needs a 'like' value from a domain, not a constant");
        continue;
      }
      if (value.domain == ir::kNoDomain ||
          (value.domain != like.domain && module.isAncestorOrSelf(value.domain, like.domain)))
        continue;
      std::string from = quotedDomain(module, value.domain);
      std::string to = quotedDomain(module, like.domain);
      std::string message;
      if (value.domain == like.domain)
        message = "broadcast of a value that is already in " + to +
                  "; broadcast brings an ancestor's value down to a descendant domain";
      else if (module.isAncestorOrSelf(like.domain, value.domain))
        message = "cannot broadcast from " + from + " down to " + to + ": " + from + " is below " +
                  to + "; use reduce to bring values up";
      else
        message = "cannot broadcast from " + from + " to " + to + ": " + from +
                  " is not an ancestor of " + to;
      auto error = diags.error(op.location, message);
      error.attachNote(module.useLocation(op, 0), whereValueIs(module, value));
      if (value.domain != like.domain)
        error.attachNote(module.useLocation(op, 1), whereValueIs(module, like));
    }
  }
};

} // namespace

std::unique_ptr<Pass> createBroadcastScopingPass() {
  return std::make_unique<BroadcastScopingPass>();
}

} // namespace orch::passes
