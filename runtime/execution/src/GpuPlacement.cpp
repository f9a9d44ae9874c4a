// Device assignment for GPU replicas (see GpuPlacement.h).
#include "orch/runtime/execution/GpuPlacement.h"

#include <algorithm>
#include <cmath>

namespace orch::runtime {

namespace {
/// Shares are sums of decimal fractions (0.1 + 0.2 ...): compare with a little slack.
constexpr double kSlack = 1e-9;
} // namespace

int64_t GpuPlacer::place(double gpus) {
  if (devices_.empty() || !(gpus > 0))
    return -1;
  if (gpus >= 1 - kSlack) {
    const size_t wanted = std::min(devices_.size(), size_t(std::ceil(gpus - kSlack)));
    std::vector<size_t> empty;
    for (size_t d = 0; d < devices_.size() && empty.size() < wanted; ++d)
      if (load_[d] <= kSlack)
        empty.push_back(d);
    if (empty.size() == wanted) {
      for (size_t d : empty)
        load_[d] = 1;
      return devices_[empty.front()];
    }
  } else {
    for (size_t d = 0; d < devices_.size(); ++d)
      if (load_[d] + gpus <= 1 + kSlack) {
        load_[d] += gpus;
        return devices_[d];
      }
  }
  // Every device is taken: share the least loaded one.
  const size_t least = size_t(std::min_element(load_.begin(), load_.end()) - load_.begin());
  load_[least] += std::min(gpus, 1.0);
  return devices_[least];
}

std::vector<int64_t> devicesOfLocalWorker(int64_t deviceCount, unsigned worker, unsigned workers) {
  std::vector<int64_t> devices;
  if (workers == 0)
    return devices;
  for (int64_t device = worker % workers; device < deviceCount; device += workers)
    devices.push_back(device);
  return devices;
}

} // namespace orch::runtime
