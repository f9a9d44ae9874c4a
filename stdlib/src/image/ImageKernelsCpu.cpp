// CPU reference implementations of the image kernels (see ImageKernels.h). The CUDA kernels in
// src/cuda/ImageKernels.cu repeat these operations in the same order.
#include "orch/stdlib/ImageKernels.h"

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <vector>

namespace orch::stdlib {
namespace {

/// The bilinear sample of channel `c` at output pixel (x, y), before rounding.
double bilinearSample(const ImageView &image, double scaleX, double scaleY, int64_t x, int64_t y,
                      int64_t c) {
  const double sy = std::clamp((double(y) + 0.5) * scaleY - 0.5, 0.0, double(image.height - 1));
  const int64_t y0 = int64_t(sy), y1 = std::min(y0 + 1, image.height - 1);
  const double fy = sy - double(y0);
  const double sx = std::clamp((double(x) + 0.5) * scaleX - 0.5, 0.0, double(image.width - 1));
  const int64_t x0 = int64_t(sx), x1 = std::min(x0 + 1, image.width - 1);
  const double fx = sx - double(x0);
  auto at = [&](int64_t px, int64_t py) {
    return double(image.pixels[(py * image.width + px) * image.channels + c]);
  };
  const double top = at(x0, y0) * (1 - fx) + at(x1, y0) * fx;
  const double bottom = at(x0, y1) * (1 - fx) + at(x1, y1) * fx;
  return top * (1 - fy) + bottom * fy;
}

} // namespace

void grayscale(const ImageView &image, uint8_t *out) {
  for (int64_t i = 0; i < image.width * image.height; ++i)
    out[i] = grayAt(image.pixels, image.channels, i);
}

LaplacianSums laplacianSums(const ImageView &image) {
  LaplacianSums sums;
  const int64_t w = image.width, h = image.height;
  if (w < 3 || h < 3)
    return sums;
  std::vector<uint8_t> gray(size_t(w * h));
  grayscale(image, gray.data());
  for (int64_t y = 1; y + 1 < h; ++y)
    for (int64_t x = 1; x + 1 < w; ++x) {
      const int64_t i = y * w + x;
      const int64_t value = int64_t(gray[size_t(i - 1)]) + gray[size_t(i + 1)] +
                            gray[size_t(i - w)] + gray[size_t(i + w)] -
                            4 * int64_t(gray[size_t(i)]);
      sums.sum += value;
      sums.sumSquares += value * value;
    }
  sums.count = (w - 2) * (h - 2);
  return sums;
}

double laplacianVariance(const LaplacianSums &sums) {
  if (sums.count == 0)
    return 0;
  const double n = double(sums.count);
  const double mean = double(sums.sum) / n;
  return double(sums.sumSquares) / n - mean * mean;
}

void resizeBilinear(const ImageView &image, int64_t width, int64_t height, uint8_t *out) {
  const double scaleX = double(image.width) / double(width);
  const double scaleY = double(image.height) / double(height);
  for (int64_t y = 0; y < height; ++y)
    for (int64_t x = 0; x < width; ++x)
      for (int64_t c = 0; c < image.channels; ++c)
        out[(y * width + x) * image.channels + c] =
            uint8_t(std::llround(bilinearSample(image, scaleX, scaleY, x, y, c)));
}

void resizeNormalize(const ImageView &image, int64_t width, int64_t height, float *out) {
  const double scaleX = double(image.width) / double(width);
  const double scaleY = double(image.height) / double(height);
  const TensorNormalization normalization = tensorNormalization(image.channels);
  for (int64_t c = 0; c < image.channels; ++c)
    for (int64_t y = 0; y < height; ++y)
      for (int64_t x = 0; x < width; ++x) {
        const float value = float(bilinearSample(image, scaleX, scaleY, x, y, c));
        out[(c * height + y) * width + x] =
            (value / 255.0f - normalization.mean[c]) / normalization.std[c];
      }
}

void phashCoefficients(const ImageView &image, double coefficients[64]) {
  std::vector<uint8_t> gray(size_t(image.width * image.height));
  grayscale(image, gray.data());
  uint8_t small[kHashSide * kHashSide];
  resizeBilinear(ImageView{image.width, image.height, 1, gray.data()}, kHashSide, kHashSide, small);
  const double *cosines = dctCosines();
  for (int u = 0; u < 8; ++u)
    for (int v = 0; v < 8; ++v) {
      double sum = 0;
      for (int y = 0; y < kHashSide; ++y)
        for (int x = 0; x < kHashSide; ++x)
          sum += double(small[y * kHashSide + x]) * cosines[u * kHashSide + x] *
                 cosines[v * kHashSide + y];
      coefficients[u * 8 + v] = sum;
    }
}

int64_t phashFromCoefficients(const double coefficients[64]) {
  std::array<double, 63> acTerms;
  std::copy(coefficients + 1, coefficients + 64, acTerms.begin());
  std::array<double, 63> sorted = acTerms;
  std::nth_element(sorted.begin(), sorted.begin() + 31, sorted.end());
  const double median = sorted[31];
  uint64_t hash = 0;
  for (size_t i = 0; i < acTerms.size(); ++i)
    if (acTerms[i] > median)
      hash |= uint64_t(1) << i;
  return int64_t(hash);
}

int64_t perceptualHash(const ImageView &image) {
  double coefficients[64];
  phashCoefficients(image, coefficients);
  return phashFromCoefficients(coefficients);
}

std::string phashHex(int64_t hash) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
  return text;
}

int hashDistance(std::string_view a, std::string_view b) {
  auto parse = [](std::string_view text, uint64_t &value) {
    if (text.size() != 16)
      return false;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value, 16);
    return error == std::errc() && end == text.data() + text.size();
  };
  uint64_t x = 0, y = 0;
  if (!parse(a, x) || !parse(b, y))
    return -1;
  return std::popcount(x ^ y);
}

uint64_t grayDifferenceSum(const ImageView &a, const ImageView &b) {
  uint64_t sum = 0;
  for (int64_t i = 0; i < a.width * a.height; ++i) {
    const int difference =
        int(grayAt(a.pixels, a.channels, i)) - int(grayAt(b.pixels, b.channels, i));
    sum += uint64_t(difference < 0 ? -difference : difference);
  }
  return sum;
}

} // namespace orch::stdlib
