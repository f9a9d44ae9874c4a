// CUDA device discovery. On machines without a GPU the runtime reports an error (35, or 100),
// which means "no device", not a failure.
#include "orch/stdlib/CudaDevices.h"

#include <cuda_runtime.h>

namespace orch::stdlib {

CudaDeviceCount countCudaDevices() {
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    std::string reason = std::string("no usable CUDA device: ") + cudaGetErrorString(status) +
                         " (error " + std::to_string(int(status)) + ")";
    cudaGetLastError(); // clear the sticky error state for later callers
    return CudaDeviceCount{0, reason};
  }
  if (count == 0)
    return CudaDeviceCount{0, "no CUDA device present"};
  return CudaDeviceCount{count, ""};
}

} // namespace orch::stdlib
