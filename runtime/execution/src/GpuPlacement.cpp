// Device assignment for GPU replicas (see GpuPlacement.h).
#include "orch/runtime/execution/GpuPlacement.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace orch::runtime {

namespace {
/// Shares are sums of decimal fractions (0.1 + 0.2 ...): compare with a little slack.
constexpr double kSlack = 1e-9;
} // namespace

bool GpuPlacer::memoryFits(size_t device, uint64_t memoryBytes) const {
  return memoryBytes == 0 || memory_[device] == 0 ||
         (memoryPromised_[device] <= memory_[device] &&
          memoryBytes <= memory_[device] - memoryPromised_[device]);
}

int64_t GpuPlacer::take(std::vector<size_t> devices, double share, double gpus,
                        uint64_t memoryBytes) {
  for (size_t d : devices) {
    load_[d] += share;
    memoryPromised_[d] = memoryBytes > UINT64_MAX - memoryPromised_[d]
                             ? UINT64_MAX
                             : memoryPromised_[d] + memoryBytes;
  }
  const int64_t first = devices_[devices.front()];
  reservations_.push_back(Reservation{gpus, memoryBytes, share, std::move(devices)});
  return first;
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
    if (empty.size() == wanted)
      return take(std::move(empty), 1, gpus, memoryBytes);
  } else {
    for (size_t d = 0; d < devices_.size(); ++d)
      if (load_[d] + gpus <= 1 + kSlack && memoryFits(d, memoryBytes))
        return take({d}, gpus, gpus, memoryBytes);
  }
  // No device has room: the least loaded one whose memory holds it, else the one with the most
  // memory left (an unknown memory counts as room).
  size_t chosen = devices_.size();
  for (size_t d = 0; d < devices_.size(); ++d)
    if (memoryFits(d, memoryBytes) && (chosen == devices_.size() || load_[d] < load_[chosen]))
      chosen = d;
  if (chosen == devices_.size()) {
    auto left = [&](size_t d) {
      return memoryPromised_[d] >= memory_[d] ? 0 : memory_[d] - memoryPromised_[d];
    };
    chosen = 0;
    for (size_t d = 1; d < devices_.size(); ++d)
      if (left(d) > left(chosen))
        chosen = d;
  }
  return take({chosen}, std::min(gpus, 1.0), gpus, memoryBytes);
}

void GpuPlacer::release(int64_t device, double gpus, uint64_t memoryBytes) {
  for (auto it = reservations_.begin(); it != reservations_.end(); ++it) {
    if (devices_[it->devices.front()] != device || it->gpus != gpus ||
        it->memoryBytes != memoryBytes)
      continue;
    for (size_t d : it->devices) {
      load_[d] = std::max(0.0, load_[d] - it->share);
      memoryPromised_[d] -= std::min(memoryPromised_[d], it->memoryBytes);
    }
    reservations_.erase(it);
    return;
  }
}

uint64_t gpuMemoryPerReplica(double gpus, int64_t gpuMemoryBytes) {
  if (!(gpus > 0) || gpuMemoryBytes <= 0)
    return 0;
  const uint64_t devices = uint64_t(std::max(1.0, std::ceil(gpus - kSlack)));
  const uint64_t perDevice = uint64_t(gpuMemoryBytes);
  return perDevice > UINT64_MAX / devices ? UINT64_MAX : perDevice * devices;
}

uint64_t knownGpuMemory(const std::vector<uint64_t> &memory, size_t devices) {
  if (devices == 0 || memory.size() != devices)
    return 0;
  uint64_t total = 0;
  for (uint64_t bytes : memory) {
    if (bytes == 0)
      return 0;
    total = bytes > UINT64_MAX - total ? UINT64_MAX : total + bytes;
  }
  return total;
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
