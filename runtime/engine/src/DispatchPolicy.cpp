// The order between Calls that every policy shares unless it says otherwise, and the choice of
// policy from the engine's options.
#include "DispatchPolicy.h"

#include "orch/runtime/engine/LineageEngine.h"

namespace orch::runtime {

bool DispatchPolicy::before(const CallCandidate &a, const CallCandidate &b) const {
  if (a.rank != b.rank)
    return a.rank < b.rank;
  if (a.lane != b.lane)
    return a.lane < b.lane;
  if (a.admission != b.admission)
    return a.admission < b.admission;
  return a.call.index > b.call.index;
}

std::unique_ptr<DispatchPolicy> makeDispatchPolicy(const EngineOptions &options) {
  if (options.batching == BatchingScope::ParentBound)
    return makeParentBoundPolicy();
  if (options.readyOrder == ReadyOrder::Unordered)
    return makeUnorderedPolicy();
  if (options.probeFirst)
    return makeProbeFirstPolicy();
  return makeFifoPolicy();
}

const char *dispatchPolicyName(const EngineOptions &options) {
  return makeDispatchPolicy(options)->name();
}

} // namespace orch::runtime
