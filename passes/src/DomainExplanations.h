// Wording shared by the domain checks: where a value is, how two domains relate, and what to
// write instead. Internal to passes/.
#pragma once

#include "orch/ir/Module.h"

#include <string>

namespace orch::passes {

inline std::string quotedDomain(const ir::Module &module, ir::DomainId domain) {
  return "'" + module.domainName(domain) + "'";
}

/// "'texts' is in 'Page'", or "this value is in 'Page'" for an unnamed value.
inline std::string whereValueIs(const ir::Module &module, const ir::Operation &value) {
  return (value.name.empty() ? std::string("this value") : "'" + value.name + "'") + " is in " +
         quotedDomain(module, value.domain);
}

/// The nearest domain that is an ancestor of (or equal to) both; kNoDomain if they come from
/// different sources.
inline ir::DomainId commonAncestor(const ir::Module &module, ir::DomainId a, ir::DomainId b) {
  for (ir::DomainId candidate = a; candidate != ir::kNoDomain;
       candidate = module.domains[candidate].parent)
    if (module.isAncestorOrSelf(candidate, b))
      return candidate;
  return ir::kNoDomain;
}

/// How to bring a value of domain `from` (produced by `producer`) and one of `to` together.
inline std::string suggestion(const ir::Module &module, ir::DomainId from, ir::DomainId to,
                              const ir::Operation &producer) {
  if (module.isAncestorOrSelf(to, from)) {
    // `from` is below `to`.
    if (producer.kind == ir::OpKind::Reduce && module.depth(from) > module.depth(to)) {
      ir::DomainId gathered = module.op(producer.operands[0]).domain;
      return "reduce gathers one level at a time: this reduce brings " +
             quotedDomain(module, gathered) + " values to " + quotedDomain(module, from) +
             "; reduce again to reach " + quotedDomain(module, to);
    }
    return quotedDomain(module, from) + " is below " + quotedDomain(module, to) + ": reduce the " +
           quotedDomain(module, from) + " value up to " + quotedDomain(module, to) +
           ", or broadcast the " + quotedDomain(module, to) + " value down to " +
           quotedDomain(module, from);
  }
  if (module.isAncestorOrSelf(from, to))
    return quotedDomain(module, to) + " is below " + quotedDomain(module, from) + ": reduce the " +
           quotedDomain(module, to) + " value up to " + quotedDomain(module, from) +
           ", or broadcast the " + quotedDomain(module, from) + " value down to " +
           quotedDomain(module, to);
  ir::DomainId common = commonAncestor(module, from, to);
  if (common == ir::kNoDomain)
    return quotedDomain(module, from) + " and " + quotedDomain(module, to) +
           " come from different sources, whose values cannot be combined";
  return quotedDomain(module, from) + " and " + quotedDomain(module, to) +
         " are not nested (both are below " + quotedDomain(module, common) + "): reduce each to " +
         quotedDomain(module, common) + " before combining them";
}

} // namespace orch::passes
