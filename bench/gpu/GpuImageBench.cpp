// orch_gpu_bench: images per second of the image kernels, on the GPU (CudaImageEngine, one
// batch per launch sequence) against the CPU references on one core and on all cores, for batch
// sizes 1 to 256 of 640x480 RGB frames; and where a GPU batch's time goes (kernels, copies in
// and out, and the batch's wall time against their sum). The GPU results of every measured
// batch are checked against the CPU. Prints Markdown tables: every figure, then batch 256
// against the targets of issue 43. Without a usable GPU it says why and prints the CPU figures
// only.
//   orch_gpu_bench [--quick]   (--quick: batch sizes 1, 16, 256 and fewer repetitions)
#include "orch/stdlib/CudaDevices.h"
#include "orch/stdlib/CudaImageEngine.h"
#include "orch/stdlib/ImageKernels.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace orch::stdlib;
using Clock = std::chrono::steady_clock;

constexpr int64_t kWidth = 640, kHeight = 480, kTensorSide = 224;

struct Frames {
  std::vector<std::vector<uint8_t>> pixels;
  std::vector<ImageView> views;
};

/// Video-like frames: a moving gradient with noise.
Frames makeFrames(size_t count) {
  std::mt19937 random(1);
  Frames frames;
  frames.pixels.resize(count);
  for (size_t i = 0; i < count; ++i) {
    std::vector<uint8_t> &p = frames.pixels[i];
    p.resize(size_t(kWidth * kHeight * 3));
    for (int64_t y = 0; y < kHeight; ++y)
      for (int64_t x = 0; x < kWidth; ++x)
        for (int64_t c = 0; c < 3; ++c)
          p[size_t((y * kWidth + x) * 3 + c)] =
              uint8_t((x + 3 * int64_t(i) + y / 2 + 60 * c + random() % 16) % 256);
    frames.views.push_back(ImageView{kWidth, kHeight, 3, p.data()});
  }
  return frames;
}

/// One kernel: how to run a batch on the CPU and on the GPU, and whether the two agree.
struct Kernel {
  std::string name;
  /// Items [begin, end) of a batch (frame pairs i, i+1 for motion).
  std::function<void(const ImageView *, size_t begin, size_t end)> cpu;
  std::function<bool(CudaImageEngine &, const ImageView *, size_t, std::string &)> gpu;
  std::function<bool(const ImageView *, size_t)> gpuMatchesCpu;
  /// Works on frame pairs: a batch of n frames is n - 1 items.
  bool pairs = false;
  /// The target (43): at least the whole CPU's rate on the GPU.
  bool mustBeatAllCores = false;

  size_t items(size_t frames) const { return pairs ? (frames > 0 ? frames - 1 : 0) : frames; }
};

std::vector<Kernel> kernels(size_t largestBatch) {
  // Output storage shared by the runs (sized for the largest batch).
  static std::vector<std::vector<uint8_t>> gray, resized;
  static std::vector<std::vector<float>> tensors;
  static std::vector<uint8_t *> grayOut, resizedOut;
  static std::vector<float *> tensorOut;
  static std::vector<LaplacianSums> sums;
  static std::vector<std::array<double, 64>> hashes;
  static std::vector<uint64_t> differences;
  gray.assign(largestBatch, std::vector<uint8_t>(size_t(kWidth * kHeight)));
  tensors.assign(largestBatch, std::vector<float>(size_t(3 * kTensorSide * kTensorSide)));
  resized.assign(largestBatch, std::vector<uint8_t>(size_t(3 * kTensorSide * kTensorSide)));
  grayOut.clear();
  tensorOut.clear();
  resizedOut.clear();
  for (size_t i = 0; i < largestBatch; ++i) {
    grayOut.push_back(gray[i].data());
    tensorOut.push_back(tensors[i].data());
    resizedOut.push_back(resized[i].data());
  }
  sums.resize(largestBatch);
  hashes.resize(largestBatch);
  differences.resize(largestBatch);
  auto rows = [] { return reinterpret_cast<double(*)[64]>(hashes.data()); };

  std::vector<Kernel> list;
  list.push_back({"grayscale",
                  [](const ImageView *v, size_t begin, size_t end) {
                    for (size_t i = begin; i < end; ++i)
                      grayscale(v[i], grayOut[i]);
                  },
                  [](CudaImageEngine &e, const ImageView *v, size_t n, std::string &error) {
                    return e.grayscale(v, n, grayOut.data(), error);
                  },
                  [](const ImageView *v, size_t n) {
                    std::vector<uint8_t> expected(size_t(kWidth * kHeight));
                    for (size_t i = 0; i < n; ++i) {
                      grayscale(v[i], expected.data());
                      if (expected != gray[i])
                        return false;
                    }
                    return true;
                  }});
  list.push_back({"sharpness (Laplacian variance)",
                  [](const ImageView *v, size_t begin, size_t end) {
                    for (size_t i = begin; i < end; ++i)
                      sums[i] = laplacianSums(v[i]);
                  },
                  [](CudaImageEngine &e, const ImageView *v, size_t n, std::string &error) {
                    return e.laplacianSums(v, n, sums.data(), error);
                  },
                  [](const ImageView *v, size_t n) {
                    for (size_t i = 0; i < n; ++i)
                      if (laplacianSums(v[i]).sumSquares != sums[i].sumSquares)
                        return false;
                    return true;
                  }});
  list.push_back({"tensor (resize 224x224 + normalize)",
                  [](const ImageView *v, size_t begin, size_t end) {
                    for (size_t i = begin; i < end; ++i)
                      resizeNormalize(v[i], kTensorSide, kTensorSide, tensorOut[i]);
                  },
                  [](CudaImageEngine &e, const ImageView *v, size_t n, std::string &error) {
                    return e.resizeNormalize(v, n, kTensorSide, kTensorSide, tensorOut.data(),
                                             error);
                  },
                  [](const ImageView *v, size_t n) {
                    std::vector<float> expected(size_t(3 * kTensorSide * kTensorSide));
                    for (size_t i = 0; i < n; ++i) {
                      resizeNormalize(v[i], kTensorSide, kTensorSide, expected.data());
                      for (size_t k = 0; k < expected.size(); ++k)
                        if (std::abs(expected[k] - tensors[i][k]) > 1e-5f)
                          return false;
                    }
                    return true;
                  }});
  list.back().mustBeatAllCores = true;
  list.push_back({"resize (224x224, 8-bit)",
                  [](const ImageView *v, size_t begin, size_t end) {
                    for (size_t i = begin; i < end; ++i)
                      resizeBilinear(v[i], kTensorSide, kTensorSide, resizedOut[i]);
                  },
                  [](CudaImageEngine &e, const ImageView *v, size_t n, std::string &error) {
                    return e.resize(v, n, kTensorSide, kTensorSide, resizedOut.data(), error);
                  },
                  [](const ImageView *v, size_t n) {
                    std::vector<uint8_t> expected(size_t(3 * kTensorSide * kTensorSide));
                    for (size_t i = 0; i < n; ++i) {
                      resizeBilinear(v[i], kTensorSide, kTensorSide, expected.data());
                      if (expected != resized[i])
                        return false;
                    }
                    return true;
                  }});
  list.back().mustBeatAllCores = true;
  list.push_back({"phash",
                  [rows](const ImageView *v, size_t begin, size_t end) {
                    for (size_t i = begin; i < end; ++i)
                      phashCoefficients(v[i], rows()[i]);
                  },
                  [rows](CudaImageEngine &e, const ImageView *v, size_t n, std::string &error) {
                    return e.phashCoefficients(v, n, rows(), error);
                  },
                  [rows](const ImageView *v, size_t n) {
                    for (size_t i = 0; i < n; ++i)
                      if (phashFromCoefficients(rows()[i]) != perceptualHash(v[i]))
                        return false;
                    return true;
                  }});
  list.back().mustBeatAllCores = true;
  list.push_back({"motion (frame differences)",
                  [](const ImageView *v, size_t begin, size_t end) {
                    for (size_t i = begin; i < end; ++i)
                      differences[i] = grayDifferenceSum(v[i], v[i + 1]);
                  },
                  [](CudaImageEngine &e, const ImageView *v, size_t n, std::string &error) {
                    return n < 2 ||
                           e.grayDifferenceSums(v, v + 1, n - 1, differences.data(), error);
                  },
                  [](const ImageView *v, size_t n) {
                    for (size_t i = 0; i + 1 < n; ++i)
                      if (differences[i] != grayDifferenceSum(v[i], v[i + 1]))
                        return false;
                    return true;
                  }});
  list.back().pairs = true;
  return list;
}

double seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

/// Images per second of `kernel` on the CPU: `items` images (or pairs) cut into one share per
/// thread.
double cpuRate(const Kernel &kernel, const ImageView *views, size_t items, size_t threads) {
  const Clock::time_point start = Clock::now();
  std::vector<std::thread> workers;
  for (size_t t = 1; t < threads; ++t)
    workers.emplace_back(
        [&, t] { kernel.cpu(views, items * t / threads, items * (t + 1) / threads); });
  kernel.cpu(views, 0, items / threads);
  for (std::thread &worker : workers)
    worker.join();
  return double(items) / seconds(start);
}

/// A batch-256 figure against the targets.
struct TargetRow {
  std::string kernel;
  double wallOverWork = 0;
  double gpuOverAllCores = 0;
  bool mustBeatAllCores = false;
};

} // namespace

int main(int argc, char **argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  const std::vector<size_t> batches = quick ? std::vector<size_t>{1, 16, 256}
                                            : std::vector<size_t>{1, 2, 4, 8, 16, 32, 64, 128, 256};
  const int repetitions = quick ? 3 : 5;
  const size_t largest = batches.back();
  const size_t cores = std::max(1u, std::thread::hardware_concurrency());
  Frames frames = makeFrames(largest);
  std::vector<Kernel> list = kernels(largest);

  std::string why;
  const CudaDeviceCount devices = countCudaDevices();
  std::unique_ptr<CudaImageEngine> engine =
      devices.count > 0 ? CudaImageEngine::create(0, why) : nullptr;
  if (devices.count == 0)
    why = devices.reason;
  std::printf("# orch_gpu_bench: %lldx%lld RGB frames; CPU: the reference on one core and on all "
              "%zu cores\n",
              (long long)kWidth, (long long)kHeight, cores);
  if (!devices.versions.empty())
    std::printf("# %s\n", devices.versions.c_str());
  if (devices.broken || (devices.count > 0 && !engine)) {
    // A GPU that is there but fails is not a machine without a GPU: no CPU-only table.
    std::printf("GPU: error: %s\n", (devices.broken ? devices.reason : why).c_str());
    return 1;
  }
  if (!engine)
    std::printf("GPU: none (%s); CPU figures only\n\n", why.c_str());
  else
    std::printf("GPU: CUDA device 0\n\n");

  std::printf("| kernel | batch | GPU images/s | CPU 1 core | CPU %zu cores | GPU / %zu cores | "
              "kernel ms | copy in ms | copy out ms | batch wall ms | wall / (kernel + copies) | "
              "GPU = CPU |\n",
              cores, cores);
  std::printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
  bool allMatch = true;
  std::vector<TargetRow> targets;
  for (const Kernel &kernel : list) {
    // The batch size does not change the CPU's rate: whole frames, one after another.
    const double oneCore = cpuRate(kernel, frames.views.data(), quick ? 8 : 32, 1);
    const double allCores = cpuRate(kernel, frames.views.data(), kernel.items(largest), cores);
    if (!engine) {
      std::printf("| %s | - | - | %.0f | %.0f | - | - | - | - | - | - | - |\n", kernel.name.c_str(),
                  oneCore, allCores);
      continue;
    }
    for (size_t batch : batches) {
      const size_t items = kernel.items(batch);
      if (items == 0)
        continue; // motion of one frame: no pair, no GPU batch
      std::string error;
      if (!kernel.gpu(*engine, frames.views.data(), batch, error)) { // warm-up, buffers grow
        std::printf("| %s | %zu | error: %s |\n", kernel.name.c_str(), batch, error.c_str());
        allMatch = false;
        continue;
      }
      std::vector<GpuBatchTiming> timings;
      for (int r = 0; r < repetitions; ++r) {
        kernel.gpu(*engine, frames.views.data(), batch, error);
        timings.push_back(engine->lastTiming());
      }
      std::sort(timings.begin(), timings.end(),
                [](const auto &a, const auto &b) { return a.wallMs < b.wallMs; });
      const GpuBatchTiming &median = timings[timings.size() / 2];
      const bool match = kernel.gpuMatchesCpu(frames.views.data(), batch);
      allMatch = allMatch && match;
      const double gpuRate = double(items) / (median.wallMs / 1000.0);
      const double work = median.kernelMs + median.copyToDeviceMs + median.copyToHostMs;
      std::printf("| %s | %zu | %.0f | %.0f | %.0f | %.2fx | %.3f | %.3f | %.3f | %.3f | %.2f | "
                  "%s |\n",
                  kernel.name.c_str(), batch, gpuRate, oneCore, allCores, gpuRate / allCores,
                  median.kernelMs, median.copyToDeviceMs, median.copyToHostMs, median.wallMs,
                  median.wallMs / work, match ? "yes" : "NO");
      if (batch == largest)
        targets.push_back(TargetRow{kernel.name, median.wallMs / work, gpuRate / allCores,
                                    kernel.mustBeatAllCores});
    }
  }
  if (!targets.empty()) {
    std::printf("\nTargets at batch %zu: batch wall <= 1.5 x (kernel + copies); resize, tensor "
                "and phash at least the %zu-core CPU's images/s\n\n",
                largest, cores);
    std::printf("| kernel | wall / (kernel + copies) | met | GPU / %zu cores | met |\n", cores);
    std::printf("|---|---:|---|---:|---|\n");
    for (const TargetRow &row : targets)
      std::printf("| %s | %.2f | %s | %.2fx | %s |\n", row.kernel.c_str(), row.wallOverWork,
                  row.wallOverWork <= 1.5 ? "yes" : "no", row.gpuOverAllCores,
                  !row.mustBeatAllCores      ? "-"
                  : row.gpuOverAllCores >= 1 ? "yes"
                                             : "no");
  }
  if (engine && !allMatch) {
    std::printf("\nGPU results differ from the CPU reference\n");
    return 1;
  }
  return 0;
}
