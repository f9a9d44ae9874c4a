// Human-readable views of a plan: text (`orchc --emit=plan-text`) and Graphviz DOT with one
// cluster per domain, nested like the domain tree (`orchc --emit=dot`).
#pragma once

#include "orch/plan/Plan.h"

#include <ostream>

namespace orch::plan {

void printPlanText(const Plan &plan, std::ostream &out);
void printPlanDot(const Plan &plan, std::ostream &out);

} // namespace orch::plan
