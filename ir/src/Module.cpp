// Domain-tree queries of the IR module.
#include "orch/ir/Module.h"

namespace orch::ir {

const char *opKindName(OpKind kind) {
  switch (kind) {
  case OpKind::Source:
    return "source";
  case OpKind::Constant:
    return "constant";
  case OpKind::Invoke:
    return "invoke";
  case OpKind::Expand:
    return "expand";
  case OpKind::Reduce:
    return "reduce";
  case OpKind::Filter:
    return "filter";
  case OpKind::Broadcast:
    return "broadcast";
  case OpKind::Project:
    return "project";
  case OpKind::Record:
    return "record";
  }
  return "?";
}

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
