// The image operators: image.grayscale, image.sharpness (variance of the Laplacian),
// image.resize (bilinear), image.tensor (resize + normalization to a float tensor),
// image.phash (64-bit DCT perceptual hash) and image.motion (frame differences). When the Call
// asks for GPUs and the replica's device is usable, each batch runs on the GPU in one launch
// sequence (CudaImageEngine); otherwise, or when a CUDA call fails, on the CPU references,
// which give the same results.
#include "ImageValue.h"
#include "OperatorGroups.h"

#include "orch/stdlib/CudaImageEngine.h"
#include "orch/stdlib/GpuBatching.h"
#include "orch/stdlib/ImageKernels.h"

#include <array>
#include <cstring>
#include <functional>

namespace orch::stdlib {
namespace {

using runtime::OperatorConfig;
using runtime::OperatorRow;
using runtime::RowResult;
using runtime::Value;

/// The replica's GPU engine, created on first use when the Call asked for GPUs and the
/// executor assigned the replica a device; null on the CPU. When a batch fails on the GPU it
/// reruns on the CPU (same results), the failure is logged with the device, and the engine is
/// dropped: after a sticky error (a corrupt context) for good, after another one (out of
/// memory) a new engine is tried on a later batch, at most kGpuRetries times.
class GpuAccess {
public:
  static constexpr int kGpuRetries = 3;

  explicit GpuAccess(const OperatorConfig &config)
      : config_(config), wanted_(config.gpus() > 0 && config.gpuDevice() >= 0),
        device_(int(config.gpuDevice())) {}

  /// Runs `gpu` when there is an engine; false when the CPU must do the batch.
  bool tryGpu(const std::function<bool(CudaImageEngine &, std::string &)> &gpu) {
    if (!wanted_)
      return false;
    std::string error;
    if (!engine_) {
      engine_ = makeCudaImageEngine(device_, error);
      if (!engine_) {
        giveUp("cannot be used (" + error + ")");
        return false;
      }
    }
    if (gpu(*engine_, error)) {
      if (!announced_) {
        announced_ = true;
        config_.log("GPU " + std::to_string(device_) + " ran this replica's first batch");
      }
      return true;
    }
    const bool sticky =
        classifyCudaError(engine_->lastError(), 1) == CudaErrorClass::Sticky || retries_ == 0;
    engine_.reset();
    if (sticky) {
      giveUp("failed a batch (" + error + ")");
    } else {
      --retries_;
      config_.log("GPU " + std::to_string(device_) + " failed a batch (" + error +
                  "); the batch runs on the CPU and the GPU is tried again");
    }
    return false;
  }

private:
  void giveUp(const std::string &what) {
    wanted_ = false;
    config_.log("GPU " + std::to_string(device_) + " " + what +
                ": this replica runs on the CPU from now on");
  }

  const OperatorConfig config_;
  bool wanted_;
  int device_;
  int retries_ = kGpuRetries;
  /// Whether the replica said once that its batches run on the GPU.
  bool announced_ = false;
  std::unique_ptr<CudaImageEngine> engine_;
};

/// An operator on one image per row: rows that are not images fail on their own; the others
/// run as one batch.
class BatchedImageOperator : public runtime::Operator {
public:
  explicit BatchedImageOperator(const OperatorConfig &config) : gpu_(config) {}

  void process(std::span<const OperatorRow> rows, std::vector<RowResult> &results) override {
    std::vector<ImageView> images;
    std::vector<size_t> rowOf;
    std::vector<std::optional<RowResult>> byRow(rows.size());
    for (size_t r = 0; r < rows.size(); ++r) {
      std::string problem;
      if (std::optional<ImageView> image = imageView(rows[r].inputs[0], problem)) {
        images.push_back(*image);
        rowOf.push_back(r);
      } else {
        byRow[r] = RowResult::recordFailure(problem);
      }
    }
    std::vector<Value> values = compute(images, gpu_);
    for (size_t i = 0; i < values.size(); ++i)
      byRow[rowOf[i]] = RowResult::ok(std::move(values[i]));
    for (std::optional<RowResult> &result : byRow)
      results.push_back(std::move(*result));
  }

protected:
  /// One value per image, on the GPU when `gpu` has an engine.
  virtual std::vector<Value> compute(const std::vector<ImageView> &images, GpuAccess &gpu) = 0;

private:
  GpuAccess gpu_;
};

/// Output buffers of `size(image)` elements of T per image, and their addresses.
template <typename T> struct OutputBuffers {
  std::vector<std::vector<T>> buffers;
  std::vector<T *> pointers;
  template <typename Size> OutputBuffers(const std::vector<ImageView> &images, Size size) {
    for (const ImageView &image : images)
      buffers.emplace_back(size(image));
    for (std::vector<T> &buffer : buffers)
      pointers.push_back(buffer.data());
  }
  static std::string bytesOf(const std::vector<T> &buffer) {
    return std::string(reinterpret_cast<const char *>(buffer.data()), buffer.size() * sizeof(T));
  }
};

class GrayscaleOperator : public BatchedImageOperator {
public:
  using BatchedImageOperator::BatchedImageOperator;
  std::vector<Value> compute(const std::vector<ImageView> &images, GpuAccess &gpu) override {
    OutputBuffers<uint8_t> gray(images,
                                [](const ImageView &i) { return size_t(i.width * i.height); });
    if (!gpu.tryGpu([&](CudaImageEngine &engine, std::string &error) {
          return engine.grayscale(images.data(), images.size(), gray.pointers.data(), error);
        }))
      for (size_t i = 0; i < images.size(); ++i)
        stdlib::grayscale(images[i], gray.pointers[i]);
    std::vector<Value> values;
    for (size_t i = 0; i < images.size(); ++i)
      values.push_back(makeImage(images[i].width, images[i].height, 1,
                                 OutputBuffers<uint8_t>::bytesOf(gray.buffers[i])));
    return values;
  }
};

class SharpnessOperator : public BatchedImageOperator {
public:
  using BatchedImageOperator::BatchedImageOperator;
  std::vector<Value> compute(const std::vector<ImageView> &images, GpuAccess &gpu) override {
    std::vector<LaplacianSums> sums(images.size());
    if (!gpu.tryGpu([&](CudaImageEngine &engine, std::string &error) {
          return engine.laplacianSums(images.data(), images.size(), sums.data(), error);
        }))
      for (size_t i = 0; i < images.size(); ++i)
        sums[i] = laplacianSums(images[i]);
    std::vector<Value> values;
    for (const LaplacianSums &imageSums : sums)
      values.push_back(Value::real(laplacianVariance(imageSums)));
    return values;
  }
};

class ResizeOperator : public BatchedImageOperator {
public:
  ResizeOperator(const OperatorConfig &config, int64_t width, int64_t height)
      : BatchedImageOperator(config), width_(width), height_(height) {}
  std::vector<Value> compute(const std::vector<ImageView> &images, GpuAccess &gpu) override {
    OutputBuffers<uint8_t> resized(
        images, [&](const ImageView &i) { return size_t(width_ * height_ * i.channels); });
    if (!gpu.tryGpu([&](CudaImageEngine &engine, std::string &error) {
          return engine.resize(images.data(), images.size(), width_, height_,
                               resized.pointers.data(), error);
        }))
      for (size_t i = 0; i < images.size(); ++i)
        resizeBilinear(images[i], width_, height_, resized.pointers[i]);
    std::vector<Value> values;
    for (size_t i = 0; i < images.size(); ++i)
      values.push_back(makeImage(width_, height_, images[i].channels,
                                 OutputBuffers<uint8_t>::bytesOf(resized.buffers[i])));
    return values;
  }

private:
  int64_t width_, height_;
};

/// {channels, height, width, data}: float32 CHW, little-endian, normalized per channel.
class TensorOperator : public BatchedImageOperator {
public:
  TensorOperator(const OperatorConfig &config, int64_t width, int64_t height)
      : BatchedImageOperator(config), width_(width), height_(height) {}
  std::vector<Value> compute(const std::vector<ImageView> &images, GpuAccess &gpu) override {
    OutputBuffers<float> tensors(
        images, [&](const ImageView &i) { return size_t(width_ * height_ * i.channels); });
    if (!gpu.tryGpu([&](CudaImageEngine &engine, std::string &error) {
          return engine.resizeNormalize(images.data(), images.size(), width_, height_,
                                        tensors.pointers.data(), error);
        }))
      for (size_t i = 0; i < images.size(); ++i)
        resizeNormalize(images[i], width_, height_, tensors.pointers[i]);
    std::vector<Value> values;
    for (size_t i = 0; i < images.size(); ++i)
      values.push_back(Value::record(
          {{"channels", Value::integer(images[i].channels)},
           {"height", Value::integer(height_)},
           {"width", Value::integer(width_)},
           {"data", Value::bytes(OutputBuffers<float>::bytesOf(tensors.buffers[i]))}}));
    return values;
  }

private:
  int64_t width_, height_;
};

class PhashOperator : public BatchedImageOperator {
public:
  using BatchedImageOperator::BatchedImageOperator;
  std::vector<Value> compute(const std::vector<ImageView> &images, GpuAccess &gpu) override {
    std::vector<std::array<double, 64>> coefficients(images.size());
    auto *rows = reinterpret_cast<double(*)[64]>(coefficients.data());
    if (!gpu.tryGpu([&](CudaImageEngine &engine, std::string &error) {
          return engine.phashCoefficients(images.data(), images.size(), rows, error);
        }))
      for (size_t i = 0; i < images.size(); ++i)
        stdlib::phashCoefficients(images[i], rows[i]);
    std::vector<Value> values;
    for (size_t i = 0; i < images.size(); ++i)
      values.push_back(Value::string(phashHex(phashFromCoefficients(rows[i]))));
    return values;
  }
};

/// image.hamming: how many bits two image.phash hashes differ in.
class HammingOperator : public runtime::Operator {
public:
  void process(std::span<const runtime::OperatorRow> rows,
               std::vector<RowResult> &results) override {
    for (const runtime::OperatorRow &row : rows) {
      const int distance = hashDistance(row.inputs[0].asString(), row.inputs[1].asString());
      results.push_back(distance < 0 ? RowResult::recordFailure(
                                           "image.hamming: expected two hashes of 16 hex digits "
                                           "(as image.phash returns), got \"" +
                                           row.inputs[0].asString().substr(0, 20) + "\" and \"" +
                                           row.inputs[1].asString().substr(0, 20) + "\"")
                                     : RowResult::ok(Value::integer(distance)));
    }
  }
};

/// image.motion: per row a list of frames (a clip's, in order); the mean over consecutive
/// pairs of their mean absolute gray difference. Every pair of the batch runs in one launch.
class MotionOperator : public runtime::Operator {
public:
  explicit MotionOperator(const OperatorConfig &config) : gpu_(config) {}

  void process(std::span<const OperatorRow> rows, std::vector<RowResult> &results) override {
    std::vector<ImageView> first, second;
    /// Per row: its first pair and how many it has, or the reason it failed.
    std::vector<std::pair<size_t, size_t>> pairsOf(rows.size());
    std::vector<std::string> problems(rows.size());
    for (size_t r = 0; r < rows.size(); ++r) {
      const Value &frames = rows[r].inputs[0];
      if (frames.kind() != Value::Kind::List) {
        problems[r] = "not a list of frames";
        continue;
      }
      std::vector<ImageView> views;
      for (const Value &frame : frames.asList()) {
        std::optional<ImageView> view = imageView(frame, problems[r]);
        if (!view)
          break;
        if (!views.empty() && (view->width != views[0].width || view->height != views[0].height)) {
          problems[r] = "frames of different sizes (" + std::to_string(views[0].width) + "x" +
                        std::to_string(views[0].height) + " and " + std::to_string(view->width) +
                        "x" + std::to_string(view->height) + ")";
          break;
        }
        views.push_back(*view);
      }
      if (!problems[r].empty())
        continue;
      pairsOf[r] = {first.size(), views.size() < 2 ? 0 : views.size() - 1};
      for (size_t i = 1; i < views.size(); ++i) {
        first.push_back(views[i - 1]);
        second.push_back(views[i]);
      }
    }
    std::vector<uint64_t> sums(first.size());
    if (!gpu_.tryGpu([&](CudaImageEngine &engine, std::string &error) {
          return engine.grayDifferenceSums(first.data(), second.data(), first.size(), sums.data(),
                                           error);
        }))
      for (size_t i = 0; i < first.size(); ++i)
        sums[i] = grayDifferenceSum(first[i], second[i]);
    for (size_t r = 0; r < rows.size(); ++r) {
      if (!problems[r].empty()) {
        results.push_back(RowResult::recordFailure(problems[r]));
        continue;
      }
      const auto [start, count] = pairsOf[r];
      double total = 0;
      for (size_t i = start; i < start + count; ++i)
        total += meanDifference(sums[i], first[i].width * first[i].height);
      results.push_back(RowResult::ok(Value::real(count ? total / double(count) : 0.0)));
    }
  }

private:
  GpuAccess gpu_;
};

std::pair<int64_t, int64_t> targetSize(const OperatorConfig &config, const char *op) {
  const int64_t width = config.intConstant("width"), height = config.intConstant("height");
  if (width <= 0 || height <= 0)
    throw runtime::OperatorError(std::string(op) + ": width and height must be positive");
  return {width, height};
}

} // namespace

void registerImageOperators(runtime::OperatorRegistry &registry) {
  registry.addTransform("image.grayscale", [](const OperatorConfig &config) {
    return std::make_unique<GrayscaleOperator>(config);
  });
  registry.addTransform("image.sharpness", [](const OperatorConfig &config) {
    return std::make_unique<SharpnessOperator>(config);
  });
  registry.addTransform("image.phash", [](const OperatorConfig &config) {
    return std::make_unique<PhashOperator>(config);
  });
  registry.addTransform("image.hamming",
                        [](const OperatorConfig &) { return std::make_unique<HammingOperator>(); });
  registry.addTransform("image.resize", [](const OperatorConfig &config) {
    const auto [width, height] = targetSize(config, "image.resize");
    return std::make_unique<ResizeOperator>(config, width, height);
  });
  registry.addTransform("image.tensor", [](const OperatorConfig &config) {
    const auto [width, height] = targetSize(config, "image.tensor");
    return std::make_unique<TensorOperator>(config, width, height);
  });
  registry.addTransform("image.motion", [](const OperatorConfig &config) {
    return std::make_unique<MotionOperator>(config);
  });
}

namespace {
CudaImageEngineFactory &engineFactory() {
  static CudaImageEngineFactory factory;
  return factory;
}
} // namespace

std::unique_ptr<CudaImageEngine> makeCudaImageEngine(int device, std::string &error) {
  return engineFactory() ? engineFactory()(device, error) : CudaImageEngine::create(device, error);
}

void setCudaImageEngineFactoryForTesting(CudaImageEngineFactory factory) {
  engineFactory() = std::move(factory);
}

} // namespace orch::stdlib
