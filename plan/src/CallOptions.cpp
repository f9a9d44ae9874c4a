// The table of Call options: each option's name, type, limits, documentation, and how it is
// read from and written into CallOptions.
#include "orch/plan/CallOptions.h"

#include <algorithm>

namespace orch::plan {
namespace {

double widened(const StaticValue &value) {
  if (auto *integer = std::get_if<int64_t>(&value))
    return double(*integer);
  return std::get<double>(value);
}

} // namespace

const char *recoveryPolicyName(RecoveryPolicy policy) {
  switch (policy) {
  case RecoveryPolicy::Abort:
    return "abort";
  case RecoveryPolicy::Retry:
    return "retry";
  case RecoveryPolicy::Isolate:
    break;
  }
  return "isolate";
}

const std::vector<CallOptionSpec> &callOptionSpecs() {
  static const std::vector<CallOptionSpec> specs = {
      {"batch",
       TypeKind::Int,
       1,
       false,
       {},
       "maximum grains per batch (default 1)",
       true,
       [](const CallOptions &o) -> StaticValue { return o.batch; },
       [](CallOptions &o, const StaticValue &v) { o.batch = std::get<int64_t>(v); }},
      {"replicas",
       TypeKind::Int,
       1,
       false,
       {},
       "operator instances running this Call (default: automatic, one to start with and more "
       "while it is the bottleneck and cores are idle)",
       true,
       [](const CallOptions &o) -> StaticValue { return o.replicas; },
       [](CallOptions &o, const StaticValue &v) { o.replicas = std::get<int64_t>(v); },
       nullptr,
       "auto",
       [](const CallOptions &o) { return o.replicas == CallOptions::kAutomaticReplicas; }},
      {"cpus",
       TypeKind::Float,
       0,
       true,
       {},
       "CPU cores per replica (default 1)",
       true,
       [](const CallOptions &o) -> StaticValue { return o.cpus; },
       [](CallOptions &o, const StaticValue &v) { o.cpus = widened(v); }},
      {"gpus",
       TypeKind::Float,
       0,
       false,
       {},
       "GPUs per replica, fractions allowed (default 0)",
       false,
       [](const CallOptions &o) -> StaticValue { return o.gpus; },
       [](CallOptions &o, const StaticValue &v) { o.gpus = widened(v); }},
      {"memory",
       TypeKind::Size,
       0,
       true,
       {},
       "memory per replica (default: no limit)",
       false,
       [](const CallOptions &o) -> StaticValue { return ByteSize{o.memoryBytes}; },
       [](CallOptions &o, const StaticValue &v) { o.memoryBytes = std::get<ByteSize>(v).bytes; }},
      {"gpu_memory",
       TypeKind::Size,
       0,
       true,
       {},
       "GPU memory per replica: its replicas go to devices (and workers) with that much not "
       "promised to other replicas (default: no figure, the `gpus` shares alone decide)",
       false,
       [](const CallOptions &o) -> StaticValue { return ByteSize{o.gpuMemoryBytes}; },
       [](CallOptions &o, const StaticValue &v) {
         o.gpuMemoryBytes = std::get<ByteSize>(v).bytes;
       }},
      {"retries",
       TypeKind::Int,
       0,
       false,
       {},
       "immediate retries of a batch whose operator failed (default 0)",
       true,
       [](const CallOptions &o) -> StaticValue { return o.retries; },
       [](CallOptions &o, const StaticValue &v) { o.retries = std::get<int64_t>(v); }},
      {"recovery",
       TypeKind::String,
       0,
       false,
       {"abort", "retry", "isolate"},
       "what a batch error does after `retries` immediate retries: abort the run; retry = "
       "bisect the batch down to the grains that still fail; isolate = one deferred retry, "
       "then bisect (default \"isolate\")",
       true,
       [](const CallOptions &o) -> StaticValue {
         return std::string(recoveryPolicyName(o.recovery));
       },
       [](CallOptions &o, const StaticValue &v) {
         const std::string &name = std::get<std::string>(v);
         o.recovery = name == "abort"   ? RecoveryPolicy::Abort
                      : name == "retry" ? RecoveryPolicy::Retry
                                        : RecoveryPolicy::Isolate;
       }},
      {"timeout",
       TypeKind::Duration,
       0,
       true,
       {},
       "longest a batch may run; `none`: no limit (default: the runtime's hang guard, a "
       "multiple of the slowest item seen with a floor)",
       false,
       [](const CallOptions &o) -> StaticValue { return Duration{o.timeoutNanoseconds}; },
       [](CallOptions &o, const StaticValue &v) {
         o.timeoutNanoseconds = std::get<Duration>(v).nanoseconds;
       },
       [](CallOptions &o) { o.timeoutNanoseconds = CallOptions::kNoTimeout; }},
      {"require_gpu",
       TypeKind::Bool,
       0,
       false,
       {},
       "fail instead of using the CPU implementation when no GPU is present (default false)",
       false,
       [](const CallOptions &o) -> StaticValue { return o.requireGpu; },
       [](CallOptions &o, const StaticValue &v) { o.requireGpu = std::get<bool>(v); }},
      {"checkpoint",
       TypeKind::Bool,
       0,
       false,
       {},
       "keep the results in the run journal, so that a resumed run does not run the grains "
       "that finished again: true keeps every result, false none (for an operator whose "
       "results must not be reused; default: those below 64 KiB of batches that took at "
       "least 10 us per grain)",
       false,
       [](const CallOptions &o) -> StaticValue { return o.checkpoint != CheckpointPolicy::Never; },
       [](CallOptions &o, const StaticValue &v) {
         o.checkpoint = std::get<bool>(v) ? CheckpointPolicy::Always : CheckpointPolicy::Never;
       },
       nullptr,
       "small",
       [](const CallOptions &o) { return o.checkpoint == CheckpointPolicy::SmallResults; }},
      {"in_flight",
       TypeKind::Int,
       1,
       false,
       {},
       "batches one replica keeps open at once, each taken from the Call's ready queue as an "
       "earlier one completes; only operators that wait on a service (llm.chat, llm.embed: "
       "requests to a model server) accept it (default: the operator's, 16 for llm.*)",
       false,
       [](const CallOptions &o) -> StaticValue { return o.inFlight; },
       [](CallOptions &o, const StaticValue &v) { o.inFlight = std::get<int64_t>(v); }},
  };
  return specs;
}

std::string callOptionText(const CallOptionSpec &spec, const CallOptions &options) {
  if (spec.isUnset && spec.isUnset(options))
    return spec.unsetText;
  const StaticValue value = spec.get(options);
  if (auto *text = std::get_if<std::string>(&value))
    return *text;
  if (auto *duration = std::get_if<Duration>(&value); duration && duration->nanoseconds < 0)
    return "none";
  if (auto *flag = std::get_if<bool>(&value))
    return *flag ? "true" : "false";
  return formatStaticValue(value);
}

const CallOptionSpec *findCallOption(std::string_view name) {
  for (const CallOptionSpec &spec : callOptionSpecs())
    if (spec.name == name)
      return &spec;
  return nullptr;
}

bool isCallOptionChoice(const CallOptionSpec &spec, const std::string &value) {
  return spec.choices.empty() ||
         std::find(spec.choices.begin(), spec.choices.end(), value) != spec.choices.end();
}

} // namespace orch::plan
