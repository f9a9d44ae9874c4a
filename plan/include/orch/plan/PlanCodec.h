// MessagePack encoding of plans. Encoding is deterministic (the same plan always gives the same
// bytes); decoding validates everything it reads and never trusts the input.
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

} // namespace orch::plan
