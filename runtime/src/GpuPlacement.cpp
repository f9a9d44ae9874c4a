// Device assignment for GPU replicas (see GpuPlacement.h).
#include "orch/runtime/GpuPlacement.h"

#include <cmath>

namespace orch::runtime {

int64_t gpuDeviceForReplica(const std::vector<int64_t> &devices, double gpusPerReplica,
                            uint32_t ordinal) {
  if (devices.empty() || !(gpusPerReplica > 0))
    return -1;
  // The first device this replica occupies, counting the shares of the replicas before it.
  const double perReplica = gpusPerReplica >= 1 ? std::ceil(gpusPerReplica) : gpusPerReplica;
  const auto slot = static_cast<uint64_t>(std::floor(double(ordinal) * perReplica + 1e-9));
  return devices[slot % devices.size()];
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
