// The options a Call accepts (`{ batch: 8, replicas: 2 }`): their names, types and limits,
// declared once for the compiler's checks and the runtime's scheduling.
#pragma once

#include "orch/plan/StaticValue.h"
#include "orch/plan/Type.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace orch::plan {

enum class RecoveryPolicy { Abort, Retry, Isolate };

/// Which results of a Call the run journal keeps for a resumed run (`checkpoint`).
enum class CheckpointPolicy {
  /// None written: those below 64 KiB encoded (a page's text, not its image).
  SmallResults,
  /// `checkpoint: true`: every result, whatever its size.
  Always,
  /// `checkpoint: false`: none (an operator whose results must not be reused).
  Never
};

struct CallOptions {
  /// Maximum grains per batch.
  int64_t batch = 1;
  /// Operator instances (actors) running this Call; kAutomaticReplicas (none written): the
  /// runtime starts one and follows where the time goes (docs/runtime.md, "Replicas").
  int64_t replicas = kAutomaticReplicas;
  static constexpr int64_t kAutomaticReplicas = 0;
  double cpus = 1.0;
  /// GPUs per replica; fractions share a device.
  double gpus = 0.0;
  /// Memory per replica in bytes; 0 means no limit.
  int64_t memoryBytes = 0;
  /// GPU memory per replica in bytes (with `gpus`): its replicas go to devices with that much
  /// not promised to other replicas; 0: the shares alone decide.
  int64_t gpuMemoryBytes = 0;
  /// Retries of a failed batch before the recovery policy gives up.
  int64_t retries = 0;
  RecoveryPolicy recovery = RecoveryPolicy::Isolate;
  /// A batch running longer is stopped and narrowed down (docs/runtime.md). kAdaptiveTimeout
  /// (none written): the runtime's hang guard; kNoTimeout (`timeout: none`): never stopped.
  int64_t timeoutNanoseconds = kAdaptiveTimeout;
  static constexpr int64_t kAdaptiveTimeout = 0;
  static constexpr int64_t kNoTimeout = -1;
  /// Fail instead of falling back to the CPU implementation when no GPU is present.
  bool requireGpu = false;
  /// Which of this Call's results the run journal keeps, so that a resumed run does not run
  /// its finished grains again (docs/outputs.md).
  CheckpointPolicy checkpoint = CheckpointPolicy::SmallResults;
  /// Batches one replica has open at once: more than 1 only for operators that wait on a
  /// service (llm.*, docs/models.md), which take new batches as earlier ones complete.
  int64_t inFlight = 1;

  friend bool operator==(const CallOptions &, const CallOptions &) = default;
};

struct CallOptionSpec {
  std::string_view name;
  /// Int, Float (an Int is accepted), String, Bool, Duration or Size.
  TypeKind type;
  /// Smallest allowed numeric value, and whether the value must exceed it strictly.
  double minimum = 0;
  bool strictMinimum = false;
  /// For String options: the allowed values.
  std::vector<std::string_view> choices;
  std::string_view doc;
  /// `orchc --emit=plan-text` prints it even at its default value.
  bool alwaysShown = false;
  /// The option's value in `options`, as a program spells it (`recovery` as its name).
  StaticValue (*get)(const CallOptions &options) = nullptr;
  /// Sets it from a value of its type (an Int where a Float is expected is widened).
  void (*set)(CallOptions &options, const StaticValue &value) = nullptr;
  /// Sets it to `none` (`timeout: none`); null where the option has no such value.
  void (*setNone)(CallOptions &options) = nullptr;
  /// How plans print the option's value when none was written and the runtime decides
  /// ("auto" for `replicas`); null where the default is a value.
  const char *unsetText = nullptr;
  /// Whether `options` holds no value for it (the program wrote none and the runtime decides:
  /// plans store nil); null where the default is a value.
  bool (*isUnset)(const CallOptions &options) = nullptr;
};

/// How a program would spell the option's value in `options`, or its unsetText.
std::string callOptionText(const CallOptionSpec &spec, const CallOptions &options);

/// Every Call option, in the order the plan format stores them. The type checker, the plan
/// codec and the printers loop over this table: an option is declared here and nowhere else.
const std::vector<CallOptionSpec> &callOptionSpecs();
const CallOptionSpec *findCallOption(std::string_view name);
/// Whether `value` is allowed for `spec` (one of its choices, for a String option).
bool isCallOptionChoice(const CallOptionSpec &spec, const std::string &value);

const char *recoveryPolicyName(RecoveryPolicy policy);

} // namespace orch::plan
