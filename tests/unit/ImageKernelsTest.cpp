// The image kernels: the CPU references on images whose answers are known, and the CUDA
// engine's parity with them on random batches that cross chunk boundaries (skipped, with the
// reason, when there is no CUDA build or no device).
#include "orch/stdlib/ImageKernels.h"
#include "orch/stdlib/CudaDevices.h"
#include "orch/stdlib/CudaImageEngine.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <random>

namespace orch::stdlib {
namespace {

struct OwnedImage {
  int64_t width, height, channels;
  std::vector<uint8_t> pixels;
  ImageView view() const { return ImageView{width, height, channels, pixels.data()}; }
};

OwnedImage randomImage(std::mt19937 &random, int64_t width, int64_t height, int64_t channels) {
  OwnedImage image{width, height, channels,
                   std::vector<uint8_t>(size_t(width * height * channels))};
  for (uint8_t &value : image.pixels)
    value = uint8_t(random());
  return image;
}

/// Smooth content (a gradient with a little noise), closer to real frames than noise.
OwnedImage smoothImage(std::mt19937 &random, int64_t width, int64_t height, int64_t channels) {
  OwnedImage image = randomImage(random, width, height, channels);
  for (int64_t y = 0; y < height; ++y)
    for (int64_t x = 0; x < width; ++x)
      for (int64_t c = 0; c < channels; ++c) {
        uint8_t &value = image.pixels[size_t((y * width + x) * channels + c)];
        value = uint8_t((x * 255 / width + y * 128 / height + c * 40 + value % 8) % 256);
      }
  return image;
}

TEST(ImageKernelsTest, GrayscaleWeightsChannelsLikeBt601) {
  const std::vector<uint8_t> rgb = {0, 0, 0, 255, 255, 255, 255, 0, 0, 0, 255, 0, 0, 0, 255};
  std::vector<uint8_t> gray(5);
  grayscale(ImageView{5, 1, 3, rgb.data()}, gray.data());
  EXPECT_EQ(gray, (std::vector<uint8_t>{0, 255, 77, 149, 29}));
}

TEST(ImageKernelsTest, LaplacianVarianceOfKnownImages) {
  std::vector<uint8_t> flat(16 * 16, 90);
  EXPECT_EQ(laplacianVariance(laplacianSums(ImageView{16, 16, 1, flat.data()})), 0.0);
  // A one-pixel checkerboard of 0 and 255: every interior Laplacian is +-1020.
  std::vector<uint8_t> checker(8 * 8);
  for (int i = 0; i < 64; ++i)
    checker[size_t(i)] = ((i / 8 + i % 8) % 2) ? 255 : 0;
  LaplacianSums sums = laplacianSums(ImageView{8, 8, 1, checker.data()});
  EXPECT_EQ(sums.count, 36);
  EXPECT_EQ(sums.sum, 0);
  EXPECT_EQ(sums.sumSquares, 36 * 1020 * 1020);
  EXPECT_DOUBLE_EQ(laplacianVariance(sums), 1020.0 * 1020.0);
  EXPECT_EQ(laplacianVariance(laplacianSums(ImageView{2, 2, 1, checker.data()})), 0.0);
}

TEST(ImageKernelsTest, ResizeKeepsConstantsAndInterpolatesBetweenPixels) {
  const std::vector<uint8_t> constant(7 * 5 * 3, 200);
  std::vector<uint8_t> out(13 * 9 * 3);
  resizeBilinear(ImageView{7, 5, 3, constant.data()}, 13, 9, out.data());
  for (uint8_t value : out)
    ASSERT_EQ(value, 200);
  // 2x1 gray {0, 100} to 4x1: sample centres at -0.25, 0.25, 0.75, 1.25 (clamped).
  const std::vector<uint8_t> pair = {0, 100};
  std::vector<uint8_t> wide(4);
  resizeBilinear(ImageView{2, 1, 1, pair.data()}, 4, 1, wide.data());
  EXPECT_EQ(wide, (std::vector<uint8_t>{0, 25, 75, 100}));
}

TEST(ImageKernelsTest, TensorIsNormalizedChannelMajor) {
  std::vector<uint8_t> white(4 * 2 * 3, 255);
  white[0] = 0; // pixel (0, 0) has no red
  std::vector<float> tensor(2 * 2 * 3);
  resizeNormalize(ImageView{4, 2, 3, white.data()}, 2, 2, tensor.data());
  const TensorNormalization n = tensorNormalization(3);
  // Green and blue planes are all white.
  for (int i = 4; i < 12; ++i)
    EXPECT_FLOAT_EQ(tensor[size_t(i)], (1.0f - n.mean[i / 4]) / n.std[i / 4]) << i;
  // Output (0, 0) samples the 4-wide source at x = 0.5: half of pixel 0 (no red) and half of
  // pixel 1 (red 255), so red is 127.5; output (1, 0) samples x = 2.5, all white.
  EXPECT_NEAR(tensor[0], (127.5f / 255.0f - n.mean[0]) / n.std[0], 1e-6);
  EXPECT_FLOAT_EQ(tensor[1], (1.0f - n.mean[0]) / n.std[0]);
}

TEST(ImageKernelsTest, PerceptualHashIgnoresScaleAndSeesContent) {
  std::mt19937 random(5);
  OwnedImage image = smoothImage(random, 320, 240, 3);
  std::vector<uint8_t> half(160 * 120 * 3);
  resizeBilinear(image.view(), 160, 120, half.data());
  const int64_t hash = perceptualHash(image.view());
  const int64_t halfHash = perceptualHash(ImageView{160, 120, 3, half.data()});
  EXPECT_LE(std::popcount(uint64_t(hash ^ halfHash)), 4) << "a resized copy hashes alike";
  OwnedImage noise = randomImage(random, 320, 240, 3);
  EXPECT_GE(std::popcount(uint64_t(hash ^ perceptualHash(noise.view()))), 12);
  double coefficients[64];
  phashCoefficients(image.view(), coefficients);
  EXPECT_EQ(phashFromCoefficients(coefficients), hash);
}

TEST(ImageKernelsTest, MotionIsTheMeanGrayDifference) {
  std::vector<uint8_t> dark(10 * 10, 10), light(10 * 10, 250);
  const ImageView a{10, 10, 1, dark.data()}, b{10, 10, 1, light.data()};
  EXPECT_EQ(grayDifferenceSum(a, a), 0u);
  EXPECT_EQ(grayDifferenceSum(a, b), 100u * 240u);
  EXPECT_DOUBLE_EQ(meanDifference(grayDifferenceSum(b, a), 100), 240.0);
}

TEST(ImageKernelsTest, CudaDeviceDiscoveryExplainsAnAbsence) {
  CudaDeviceCount devices = countCudaDevices();
  EXPECT_GE(devices.count, 0);
  EXPECT_EQ(devices.count == 0, !devices.reason.empty()) << devices.reason;
  EXPECT_FALSE(devices.broken) << "a GPU is there but cannot be used: " << devices.reason;
  std::string error;
  if (devices.count == 0) {
    EXPECT_EQ(CudaImageEngine::create(0, error), nullptr);
    EXPECT_FALSE(error.empty());
  }
}

/// A batch with every shape the kernels must handle: gray and RGB, tiny (1x1, 2x2: no
/// interior), odd sizes, a full-HD frame (its own chunk), and enough images to need several
/// chunks.
std::vector<OwnedImage> parityBatch() {
  std::mt19937 random(11);
  std::vector<OwnedImage> images;
  images.push_back(randomImage(random, 1, 1, 3));
  images.push_back(randomImage(random, 2, 2, 1));
  images.push_back(randomImage(random, 3, 3, 3));
  images.push_back(smoothImage(random, 1920, 1080, 3));
  for (int i = 0; i < 40; ++i)
    images.push_back(i % 3 ? smoothImage(random, 97 + 13 * i, 61 + 7 * i, i % 4 ? 3 : 1)
                           : randomImage(random, 640, 480, 3));
  return images;
}

std::unique_ptr<CudaImageEngine> engineOrSkip() {
  CudaDeviceCount devices = countCudaDevices();
  // Only a machine without a GPU skips; one whose GPU fails (an old driver) fails.
  EXPECT_FALSE(devices.broken) << devices.reason;
  if (devices.count == 0)
    return nullptr;
  std::string error;
  std::unique_ptr<CudaImageEngine> engine = CudaImageEngine::create(0, error);
  EXPECT_NE(engine, nullptr) << error;
  return engine;
}

#define REQUIRE_GPU(engine)                                                                        \
  std::unique_ptr<CudaImageEngine> engine = engineOrSkip();                                        \
  if (!engine && !countCudaDevices().broken)                                                       \
    GTEST_SKIP() << countCudaDevices().reason;                                                     \
  if (!engine)                                                                                     \
    return;

std::vector<ImageView> viewsOf(const std::vector<OwnedImage> &images) {
  std::vector<ImageView> views;
  for (const OwnedImage &image : images)
    views.push_back(image.view());
  return views;
}

TEST(ImageKernelsGpuTest, GrayscaleAndSharpnessEqualTheCpu) {
  REQUIRE_GPU(engine);
  const std::vector<OwnedImage> images = parityBatch();
  const std::vector<ImageView> views = viewsOf(images);
  std::vector<std::vector<uint8_t>> gray;
  std::vector<uint8_t *> outputs;
  for (const ImageView &view : views)
    gray.emplace_back(size_t(view.width * view.height));
  for (auto &buffer : gray)
    outputs.push_back(buffer.data());
  std::string error;
  ASSERT_TRUE(engine->grayscale(views.data(), views.size(), outputs.data(), error)) << error;
  EXPECT_GT(engine->lastTiming().chunks, 1u);
  std::vector<LaplacianSums> sums(views.size());
  ASSERT_TRUE(engine->laplacianSums(views.data(), views.size(), sums.data(), error)) << error;
  for (size_t i = 0; i < views.size(); ++i) {
    std::vector<uint8_t> expected(gray[i].size());
    grayscale(views[i], expected.data());
    EXPECT_EQ(gray[i], expected) << "image " << i;
    const LaplacianSums reference = laplacianSums(views[i]);
    EXPECT_EQ(sums[i].sum, reference.sum) << "image " << i;
    EXPECT_EQ(sums[i].sumSquares, reference.sumSquares) << "image " << i;
    EXPECT_EQ(sums[i].count, reference.count) << "image " << i;
  }
}

TEST(ImageKernelsGpuTest, ResizeAndTensorEqualTheCpu) {
  REQUIRE_GPU(engine);
  const std::vector<OwnedImage> images = parityBatch();
  const std::vector<ImageView> views = viewsOf(images);
  for (auto [width, height] : {std::pair<int64_t, int64_t>{224, 224}, {7, 300}}) {
    std::vector<std::vector<uint8_t>> resized;
    std::vector<std::vector<float>> tensors;
    std::vector<uint8_t *> resizedOut;
    std::vector<float *> tensorOut;
    for (const ImageView &view : views) {
      resized.emplace_back(size_t(width * height * view.channels));
      tensors.emplace_back(size_t(width * height * view.channels));
    }
    for (size_t i = 0; i < views.size(); ++i) {
      resizedOut.push_back(resized[i].data());
      tensorOut.push_back(tensors[i].data());
    }
    std::string error;
    ASSERT_TRUE(engine->resize(views.data(), views.size(), width, height, resizedOut.data(), error))
        << error;
    ASSERT_TRUE(
        engine->resizeNormalize(views.data(), views.size(), width, height, tensorOut.data(), error))
        << error;
    for (size_t i = 0; i < views.size(); ++i) {
      std::vector<uint8_t> expected(resized[i].size());
      resizeBilinear(views[i], width, height, expected.data());
      EXPECT_EQ(resized[i], expected) << "image " << i;
      std::vector<float> expectedTensor(tensors[i].size());
      resizeNormalize(views[i], width, height, expectedTensor.data());
      float worst = 0;
      for (size_t k = 0; k < expectedTensor.size(); ++k)
        worst = std::max(worst, std::abs(expectedTensor[k] - tensors[i][k]));
      EXPECT_LE(worst, 1e-5f) << "image " << i << " (the contract's tolerance)";
      EXPECT_EQ(worst, 0.0f) << "image " << i << " (no fused multiply-adds: equal)";
    }
  }
}

TEST(ImageKernelsGpuTest, PerceptualHashesAndMotionEqualTheCpu) {
  REQUIRE_GPU(engine);
  const std::vector<OwnedImage> images = parityBatch();
  const std::vector<ImageView> views = viewsOf(images);
  std::vector<std::array<double, 64>> coefficients(views.size());
  auto *rows = reinterpret_cast<double(*)[64]>(coefficients.data());
  std::string error;
  ASSERT_TRUE(engine->phashCoefficients(views.data(), views.size(), rows, error)) << error;
  for (size_t i = 0; i < views.size(); ++i) {
    double expected[64];
    phashCoefficients(views[i], expected);
    EXPECT_EQ(std::memcmp(expected, rows[i], sizeof expected), 0) << "image " << i;
    EXPECT_EQ(phashFromCoefficients(rows[i]), perceptualHash(views[i])) << "image " << i;
  }
  // Clips of frames of one size: consecutive pairs share frames.
  std::mt19937 random(17);
  std::vector<OwnedImage> frames;
  for (int i = 0; i < 30; ++i)
    frames.push_back(i % 2 ? smoothImage(random, 320, 180, 3) : randomImage(random, 320, 180, 1));
  std::vector<ImageView> first, second;
  for (size_t i = 1; i < frames.size(); ++i) {
    first.push_back(frames[i - 1].view());
    second.push_back(frames[i].view());
  }
  std::vector<uint64_t> sums(first.size());
  ASSERT_TRUE(
      engine->grayDifferenceSums(first.data(), second.data(), first.size(), sums.data(), error))
      << error;
  for (size_t i = 0; i < first.size(); ++i)
    EXPECT_EQ(sums[i], grayDifferenceSum(first[i], second[i])) << "pair " << i;
}

TEST(ImageKernelsGpuTest, BuffersAreReusedAcrossBatches) {
  REQUIRE_GPU(engine);
  const std::vector<OwnedImage> images = parityBatch();
  const std::vector<ImageView> views = viewsOf(images);
  std::vector<LaplacianSums> sums(views.size());
  std::string error;
  for (int round = 0; round < 3; ++round) {
    ASSERT_TRUE(engine->laplacianSums(views.data(), views.size(), sums.data(), error)) << error;
    EXPECT_GT(engine->lastTiming().kernelMs, 0.0);
    EXPECT_GT(engine->lastTiming().bytesToDevice, 0u);
  }
  for (size_t i = 0; i < views.size(); ++i)
    EXPECT_EQ(sums[i].sumSquares, laplacianSums(views[i]).sumSquares);
}

} // namespace
} // namespace orch::stdlib
