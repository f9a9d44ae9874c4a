// The standard library's registration entry point.
#include "orch/stdlib/StandardOperators.h"

#include "io/FileIo.h"
#include "orch/stdlib/CoreOperators.h"

namespace orch::stdlib {

void registerStandardOperators(runtime::OperatorRegistry &registry) {
  registerCoreOperators(registry);
  registerFileSources(registry);
  registerFileSinks(registry);
}

} // namespace orch::stdlib
