// The engine behind the GPU image operators: per replica, two streams with their events and
// grow-only pinned staging and device buffers. A batch is cut into chunks (GpuBatching.h: at
// most kGpuChunkBytes of input and of output, at most kGpuChunkItems images); chunk k runs on
// stream k % 2, so while one chunk computes the next one is packed on the host and copied in.
#include "orch/stdlib/CudaImageEngine.h"
#include "orch/stdlib/GpuBatching.h"

#include "ImageKernelLaunch.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <unordered_map>

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

struct Slot {
  cudaStream_t stream = nullptr;
  cudaEvent_t started = nullptr, copiedIn = nullptr, computed = nullptr, copiedOut = nullptr;
  Buffer<true> hostIn, hostOut;
  Buffer<false> deviceIn, deviceOut;
  /// The chunk in flight on this slot.
  size_t first = 0, count = 0;
  bool pending = false;
};

/// How one operation packs, launches and unpacks its chunks.
struct ChunkWork {
  /// Input pixel bytes and output bytes of item i (for cutting chunks; packing may share).
  std::function<size_t(size_t)> inputBytes, outputBytes;
  /// Writes the descriptors and pixels of items [first, first+count); returns pixel bytes used.
  std::function<size_t(size_t first, size_t count, ImageDescriptor *, unsigned char *)> pack;
  std::function<void(cudaStream_t, size_t first, size_t count, const ImageDescriptor *,
                     const unsigned char *pixels, unsigned char *out)>
      launch;
  std::function<void(size_t first, size_t count, const unsigned char *out)> unpack;
};

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
    // The upload runs on the legacy stream, which the engine's non-blocking streams do not
    // wait for: finish it before any kernel reads the table.
    return check(cuda::uploadDctCosines(dctCosines()), "constant upload", error) &&
           check(cudaDeviceSynchronize(), "constant upload", error);
  }

  bool grayscale(const ImageView *images, size_t count, uint8_t *const *outputs,
                 std::string &error) override {
    auto size = [](const ImageView &image) { return size_t(image.width * image.height); };
    ChunkWork work = perImage(images, size);
    work.launch = [&](cudaStream_t stream, size_t first, size_t n, const ImageDescriptor *d,
                      const unsigned char *pixels, unsigned char *out) {
      cuda::launchGrayscale(stream, d, int(n), largest(images + first, n), pixels, out);
    };
    work.unpack = [&](size_t first, size_t n, const unsigned char *out) {
      for (size_t i = first; i < first + n; ++i) {
        std::memcpy(outputs[i], out, size(images[i]));
        out += size(images[i]);
      }
    };
    return run(count, work, error);
  }

  bool laplacianSums(const ImageView *images, size_t count, LaplacianSums *outputs,
                     std::string &error) override {
    ChunkWork work = perImage(images, [](const ImageView &) { return 2 * sizeof(long long); });
    work.launch = [&](cudaStream_t stream, size_t first, size_t n, const ImageDescriptor *d,
                      const unsigned char *pixels, unsigned char *out) {
      cuda::launchLaplacian(stream, d, int(n), largest(images + first, n), pixels,
                            reinterpret_cast<long long *>(out));
    };
    work.unpack = [&](size_t first, size_t n, const unsigned char *out) {
      const long long *sums = reinterpret_cast<const long long *>(out);
      for (size_t i = 0; i < n; ++i) {
        const ImageView &image = images[first + i];
        outputs[first + i] = LaplacianSums{
            sums[2 * i], sums[2 * i + 1],
            image.width >= 3 && image.height >= 3 ? (image.width - 2) * (image.height - 2) : 0};
      }
    };
    return run(count, work, error);
  }

  bool resize(const ImageView *images, size_t count, int64_t width, int64_t height,
              uint8_t *const *outputs, std::string &error) override {
    auto size = [=](const ImageView &image) { return size_t(width * height * image.channels); };
    ChunkWork work = perImage(images, size);
    work.launch = [&](cudaStream_t stream, size_t, size_t n, const ImageDescriptor *d,
                      const unsigned char *pixels, unsigned char *out) {
      cuda::launchResize(stream, d, int(n), int(width), int(height), pixels, out);
    };
    work.unpack = [&](size_t first, size_t n, const unsigned char *out) {
      for (size_t i = first; i < first + n; ++i) {
        std::memcpy(outputs[i], out, size(images[i]));
        out += size(images[i]);
      }
    };
    return run(count, work, error);
  }

  bool resizeNormalize(const ImageView *images, size_t count, int64_t width, int64_t height,
                       float *const *outputs, std::string &error) override {
    auto size = [=](const ImageView &image) {
      return size_t(width * height * image.channels) * sizeof(float);
    };
    ChunkWork work = perImage(images, size, sizeof(float));
    work.launch = [&](cudaStream_t stream, size_t, size_t n, const ImageDescriptor *d,
                      const unsigned char *pixels, unsigned char *out) {
      cuda::launchResizeNormalize(stream, d, int(n), int(width), int(height), pixels,
                                  reinterpret_cast<float *>(out));
    };
    work.unpack = [&](size_t first, size_t n, const unsigned char *out) {
      for (size_t i = first; i < first + n; ++i) {
        std::memcpy(outputs[i], out, size(images[i]));
        out += size(images[i]);
      }
    };
    return run(count, work, error);
  }

  bool phashCoefficients(const ImageView *images, size_t count, double (*outputs)[64],
                         std::string &error) override {
    ChunkWork work = perImage(
        images, [](const ImageView &) { return 64 * sizeof(double); }, sizeof(double));
    work.launch = [&](cudaStream_t stream, size_t, size_t n, const ImageDescriptor *d,
                      const unsigned char *pixels, unsigned char *out) {
      cuda::launchPhash(stream, d, int(n), pixels, reinterpret_cast<double *>(out));
    };
    work.unpack = [&](size_t first, size_t n, const unsigned char *out) {
      std::memcpy(outputs[first], out, n * 64 * sizeof(double));
    };
    return run(count, work, error);
  }

  bool grayDifferenceSums(const ImageView *first, const ImageView *second, size_t pairs,
                          uint64_t *outputs, std::string &error) override {
    ChunkWork work;
    work.inputBytes = [&](size_t i) { return pixelsOf(first[i]) + pixelsOf(second[i]); };
    work.outputBytes = [](size_t) { return sizeof(unsigned long long); };
    work.pack = [&](size_t start, size_t n, ImageDescriptor *descriptors, unsigned char *pixels) {
      // Consecutive pairs of a clip share frames: each frame is copied once per chunk.
      std::unordered_map<const uint8_t *, size_t> offsets;
      size_t used = 0;
      auto place = [&](const ImageView &frame) {
        auto [where, fresh] = offsets.emplace(frame.pixels, used);
        if (fresh) {
          std::memcpy(pixels + used, frame.pixels, pixelsOf(frame));
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
      return used;
    };
    work.launch = [&](cudaStream_t stream, size_t start, size_t n, const ImageDescriptor *d,
                      const unsigned char *pixels, unsigned char *out) {
      cuda::launchDifferences(stream, d, int(n), largest(first + start, n), pixels,
                              reinterpret_cast<unsigned long long *>(out));
    };
    work.unpack = [&](size_t start, size_t n, const unsigned char *out) {
      std::memcpy(outputs + start, out, n * sizeof(uint64_t));
    };
    return run(pairs, work, error);
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
  static ChunkWork perImage(const ImageView *images, OutputSize outputSize,
                            size_t elementSize = 1) {
    ChunkWork work;
    work.inputBytes = [=](size_t i) { return pixelsOf(images[i]); };
    work.outputBytes = [=](size_t i) { return outputSize(images[i]); };
    work.pack = [=](size_t first, size_t n, ImageDescriptor *descriptors, unsigned char *pixels) {
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
        std::memcpy(pixels + used, image.pixels, pixelsOf(image));
        used += pixelsOf(image);
        output += outputSize(image);
      }
      return used;
    };
    return work;
  }

  /// Waits for a slot's chunk, books its timings and hands its results over.
  bool finish(Slot &slot, const ChunkWork &work, std::string &error) {
    slot.pending = false;
    if (!check(cudaStreamSynchronize(slot.stream), "batch", error))
      return false;
    float milliseconds = 0;
    if (cudaEventElapsedTime(&milliseconds, slot.started, slot.copiedIn) == cudaSuccess)
      timing_.copyToDeviceMs += milliseconds;
    if (cudaEventElapsedTime(&milliseconds, slot.copiedIn, slot.computed) == cudaSuccess)
      timing_.kernelMs += milliseconds;
    if (cudaEventElapsedTime(&milliseconds, slot.computed, slot.copiedOut) == cudaSuccess)
      timing_.copyToHostMs += milliseconds;
    work.unpack(slot.first, slot.count, slot.hostOut.bytes());
    return true;
  }

  bool submit(Slot &slot, size_t first, size_t count, const ChunkWork &work, std::string &error) {
    size_t inputBytes = 0, outputBytes = 0;
    for (size_t i = first; i < first + count; ++i) {
      inputBytes += work.inputBytes(i);
      outputBytes += work.outputBytes(i);
    }
    const size_t descriptorBytes = aligned(count * sizeof(ImageDescriptor));
    if (!slot.hostIn.reserve(descriptorBytes + inputBytes, error) ||
        !slot.deviceIn.reserve(descriptorBytes + inputBytes, error) ||
        !slot.hostOut.reserve(outputBytes, error) || !slot.deviceOut.reserve(outputBytes, error))
      return false;
    auto *descriptors = reinterpret_cast<ImageDescriptor *>(slot.hostIn.bytes());
    const size_t used = work.pack(first, count, descriptors, slot.hostIn.bytes() + descriptorBytes);
    const size_t copied = descriptorBytes + used;
    cudaEventRecord(slot.started, slot.stream);
    if (!check(cudaMemcpyAsync(slot.deviceIn.bytes(), slot.hostIn.bytes(), copied,
                               cudaMemcpyHostToDevice, slot.stream),
               "copy to device", error))
      return false;
    cudaEventRecord(slot.copiedIn, slot.stream);
    work.launch(slot.stream, first, count,
                reinterpret_cast<const ImageDescriptor *>(slot.deviceIn.bytes()),
                slot.deviceIn.bytes() + descriptorBytes, slot.deviceOut.bytes());
    if (!check(cudaGetLastError(), "kernel launch", error))
      return false;
    cudaEventRecord(slot.computed, slot.stream);
    if (!check(cudaMemcpyAsync(slot.hostOut.bytes(), slot.deviceOut.bytes(), outputBytes,
                               cudaMemcpyDeviceToHost, slot.stream),
               "copy to host", error))
      return false;
    cudaEventRecord(slot.copiedOut, slot.stream);
    slot.first = first;
    slot.count = count;
    slot.pending = true;
    timing_.bytesToDevice += copied;
    timing_.bytesToHost += outputBytes;
    ++timing_.chunks;
    return true;
  }

  bool run(size_t items, const ChunkWork &work, std::string &error) {
    timing_ = GpuBatchTiming{};
    if (items == 0)
      return true;
    if (!check(cudaSetDevice(device_), "cudaSetDevice", error)) {
      lastError_ = lastFailure;
      return false;
    }
    const auto started = std::chrono::steady_clock::now();
    bool ok = true;
    size_t next = 0;
    for (size_t chunk = 0; ok && next < items; ++chunk) {
      Slot &slot = slots_[chunk % 2];
      if (slot.pending)
        ok = finish(slot, work, error);
      const size_t count = gpuChunkLength(next, items, work.inputBytes, work.outputBytes);
      ok = ok && submit(slot, next, count, work, error);
      next += count;
    }
    // The older chunk first, then the newer.
    for (size_t k = 0; k < 2; ++k) {
      Slot &slot = slots_[(timing_.chunks + k) % 2];
      if (slot.pending) {
        std::string finishError;
        if (!finish(slot, work, finishError) && ok) {
          ok = false;
          error = finishError;
        }
      }
    }
    timing_.wallMs =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started)
            .count();
    if (!ok)
      lastError_ = lastFailure;
    return ok;
  }

  Slot slots_[2];
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
