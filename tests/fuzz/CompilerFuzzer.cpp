// libFuzzer entry point: arbitrary bytes through the whole compiler (parse, resolve, check,
// IR, passes, plan) and, when a plan comes out, through the codec and back. Built by
// `make fuzz` with clang, -fsanitize=fuzzer,address.
#include "orch/driver/CompileDriver.h"
#include "orch/plan/PlanCodec.h"

#include "llvm/Support/SourceMgr.h"

#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::SourceMgr sources;
  bool reportedError = false;
  bool errorWithoutLocation = false;
  orch::DiagnosticEngine diags([&](const orch::Diagnostic &diagnostic) {
    reportedError |= diagnostic.severity == orch::DiagnosticSeverity::Error;
    errorWithoutLocation |= !diagnostic.location.isKnown();
  });
  const std::optional<orch::plan::Plan> plan =
      orch::driver::compileText(sources, std::string(reinterpret_cast<const char *>(data), size),
                                "fuzz.orch", diags)
          .plan;
  // A rejection must say why, and where.
  if ((!plan && !reportedError) || errorWithoutLocation)
    std::abort();
  // A compiled plan must survive its own codec exactly.
  if (plan) {
    std::string bytes = orch::plan::encodePlan(*plan);
    auto decoded = orch::plan::decodePlan(bytes);
    if (!std::holds_alternative<orch::plan::Plan>(decoded) ||
        std::get<orch::plan::Plan>(decoded) != *plan)
      std::abort();
  }
  return 0;
}
