// The image operators' arithmetic, as CPU reference implementations the CUDA kernels must
// match: grayscale (exact), Laplacian sums for sharpness (exact, integer), bilinear resize to
// 8-bit pixels (exact) or to a normalized float tensor (same float operations: equal, within
// 1e-5 by contract), the perceptual hash's DCT (same double operations in the same order:
// equal hashes) and frame differences for motion (exact, integer).
// C++17: nvcc compiles it too. The CPU side must not fuse multiply-adds either: build without
// -march flags that enable FMA contraction (x86-64's baseline has no FMA).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace orch::stdlib {

/// Packed 8-bit pixels without row padding: RGB when channels is 3, gray when 1.
struct ImageView {
  int64_t width = 0;
  int64_t height = 0;
  int64_t channels = 0;
  const uint8_t *pixels = nullptr;
};

/// The gray level of pixel `index` (BT.601 integer weights for RGB).
inline uint8_t grayAt(const uint8_t *pixels, int64_t channels, int64_t index) {
  if (channels == 1)
    return pixels[index];
  const uint8_t *p = pixels + 3 * index;
  return uint8_t((77u * p[0] + 150u * p[1] + 29u * p[2] + 128u) >> 8);
}

/// The gray levels of an image (a copy for a gray one); `out` holds width*height bytes.
void grayscale(const ImageView &image, uint8_t *out);

/// Sums of the 4-neighbour Laplacian over the interior pixels of an image's gray levels.
struct LaplacianSums {
  int64_t sum = 0;
  int64_t sumSquares = 0;
  int64_t count = 0;
};
LaplacianSums laplacianSums(const ImageView &image);
/// Variance of the Laplacian (0 for images smaller than 3x3).
double laplacianVariance(const LaplacianSums &sums);

/// Bilinear resize (pixel centres aligned, edges clamped) to `width` x `height` with the
/// source's channels, rounded to 8 bits; `out` holds width*height*channels bytes.
void resizeBilinear(const ImageView &image, int64_t width, int64_t height, uint8_t *out);

/// Per-channel normalization of a tensor: (value / 255 - mean) / std. ImageNet's statistics
/// for RGB; their averages for gray.
struct TensorNormalization {
  float mean[3];
  float std[3];
};
inline TensorNormalization tensorNormalization(int64_t channels) {
  if (channels == 1)
    return TensorNormalization{{0.449f, 0.449f, 0.449f}, {0.226f, 0.226f, 0.226f}};
  return TensorNormalization{{0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f}};
}
/// Bilinear resize (unrounded) then normalization into a float CHW tensor; `out` holds
/// channels*height*width floats.
void resizeNormalize(const ImageView &image, int64_t width, int64_t height, float *out);

/// pHash: the image's gray levels resized to 32x32, their 2-D DCT's 8x8 lowest frequencies
/// (row u, column v at [u * 8 + v]).
inline constexpr int kHashSide = 32;
/// cos((2x + 1) u pi / 64) at [u * 32 + x], u < 8, x < 32: the table both implementations use.
inline const double *dctCosines() {
  struct Table {
    double values[8 * kHashSide];
    Table() {
      for (int u = 0; u < 8; ++u)
        for (int x = 0; x < kHashSide; ++x)
          values[u * kHashSide + x] = std::cos((2 * x + 1) * u * 3.14159265358979323846 / 64);
    }
  };
  static const Table table;
  return table.values;
}
void phashCoefficients(const ImageView &image, double coefficients[64]);
/// One bit per coefficient except DC: set when above the median of the 63.
int64_t phashFromCoefficients(const double coefficients[64]);
int64_t perceptualHash(const ImageView &image);
/// A hash as image.phash returns it: 16 lowercase hex digits (exact in every JSON reader).
std::string phashHex(int64_t hash);
/// The bits in which two such hashes differ (0-64), or -1 when one is not 16 hex digits.
int hashDistance(std::string_view a, std::string_view b);

/// Sum over pixels of |gray(a) - gray(b)|; the images have the same width and height.
uint64_t grayDifferenceSum(const ImageView &a, const ImageView &b);
/// Mean absolute gray difference (0..255) of a pair of frames of `pixelCount` pixels.
inline double meanDifference(uint64_t differenceSum, int64_t pixelCount) {
  return pixelCount > 0 ? double(differenceSum) / double(pixelCount) : 0.0;
}

} // namespace orch::stdlib
