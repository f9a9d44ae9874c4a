// image.grayscale (on the GPU when the Call asks for one and a device is present), and the
// CPU operators image.sharpness (variance of the Laplacian), image.resize (bilinear) and
// image.phash (64-bit DCT perceptual hash).
#include "ImageValue.h"
#include "OperatorGroups.h"

#include "orch/stdlib/Grayscale.h"

#include <algorithm>
#include <cmath>
#include <functional>

namespace orch::stdlib {
namespace {

using runtime::OperatorConfig;
using runtime::OperatorRow;
using runtime::RowResult;
using runtime::Value;

/// Gray levels of any image (a copy for RGB, the pixels for gray).
std::vector<uint8_t> grayLevels(const ImageView &image) {
  const size_t count = size_t(image.width * image.height);
  std::vector<uint8_t> gray(count);
  if (image.channels == 1)
    std::copy(image.pixels, image.pixels + count, gray.begin());
  else
    grayscaleRgb8(image.pixels, count, gray.data());
  return gray;
}

double laplacianVariance(const ImageView &image) {
  const std::vector<uint8_t> gray = grayLevels(image);
  const int64_t w = image.width, h = image.height;
  if (w < 3 || h < 3)
    return 0;
  double sum = 0, sumSquares = 0;
  for (int64_t y = 1; y + 1 < h; ++y)
    for (int64_t x = 1; x + 1 < w; ++x) {
      const double value = double(gray[size_t(y * w + x - 1)]) + gray[size_t(y * w + x + 1)] +
                           gray[size_t((y - 1) * w + x)] + gray[size_t((y + 1) * w + x)] -
                           4.0 * gray[size_t(y * w + x)];
      sum += value;
      sumSquares += value * value;
    }
  const double n = double((w - 2) * (h - 2));
  const double mean = sum / n;
  return sumSquares / n - mean * mean;
}

std::string resizeBilinear(const ImageView &image, int64_t width, int64_t height) {
  std::string out(size_t(width * height * image.channels), '\0');
  const double scaleX = double(image.width) / double(width);
  const double scaleY = double(image.height) / double(height);
  for (int64_t y = 0; y < height; ++y) {
    const double sy = std::clamp((double(y) + 0.5) * scaleY - 0.5, 0.0, double(image.height - 1));
    const int64_t y0 = int64_t(sy), y1 = std::min(y0 + 1, image.height - 1);
    const double fy = sy - double(y0);
    for (int64_t x = 0; x < width; ++x) {
      const double sx = std::clamp((double(x) + 0.5) * scaleX - 0.5, 0.0, double(image.width - 1));
      const int64_t x0 = int64_t(sx), x1 = std::min(x0 + 1, image.width - 1);
      const double fx = sx - double(x0);
      for (int64_t c = 0; c < image.channels; ++c) {
        auto at = [&](int64_t px, int64_t py) {
          return double(image.pixels[size_t((py * image.width + px) * image.channels + c)]);
        };
        const double top = at(x0, y0) * (1 - fx) + at(x1, y0) * fx;
        const double bottom = at(x0, y1) * (1 - fx) + at(x1, y1) * fx;
        out[size_t((y * width + x) * image.channels + c)] =
            char(uint8_t(std::lround(top * (1 - fy) + bottom * fy)));
      }
    }
  }
  return out;
}

/// pHash: 32x32 gray, 2-D DCT, the 8x8 lowest frequencies (without DC) against their median.
int64_t perceptualHash(const ImageView &image) {
  std::vector<uint8_t> gray = grayLevels(image);
  const ImageView grayView{image.width, image.height, 1, gray.data()};
  const std::string small = resizeBilinear(grayView, 32, 32);
  double dct[8][8];
  for (int u = 0; u < 8; ++u)
    for (int v = 0; v < 8; ++v) {
      double sum = 0;
      for (int y = 0; y < 32; ++y)
        for (int x = 0; x < 32; ++x)
          sum += double(uint8_t(small[size_t(y * 32 + x)])) *
                 std::cos((2 * x + 1) * u * M_PI / 64) * std::cos((2 * y + 1) * v * M_PI / 64);
      dct[u][v] = sum;
    }
  std::vector<double> coefficients;
  for (int u = 0; u < 8; ++u)
    for (int v = 0; v < 8; ++v)
      if (u || v)
        coefficients.push_back(dct[u][v]);
  std::vector<double> sorted = coefficients;
  std::nth_element(sorted.begin(), sorted.begin() + 31, sorted.end());
  const double median = sorted[31];
  uint64_t hash = 0;
  for (size_t i = 0; i < coefficients.size(); ++i)
    if (coefficients[i] > median)
      hash |= uint64_t(1) << i;
  return int64_t(hash);
}

class ImageFunction : public runtime::Operator {
public:
  using Function = std::function<RowResult(const ImageView &)>;
  explicit ImageFunction(Function function) : function_(std::move(function)) {}
  void process(std::span<const OperatorRow> rows, std::vector<RowResult> &results) override {
    for (const OperatorRow &row : rows) {
      std::string problem;
      std::optional<ImageView> image = imageView(row.inputs[0], problem);
      results.push_back(image ? function_(*image) : RowResult::recordFailure(problem));
    }
  }

private:
  Function function_;
};

/// Grayscale on the GPU when the Call asks for GPUs and one is usable, else on the CPU; both
/// give identical pixels.
class GrayscaleOperator : public runtime::Operator {
public:
  explicit GrayscaleOperator(bool useGpu) : useGpu_(useGpu) {}
  void process(std::span<const OperatorRow> rows, std::vector<RowResult> &results) override {
    for (const OperatorRow &row : rows) {
      std::string problem;
      std::optional<ImageView> image = imageView(row.inputs[0], problem);
      if (!image) {
        results.push_back(RowResult::recordFailure(problem));
        continue;
      }
      if (image->channels == 1) {
        results.push_back(RowResult::ok(row.inputs[0]));
        continue;
      }
      const size_t count = size_t(image->width * image->height);
      std::string gray(count, '\0');
      uint8_t *out = reinterpret_cast<uint8_t *>(gray.data());
      std::string gpuError;
      if (!useGpu_ || !grayscaleRgb8OnGpu(image->pixels, count, out, gpuError)) {
        useGpu_ = false;
        grayscaleRgb8(image->pixels, count, out);
      }
      results.push_back(RowResult::ok(makeImage(image->width, image->height, 1, std::move(gray))));
    }
  }

private:
  bool useGpu_;
};

} // namespace

void registerImageOperators(runtime::OperatorRegistry &registry) {
  registry.addTransform("image.grayscale", [](const OperatorConfig &config) {
    return std::make_unique<GrayscaleOperator>(config.gpus() > 0);
  });
  registry.addTransform("image.sharpness", [](const OperatorConfig &) {
    return std::make_unique<ImageFunction>([](const ImageView &image) {
      return RowResult::ok(Value::real(laplacianVariance(image)));
    });
  });
  registry.addTransform("image.phash", [](const OperatorConfig &) {
    return std::make_unique<ImageFunction>([](const ImageView &image) {
      return RowResult::ok(Value::integer(perceptualHash(image)));
    });
  });
  registry.addTransform("image.resize", [](const OperatorConfig &config) {
    const int64_t width = config.intConstant("width"), height = config.intConstant("height");
    if (width <= 0 || height <= 0)
      throw runtime::OperatorError("image.resize: width and height must be positive");
    return std::make_unique<ImageFunction>([width, height](const ImageView &image) {
      return RowResult::ok(
          makeImage(width, height, image.channels, resizeBilinear(image, width, height)));
    });
  });
}

} // namespace orch::stdlib
