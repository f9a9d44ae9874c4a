// Batched image kernels on one CUDA device, for one operator replica. Each call runs a whole
// batch as one launch sequence: the batch is cut into chunks over kStagingSlots streams
// (GpuStaging.h), and while one chunk is on the device, several host threads copy the next
// chunk's images into pinned staging and the previous chunk's results out of it. Staging and
// device buffers grow to the largest batch seen and are reused (no allocation per batch in
// steady state). Results equal the CPU references in
// ImageKernels.h. Without CUDA (or a device) `create` says why and returns null.
// C++17: nvcc compiles the implementation against this header.
#pragma once

#include "orch/stdlib/ImageKernels.h"

#include <functional>
#include <memory>
#include <string>

namespace orch::stdlib {

/// Where the time of the last batch went (milliseconds of GPU time, summed over chunks).
struct GpuBatchTiming {
  double copyToDeviceMs = 0;
  double kernelMs = 0;
  double copyToHostMs = 0;
  /// From the first copy to the last result on the host, overlaps included.
  double wallMs = 0;
  size_t bytesToDevice = 0;
  size_t bytesToHost = 0;
  size_t chunks = 0;
};

class CudaImageEngine {
public:
  /// An engine on device `device` with its own streams and buffers; null (and `error`) when
  /// CUDA is not built in or the device cannot be used.
  static std::unique_ptr<CudaImageEngine> create(int device, std::string &error);
  virtual ~CudaImageEngine() = default;

  int device() const { return device_; }

  /// Each call returns false with `error` when a CUDA call fails; the outputs are then
  /// unspecified and the caller falls back to the CPU.
  /// outputs[i]: width*height gray bytes of images[i].
  virtual bool grayscale(const ImageView *images, size_t count, uint8_t *const *outputs,
                         std::string &error) = 0;
  virtual bool laplacianSums(const ImageView *images, size_t count, LaplacianSums *outputs,
                             std::string &error) = 0;
  /// outputs[i]: width*height*channels bytes.
  virtual bool resize(const ImageView *images, size_t count, int64_t width, int64_t height,
                      uint8_t *const *outputs, std::string &error) = 0;
  /// outputs[i]: channels*height*width floats (CHW).
  virtual bool resizeNormalize(const ImageView *images, size_t count, int64_t width, int64_t height,
                               float *const *outputs, std::string &error) = 0;
  /// outputs[i]: the 64 DCT coefficients of phashCoefficients.
  virtual bool phashCoefficients(const ImageView *images, size_t count, double (*outputs)[64],
                                 std::string &error) = 0;
  /// outputs[i] = grayDifferenceSum(first[i], second[i]); pairs may share frames.
  virtual bool grayDifferenceSums(const ImageView *first, const ImageView *second, size_t pairs,
                                  uint64_t *outputs, std::string &error) = 0;

  const GpuBatchTiming &lastTiming() const { return timing_; }
  /// The CUDA error code of the last call that returned false (see classifyCudaError).
  int lastError() const { return lastError_; }

protected:
  explicit CudaImageEngine(int device) : device_(device) {}
  int device_;
  GpuBatchTiming timing_;
  int lastError_ = 0;
};

using CudaImageEngineFactory =
    std::function<std::unique_ptr<CudaImageEngine>(int device, std::string &error)>;

/// An engine from the current factory: CudaImageEngine::create, unless a test replaced it.
std::unique_ptr<CudaImageEngine> makeCudaImageEngine(int device, std::string &error);
/// Tests only: engines come from `factory` (for example one that fails mid-batch) until it is
/// reset with an empty function. Not to be called while operators run.
void setCudaImageEngineFactoryForTesting(CudaImageEngineFactory factory);

} // namespace orch::stdlib
