// CUDA RGB8 -> gray8, bit-identical to the CPU reference in image/Grayscale.cpp.
#include "orch/stdlib/Grayscale.h"

#include <cuda_runtime.h>

namespace orch::stdlib {
namespace {

__global__ void grayscaleKernel(const uint8_t *rgb, size_t pixelCount, uint8_t *gray) {
  size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= pixelCount)
    return;
  const uint8_t *pixel = rgb + 3 * i;
  gray[i] = uint8_t((77u * pixel[0] + 150u * pixel[1] + 29u * pixel[2] + 128u) >> 8);
}

bool check(cudaError_t status, const char *what, std::string &error) {
  if (status == cudaSuccess)
    return true;
  error = std::string(what) + ": " + cudaGetErrorString(status);
  return false;
}

} // namespace

bool grayscaleRgb8OnGpu(const uint8_t *rgb, size_t pixelCount, uint8_t *gray, std::string &error) {
  if (pixelCount == 0)
    return true;
  uint8_t *deviceRgb = nullptr;
  uint8_t *deviceGray = nullptr;
  bool ok = check(cudaMalloc(&deviceRgb, 3 * pixelCount), "cudaMalloc", error) &&
            check(cudaMalloc(&deviceGray, pixelCount), "cudaMalloc", error) &&
            check(cudaMemcpy(deviceRgb, rgb, 3 * pixelCount, cudaMemcpyHostToDevice),
                  "copy to device", error);
  if (ok) {
    constexpr unsigned kThreads = 256;
    unsigned blocks = unsigned((pixelCount + kThreads - 1) / kThreads);
    grayscaleKernel<<<blocks, kThreads>>>(deviceRgb, pixelCount, deviceGray);
    ok = check(cudaGetLastError(), "kernel launch", error) &&
         check(cudaMemcpy(gray, deviceGray, pixelCount, cudaMemcpyDeviceToHost), "copy to host",
               error);
  }
  cudaFree(deviceRgb);
  cudaFree(deviceGray);
  return ok;
}

} // namespace orch::stdlib
