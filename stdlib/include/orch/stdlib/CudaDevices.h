// Discovery of CUDA devices. Always available: a build without CUDA reports zero devices.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace orch::stdlib {

struct CudaDeviceCount {
  int count = 0;
  /// Why there are none (built without CUDA, no driver, no device, or what failed); empty when
  /// count > 0.
  std::string reason;
  /// A CUDA stack is there but fails (a driver older than the runtime, any error other than
  /// "no device" or "no driver installed"): not a machine without a GPU (GpuBatching.h).
  bool broken = false;
  /// "CUDA driver 12.2, runtime 13.0" ("driver none" without one); empty without CUDA.
  std::string versions;
  /// Each device's memory in bytes (0 where it could not be read), for placing `gpu_memory`.
  std::vector<uint64_t> memoryBytes;
};

CudaDeviceCount countCudaDevices();

} // namespace orch::stdlib
