// Stand-ins for the CUDA entry points in a build without nvcc: no devices, GPU calls refused.
#include "orch/stdlib/CudaDevices.h"
#include "orch/stdlib/CudaImageEngine.h"
#include "orch/stdlib/Grayscale.h"

namespace orch::stdlib {

namespace {
constexpr const char *kNoCuda = "Orch was built without CUDA (nvcc not found or ORCH_CUDA=OFF)";
}

CudaDeviceCount countCudaDevices() { return CudaDeviceCount{0, kNoCuda}; }

bool grayscaleRgb8OnGpu(const uint8_t *, size_t, uint8_t *, std::string &error) {
  error = kNoCuda;
  return false;
}

std::unique_ptr<CudaImageEngine> CudaImageEngine::create(int, std::string &error) {
  error = kNoCuda;
  return nullptr;
}

} // namespace orch::stdlib
