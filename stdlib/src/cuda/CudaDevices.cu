// CUDA device discovery. On a machine without a GPU the runtime reports "no device" (100) or,
// with no driver installed at all, "insufficient driver" (35) with driver version 0: both mean
// "no GPU here". Any other failure (35 with a driver: one older than the runtime) is a broken
// GPU stack, reported as such with the versions (GpuBatching.h, classifyCudaError).
#include "orch/stdlib/CudaDevices.h"
#include "orch/stdlib/GpuBatching.h"

#include <cuda_runtime.h>

namespace orch::stdlib {

CudaDeviceCount countCudaDevices() {
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  CudaDeviceCount devices;
  devices.versions =
      "CUDA driver " + cudaVersionText(driver) + ", runtime " + cudaVersionText(runtime);
  cudaError_t status = cudaGetDeviceCount(&devices.count);
  if (status != cudaSuccess) {
    const CudaErrorClass kind = classifyCudaError(int(status), driver);
    devices.count = 0;
    devices.broken = kind != CudaErrorClass::Absent;
    devices.reason =
        std::string(devices.broken ? "the GPU cannot be used: " : "no usable CUDA device: ") +
        cudaGetErrorString(status) + " (error " + std::to_string(int(status)) + "; " +
        devices.versions + ")";
    cudaGetLastError(); // clear the error state for later callers
    return devices;
  }
  if (devices.count == 0)
    devices.reason = "no CUDA device present";
  for (int device = 0; device < devices.count; ++device) {
    cudaDeviceProp properties{};
    devices.memoryBytes.push_back(cudaGetDeviceProperties(&properties, device) == cudaSuccess
                                      ? properties.totalGlobalMem
                                      : 0);
  }
  cudaGetLastError();
  return devices;
}

} // namespace orch::stdlib
