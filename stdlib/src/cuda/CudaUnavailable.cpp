// Stand-ins for the CUDA entry points in a build without nvcc: no devices, GPU calls refused.
#include "orch/stdlib/CudaDevices.h"
#include "orch/stdlib/CudaImageEngine.h"

namespace orch::stdlib {

namespace {
constexpr const char *kNoCuda = "Orch was built without CUDA (nvcc not found or ORCH_CUDA=OFF)";
}

CudaDeviceCount countCudaDevices() { return CudaDeviceCount{0, kNoCuda, false, "", {}}; }

std::unique_ptr<CudaImageEngine> CudaImageEngine::create(int, std::string &error) {
  error = kNoCuda;
  return nullptr;
}

} // namespace orch::stdlib
