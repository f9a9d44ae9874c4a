// Device assignment for GPU replicas (see GpuPlacement.h).
#include "orch/runtime/execution/GpuPlacement.h"

#include <algorithm>
#include <cmath>

namespace orch::runtime {

namespace {
/// Shares are sums of decimal fractions (0.1 + 0.2 ...): compare with a little slack.
constexpr double kSlack = 1e-9;
} // namespace

bool GpuPlacer::memoryFits(size_t device, uint64_t memoryBytes) const {
  return memoryBytes == 0 || memory_[device] == 0 ||
         memoryPromised_[device] + memoryBytes <= memory_[device];
}

void GpuPlacer::take(size_t device, double share, uint64_t memoryBytes) {
  load_[device] += share;
  memoryPromised_[device] += memoryBytes;
}

int64_t GpuPlacer::place(double gpus, uint64_t memoryBytes) {
  if (devices_.empty() || !(gpus > 0))
    return -1;
  if (gpus >= 1 - kSlack) {
    const size_t wanted = std::min(devices_.size(), size_t(std::ceil(gpus - kSlack)));
    std::vector<size_t> empty;
    for (size_t d = 0; d < devices_.size() && empty.size() < wanted; ++d)
      if (load_[d] <= kSlack && memoryFits(d, memoryBytes))
        empty.push_back(d);
    if (empty.size() == wanted) {
      for (size_t d : empty)
        take(d, 1, d == empty.front() ? memoryBytes : 0);
      return devices_[empty.front()];
    }
  } else {
    for (size_t d = 0; d < devices_.size(); ++d)
      if (load_[d] + gpus <= 1 + kSlack && memoryFits(d, memoryBytes)) {
        take(d, gpus, memoryBytes);
        return devices_[d];
      }
  }
  // No device has room: the least loaded one whose memory holds it, else the one with the most
  // memory left (an unknown memory counts as room).
  size_t chosen = devices_.size();
  for (size_t d = 0; d < devices_.size(); ++d)
    if (memoryFits(d, memoryBytes) && (chosen == devices_.size() || load_[d] < load_[chosen]))
      chosen = d;
  if (chosen == devices_.size()) {
    auto left = [&](size_t d) { return int64_t(memory_[d]) - int64_t(memoryPromised_[d]); };
    chosen = 0;
    for (size_t d = 1; d < devices_.size(); ++d)
      if (left(d) > left(chosen))
        chosen = d;
  }
  take(chosen, std::min(gpus, 1.0), memoryBytes);
  return devices_[chosen];
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
