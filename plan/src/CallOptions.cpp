// The table of Call options.
#include "orch/plan/CallOptions.h"

namespace orch::plan {

const std::vector<CallOptionSpec> &callOptionSpecs() {
  static const std::vector<CallOptionSpec> specs = {
      {"batch", TypeKind::Int, 1, false, {}, "maximum grains per batch (default 1)"},
      {"replicas", TypeKind::Int, 1, false, {}, "operator instances running this Call (default 1)"},
      {"cpus", TypeKind::Float, 0, true, {}, "CPU cores per replica (default 1)"},
      {"gpus", TypeKind::Float, 0, false, {}, "GPUs per replica, fractions allowed (default 0)"},
      {"memory", TypeKind::Size, 0, true, {}, "memory per replica (default: no limit)"},
      {"retries",
       TypeKind::Int,
       0,
       false,
       {},
       "immediate retries of a batch whose operator failed (default 0)"},
      {"recovery",
       TypeKind::String,
       0,
       false,
       {"abort", "retry", "isolate"},
       "what a batch error does after `retries` immediate retries: abort the run; retry = "
       "bisect the batch down to the grains that still fail; isolate = one deferred retry, "
       "then bisect (default \"isolate\")"},
      {"timeout", TypeKind::Duration, 0, true, {}, "longest a batch may run (default: none)"},
      {"require_gpu",
       TypeKind::Bool,
       0,
       false,
       {},
       "fail instead of using the CPU implementation when no GPU is present (default false)"},
  };
  return specs;
}

const CallOptionSpec *findCallOption(std::string_view name) {
  for (const CallOptionSpec &spec : callOptionSpecs())
    if (spec.name == name)
      return &spec;
  return nullptr;
}

} // namespace orch::plan
