// Discovery of CUDA devices. Always available: a build without CUDA reports zero devices.
#pragma once

#include <string>

namespace orch::stdlib {

struct CudaDeviceCount {
  int count = 0;
  /// Why there are none (built without CUDA, no driver, no device); empty when count > 0.
  std::string reason;
};

CudaDeviceCount countCudaDevices();

} // namespace orch::stdlib
