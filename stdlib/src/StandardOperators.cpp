// The standard library's registration entry point.
#include "orch/stdlib/StandardOperators.h"

#include "OperatorGroups.h"
#include "orch/stdlib/CoreOperators.h"

namespace orch::stdlib {

void registerStandardOperators(runtime::OperatorRegistry &registry) {
  registerCoreOperators(registry);
  registerTextNormalize(registry);
  registerFileSources(registry);
  registerFileSinks(registry);
  registerWebDataset(registry);
  registerImageOperators(registry);
  registerImageEncodeOperator(registry);
  registerImageDecodeOperator(registry);
  registerLlmOperators(registry);
  registerFileOperator(registry);
  registerPdfOperators(registry);
  registerOcrOperator(registry);
  registerVideoOperators(registry);
}

} // namespace orch::stdlib
