// The engine behind the GPU image operators: per replica, kStagingSlots streams with their events
// and grow-only pinned staging and device buffers. A batch is cut into chunks (GpuBatching.h: at
// most kGpuChunkBytes of input and of output, at most kGpuChunkItems images); chunk k runs on
// stream k % kStagingSlots, and while it is on the device the staging copier's threads pack
// chunk k+1 and unpack chunk k-1 (runStagedChunks in GpuStaging.h).
#include "orch/stdlib/CudaImageEngine.h"
#include "orch/stdlib/GpuBatching.h"
#include "orch/stdlib/GpuStaging.h"

#include "ImageKernelLaunch.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <unordered_map>
#include <vector>

namespace orch::stdlib {
namespace {

using cuda::ImageDescriptor;

constexpr size_t kAlignment = 256;

size_t aligned(size_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }

/// The code of the last failed CUDA call on this thread (for CudaImageEngine::lastError).
thread_local int lastFailure = 0;

bool check(cudaError_t status, const char *what, std::string &error) {
  if (status == cudaSuccess)
    return true;
  error = std::string(what) + ": " + cudaGetErrorString(status) + " (error " +
          std::to_string(int(status)) + ")";
  lastFailure = int(status);
  cudaGetLastError(); // clear a non-sticky error
  return false;
}

/// Pinned host memory (Pinned) or device memory, reallocated only to grow.
template <bool Pinned> class Buffer {
public:
  Buffer() = default;
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;
  ~Buffer() { release(); }

  bool reserve(size_t bytes, std::string &error) {
    if (bytes <= capacity_)
      return true;
    // Read before release() forgets it: the buffer at least doubles.
    const size_t capacity = grownCapacity(capacity_, bytes);
    release();
    cudaError_t status = Pinned ? cudaHostAlloc(&data_, capacity, cudaHostAllocDefault)
                                : cudaMalloc(&data_, capacity);
    if (!check(status, Pinned ? "cudaHostAlloc" : "cudaMalloc", error)) {
      data_ = nullptr;
      return false;
    }
    capacity_ = capacity;
    return true;
  }
  unsigned char *bytes() const { return static_cast<unsigned char *>(data_); }

private:
  void release() {
    if (data_)
      Pinned ? cudaFreeHost(data_) : cudaFree(data_);
    data_ = nullptr;
    capacity_ = 0;
  }
  void *data_ = nullptr;
  size_t capacity_ = 0;
};

/// One staging slot: a stream with its events, pinned host and device buffers.
struct Slot {
  cudaStream_t stream = nullptr;
  cudaEvent_t started = nullptr, copiedIn = nullptr, computed = nullptr, copiedOut = nullptr;
  Buffer<true> hostIn, hostOut;
  Buffer<false> deviceIn, deviceOut;
};

/// Queues one chunk's kernels on a stream: its items [first, first+count), their descriptors
/// and pixels on the device, and where their results go.
using ChunkLaunch =
    std::function<void(cudaStream_t, size_t first, size_t count, const ImageDescriptor *,
                       const unsigned char *pixels, unsigned char *out)>;

size_t descriptorBytes(size_t count) { return aligned(count * sizeof(ImageDescriptor)); }

/// The engine's slots as a ChunkDevice for one operation: a chunk is copied in, launched and
/// copied out on its slot's stream, and its GPU times are added to the batch's when waited for.
class CudaChunks : public ChunkDevice {
public:
  CudaChunks(Slot *slots, cudaEvent_t batchStarted, GpuBatchTiming &timing, ChunkLaunch launch)
      : slots_(slots), batchStarted_(batchStarted), timing_(timing), launch_(std::move(launch)) {}

  bool reserve(size_t slot, size_t inputBytes, size_t outputBytes, std::string &error) override {
    Slot &s = slots_[slot];
    return s.hostIn.reserve(inputBytes, error) && s.deviceIn.reserve(inputBytes, error) &&
           s.hostOut.reserve(outputBytes, error) && s.deviceOut.reserve(outputBytes, error);
  }
  unsigned char *hostInput(size_t slot) override { return slots_[slot].hostIn.bytes(); }
  const unsigned char *hostOutput(size_t slot) override { return slots_[slot].hostOut.bytes(); }

  bool submit(size_t slot, size_t first, size_t count, size_t inputBytes, size_t outputBytes,
              std::string &error) override {
    Slot &s = slots_[slot];
    if (timing_.chunks == 0 &&
        !check(cudaEventRecord(batchStarted_, s.stream), "event record", error))
      return false;
    if (!check(cudaEventRecord(s.started, s.stream), "event record", error) ||
        !check(cudaMemcpyAsync(s.deviceIn.bytes(), s.hostIn.bytes(), inputBytes,
                               cudaMemcpyHostToDevice, s.stream),
               "copy to device", error) ||
        !check(cudaEventRecord(s.copiedIn, s.stream), "event record", error))
      return false;
    launch_(s.stream, first, count, reinterpret_cast<const ImageDescriptor *>(s.deviceIn.bytes()),
            s.deviceIn.bytes() + descriptorBytes(count), s.deviceOut.bytes());
    if (!check(cudaGetLastError(), "kernel launch", error) ||
        !check(cudaEventRecord(s.computed, s.stream), "event record", error) ||
        !check(cudaMemcpyAsync(s.hostOut.bytes(), s.deviceOut.bytes(), outputBytes,
                               cudaMemcpyDeviceToHost, s.stream),
               "copy to host", error) ||
        !check(cudaEventRecord(s.copiedOut, s.stream), "event record", error))
      return false;
    timing_.bytesToDevice += inputBytes;
    timing_.bytesToHost += outputBytes;
    ++timing_.chunks;
    return true;
  }

  /// Chunks are waited for in the order they were queued (runStagedChunks).
  bool wait(size_t slot, std::string &error) override {
    Slot &s = slots_[slot];
    if (!check(cudaStreamSynchronize(s.stream), "batch", error))
      return false;
    float started = 0, copiedIn = 0, computed = 0, copiedOut = 0;
    if (since(s.started, started) && since(s.copiedIn, copiedIn) && since(s.computed, computed) &&
        since(s.copiedOut, copiedOut)) {
      // The copies in, the kernels and the copies out each take one chunk at a time, in
      // order: a chunk's part starts once the chunk reached it and the chunk before finished
      // that part, so time spent queued behind another chunk is not counted (the sums stay
      // what the device was busy with, not more).
      timing_.copyToDeviceMs += std::max(0.0f, copiedIn - std::max(started, lastCopiedIn_));
      timing_.kernelMs += std::max(0.0f, computed - std::max(copiedIn, lastComputed_));
      timing_.copyToHostMs += std::max(0.0f, copiedOut - std::max(computed, lastCopiedOut_));
      lastCopiedIn_ = copiedIn;
      lastComputed_ = computed;
      lastCopiedOut_ = copiedOut;
    }
    return true;
  }

private:
  /// Milliseconds from the batch's first submit to `event`.
  bool since(cudaEvent_t event, float &milliseconds) const {
    return cudaEventElapsedTime(&milliseconds, batchStarted_, event) == cudaSuccess;
  }

  Slot *slots_;
  cudaEvent_t batchStarted_;
  GpuBatchTiming &timing_;
  ChunkLaunch launch_;
  float lastCopiedIn_ = 0, lastComputed_ = 0, lastCopiedOut_ = 0;
};

/// Results of `size(image)` bytes each, laid end to end from `out`, copied to outputs[i].
template <typename Output, typename Size>
void copyOut(const ImageView *images, Output *const *outputs, Size size, size_t first, size_t n,
             const unsigned char *out, std::vector<StagingCopy> &copies) {
  for (size_t i = first; i < first + n; ++i) {
    copies.push_back(StagingCopy{out, outputs[i], size(images[i])});
    out += size(images[i]);
  }
}

class CudaImageEngineImpl : public CudaImageEngine {
public:
  explicit CudaImageEngineImpl(int device) : CudaImageEngine(device) {}

  ~CudaImageEngineImpl() override {
    cudaSetDevice(device_);
    for (Slot &slot : slots_) {
      if (slot.stream)
        cudaStreamSynchronize(slot.stream);
      for (cudaEvent_t event : {slot.started, slot.copiedIn, slot.computed, slot.copiedOut})
        if (event)
          cudaEventDestroy(event);
      if (slot.stream)
        cudaStreamDestroy(slot.stream);
    }
    if (batchStarted_)
      cudaEventDestroy(batchStarted_);
  }

  bool initialize(std::string &error) {
    if (!check(cudaSetDevice(device_), "cudaSetDevice", error))
      return false;
    for (Slot &slot : slots_) {
      if (!check(cudaStreamCreateWithFlags(&slot.stream, cudaStreamNonBlocking), "stream", error))
        return false;
      for (cudaEvent_t *event : {&slot.started, &slot.copiedIn, &slot.computed, &slot.copiedOut})
        if (!check(cudaEventCreate(event), "event", error))
          return false;
    }
    if (!check(cudaEventCreate(&batchStarted_), "event", error))
      return false;
    // The upload runs on the legacy stream, which the engine's non-blocking streams do not
    // wait for: finish it before any kernel reads the table.
    return check(cuda::uploadDctCosines(dctCosines()), "constant upload", error) &&
           check(cudaDeviceSynchronize(), "constant upload", error);
  }

  bool grayscale(const ImageView *images, size_t count, uint8_t *const *outputs,
                 std::string &error) override {
    auto size = [](const ImageView &image) { return size_t(image.width * image.height); };
    return run(count, copiedOut(images, outputs, size), error,
               [&](cudaStream_t stream, size_t first, size_t n, const ImageDescriptor *d,
                   const unsigned char *pixels, unsigned char *out) {
                 cuda::launchGrayscale(stream, d, int(n), largest(images + first, n), pixels, out);
               });
  }

  bool laplacianSums(const ImageView *images, size_t count, LaplacianSums *outputs,
                     std::string &error) override {
    ChunkLayout layout = perImage(images, [](const ImageView &) { return 2 * sizeof(long long); });
    layout.unpack = [&](size_t first, size_t n, const unsigned char *out,
                        std::vector<StagingCopy> &) {
      const long long *sums = reinterpret_cast<const long long *>(out);
      for (size_t i = 0; i < n; ++i) {
        const ImageView &image = images[first + i];
        outputs[first + i] = LaplacianSums{
            sums[2 * i], sums[2 * i + 1],
            image.width >= 3 && image.height >= 3 ? (image.width - 2) * (image.height - 2) : 0};
      }
    };
    return run(count, layout, error,
               [&](cudaStream_t stream, size_t first, size_t n, const ImageDescriptor *d,
                   const unsigned char *pixels, unsigned char *out) {
                 cuda::launchLaplacian(stream, d, int(n), largest(images + first, n), pixels,
                                       reinterpret_cast<long long *>(out));
               });
  }

  bool resize(const ImageView *images, size_t count, int64_t width, int64_t height,
              uint8_t *const *outputs, std::string &error) override {
    auto size = [=](const ImageView &image) { return size_t(width * height * image.channels); };
    return run(count, copiedOut(images, outputs, size), error,
               [&](cudaStream_t stream, size_t, size_t n, const ImageDescriptor *d,
                   const unsigned char *pixels, unsigned char *out) {
                 cuda::launchResize(stream, d, int(n), int(width), int(height), pixels, out);
               });
  }

  bool resizeNormalize(const ImageView *images, size_t count, int64_t width, int64_t height,
                       float *const *outputs, std::string &error) override {
    auto size = [=](const ImageView &image) {
      return size_t(width * height * image.channels) * sizeof(float);
    };
    return run(count, copiedOut(images, outputs, size, sizeof(float)), error,
               [&](cudaStream_t stream, size_t, size_t n, const ImageDescriptor *d,
                   const unsigned char *pixels, unsigned char *out) {
                 cuda::launchResizeNormalize(stream, d, int(n), int(width), int(height), pixels,
                                             reinterpret_cast<float *>(out));
               });
  }

  bool phashCoefficients(const ImageView *images, size_t count, double (*outputs)[64],
                         std::string &error) override {
    ChunkLayout layout = perImage(
        images, [](const ImageView &) { return 64 * sizeof(double); }, sizeof(double));
    layout.unpack = [&](size_t first, size_t n, const unsigned char *out,
                        std::vector<StagingCopy> &copies) {
      copies.push_back(StagingCopy{out, outputs[first], n * 64 * sizeof(double)});
    };
    return run(count, layout, error,
               [&](cudaStream_t stream, size_t, size_t n, const ImageDescriptor *d,
                   const unsigned char *pixels, unsigned char *out) {
                 cuda::launchPhash(stream, d, int(n), pixels, reinterpret_cast<double *>(out));
               });
  }

  bool grayDifferenceSums(const ImageView *first, const ImageView *second, size_t pairs,
                          uint64_t *outputs, std::string &error) override {
    ChunkLayout layout;
    layout.inputBytes = [&](size_t i) { return pixelsOf(first[i]) + pixelsOf(second[i]); };
    layout.outputBytes = [](size_t) { return sizeof(unsigned long long); };
    layout.headerBytes = descriptorBytes;
    layout.pack = [&](size_t start, size_t n, unsigned char *input,
                      std::vector<StagingCopy> &copies) {
      auto *descriptors = reinterpret_cast<ImageDescriptor *>(input);
      unsigned char *pixels = input + descriptorBytes(n);
      // Consecutive pairs of a clip share frames: each frame is copied once per chunk.
      std::unordered_map<const uint8_t *, size_t> offsets;
      size_t used = 0;
      auto place = [&](const ImageView &frame) {
        auto [where, fresh] = offsets.emplace(frame.pixels, used);
        if (fresh) {
          copies.push_back(StagingCopy{frame.pixels, pixels + used, pixelsOf(frame)});
          used += pixelsOf(frame);
        }
        return where->second;
      };
      for (size_t i = 0; i < n; ++i) {
        const ImageView &a = first[start + i], &b = second[start + i];
        ImageDescriptor &d = descriptors[i];
        d.input = place(a);
        d.secondInput = place(b);
        d.output = i;
        d.width = int(a.width);
        d.height = int(a.height);
        d.channels = int(a.channels);
        d.secondChannels = int(b.channels);
      }
      return descriptorBytes(n) + used;
    };
    layout.unpack = [&](size_t start, size_t n, const unsigned char *out,
                        std::vector<StagingCopy> &copies) {
      copies.push_back(StagingCopy{out, outputs + start, n * sizeof(uint64_t)});
    };
    return run(pairs, layout, error,
               [&](cudaStream_t stream, size_t start, size_t n, const ImageDescriptor *d,
                   const unsigned char *pixels, unsigned char *out) {
                 cuda::launchDifferences(stream, d, int(n), largest(first + start, n), pixels,
                                         reinterpret_cast<unsigned long long *>(out));
               });
  }

private:
  static size_t pixelsOf(const ImageView &image) {
    return size_t(image.width * image.height * image.channels);
  }

  static long long largest(const ImageView *images, size_t count) {
    long long most = 0;
    for (size_t i = 0; i < count; ++i)
      most = std::max<long long>(most, images[i].width * images[i].height);
    return most;
  }

  /// The usual shape: one descriptor and one output of `outputSize(image)` bytes per image
  /// (output offsets counted in `elementSize` units).
  template <typename OutputSize>
  static ChunkLayout perImage(const ImageView *images, OutputSize outputSize,
                              size_t elementSize = 1) {
    ChunkLayout layout;
    layout.inputBytes = [=](size_t i) { return pixelsOf(images[i]); };
    layout.outputBytes = [=](size_t i) { return outputSize(images[i]); };
    layout.headerBytes = descriptorBytes;
    layout.pack = [=](size_t first, size_t n, unsigned char *input,
                      std::vector<StagingCopy> &copies) {
      auto *descriptors = reinterpret_cast<ImageDescriptor *>(input);
      unsigned char *pixels = input + descriptorBytes(n);
      size_t used = 0, output = 0;
      for (size_t i = 0; i < n; ++i) {
        const ImageView &image = images[first + i];
        ImageDescriptor &d = descriptors[i];
        d = ImageDescriptor{};
        d.input = used;
        d.output = output / elementSize;
        d.width = int(image.width);
        d.height = int(image.height);
        d.channels = int(image.channels);
        copies.push_back(StagingCopy{image.pixels, pixels + used, pixelsOf(image)});
        used += pixelsOf(image);
        output += outputSize(image);
      }
      return descriptorBytes(n) + used;
    };
    return layout;
  }

  /// perImage, with each image's result copied to outputs[i].
  template <typename Output, typename OutputSize>
  static ChunkLayout copiedOut(const ImageView *images, Output *const *outputs, OutputSize size,
                               size_t elementSize = 1) {
    ChunkLayout layout = perImage(images, size, elementSize);
    layout.unpack = [=](size_t first, size_t n, const unsigned char *out,
                        std::vector<StagingCopy> &copies) {
      copyOut(images, outputs, size, first, n, out, copies);
    };
    return layout;
  }

  bool run(size_t items, const ChunkLayout &layout, std::string &error, ChunkLaunch launch) {
    timing_ = GpuBatchTiming{};
    if (items == 0)
      return true;
    if (!check(cudaSetDevice(device_), "cudaSetDevice", error)) {
      lastError_ = lastFailure;
      return false;
    }
    const auto started = std::chrono::steady_clock::now();
    CudaChunks chunks(slots_, batchStarted_, timing_, std::move(launch));
    const bool ok = runStagedChunks(items, layout, chunks, StagingCopier::shared(), error);
    timing_.wallMs =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started)
            .count();
    if (!ok)
      lastError_ = lastFailure;
    return ok;
  }

  Slot slots_[kStagingSlots];
  /// Recorded before a batch's first chunk: the origin of its chunks' times.
  cudaEvent_t batchStarted_ = nullptr;
};

} // namespace

std::unique_ptr<CudaImageEngine> CudaImageEngine::create(int device, std::string &error) {
  int count = 0;
  if (!check(cudaGetDeviceCount(&count), "no usable CUDA device", error))
    return nullptr;
  if (device < 0 || device >= count) {
    error = "CUDA device " + std::to_string(device) + " does not exist (" + std::to_string(count) +
            " present)";
    return nullptr;
  }
  auto engine = std::make_unique<CudaImageEngineImpl>(device);
  if (!engine->initialize(error))
    return nullptr;
  return engine;
}

} // namespace orch::stdlib
