// Domain-tree queries of the IR module.
#include "orch/ir/Module.h"

namespace orch::ir {

bool Module::isAncestorOrSelf(DomainId ancestor, DomainId descendant) const {
  for (DomainId current = descendant; current != kNoDomain && current < domains.size();
       current = domains[current].parent)
    if (current == ancestor)
      return true;
  return false;
}

unsigned Module::depth(DomainId domain) const {
  unsigned depth = 0;
  for (DomainId current = domain; current < domains.size() && domains[current].parent != kNoDomain;
       current = domains[current].parent)
    ++depth;
  return depth;
}

std::string Module::domainName(DomainId domain) const {
  return domain < domains.size() ? domains[domain].name : "?";
}

} // namespace orch::ir
