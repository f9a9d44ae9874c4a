// Loads and prints a plan; a plan that fails validation is reported, never half-printed.
#include "InspectCommand.h"

#include "orch/plan/PlanCodec.h"
#include "orch/plan/PlanPrinters.h"

#include <iostream>

namespace orch {

int runInspect(const std::string &planPath) {
  auto loaded = plan::loadPlanFile(planPath);
  if (auto *error = std::get_if<plan::PlanDecodeError>(&loaded)) {
    std::cerr << "orch: error: " << error->message << "\n";
    return 1;
  }
  plan::printPlanText(std::get<plan::Plan>(loaded), std::cout);
  return 0;
}

} // namespace orch
