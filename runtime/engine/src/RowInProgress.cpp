// This thread's source row in progress (RowInProgress.h).
#include "orch/runtime/engine/RowInProgress.h"

namespace orch::runtime {

// Initial-exec: the signal handler reads it without the lazy allocation that dynamic TLS may do.
__attribute__((tls_model("initial-exec"))) thread_local RowInProgress currentRowInProgress;

} // namespace orch::runtime
