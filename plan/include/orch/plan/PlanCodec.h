// MessagePack encoding of plans. Encoding is deterministic (the same plan always gives the same
// bytes) and leaves source positions out (PlanPositions.h); decoding validates everything it
// reads and never trusts the input: a plan that decodes has passed validatePlan.
#pragma once

#include "orch/plan/Plan.h"

#include <string>
#include <string_view>
#include <variant>

namespace orch::plan {

struct PlanDecodeError {
  std::string message;
};

std::string encodePlan(const Plan &plan);

std::variant<Plan, PlanDecodeError> decodePlan(std::string_view bytes);

/// Reads and decodes a .plan file, with its source positions where the file beside it holds
/// them (PlanPositions.h); errors name the file.
std::variant<Plan, PlanDecodeError> loadPlanFile(const std::string &path);

} // namespace orch::plan
