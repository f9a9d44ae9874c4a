// Grayscale: the CPU reference on known pixels, and the CUDA kernel's exact parity with it
// (skipped with the reason when there is no CUDA build or no device).
#include "orch/stdlib/Grayscale.h"
#include "orch/stdlib/CudaDevices.h"

#include <gtest/gtest.h>

#include <random>

namespace orch::stdlib {
namespace {

TEST(GrayscaleTest, CpuReferenceWeightsChannelsLikeBt601) {
  const std::vector<uint8_t> rgb = {0, 0, 0, 255, 255, 255, 255, 0, 0, 0, 255, 0, 0, 0, 255};
  std::vector<uint8_t> gray(5);
  grayscaleRgb8(rgb.data(), 5, gray.data());
  EXPECT_EQ(gray, (std::vector<uint8_t>{0, 255, 77, 149, 29}));
}

TEST(GrayscaleTest, CudaDeviceDiscoveryExplainsAnAbsence) {
  CudaDeviceCount devices = countCudaDevices();
  EXPECT_GE(devices.count, 0);
  EXPECT_EQ(devices.count == 0, !devices.reason.empty()) << devices.reason;
}

TEST(GrayscaleTest, GpuMatchesCpuReferenceExactly) {
  CudaDeviceCount devices = countCudaDevices();
  if (devices.count == 0)
    GTEST_SKIP() << devices.reason;
  std::mt19937 random(3);
  for (size_t pixels : {size_t(1), size_t(255), size_t(256), size_t(1920 * 1080 + 7)}) {
    std::vector<uint8_t> rgb(3 * pixels);
    for (uint8_t &value : rgb)
      value = uint8_t(random());
    std::vector<uint8_t> expected(pixels), actual(pixels);
    grayscaleRgb8(rgb.data(), pixels, expected.data());
    std::string error;
    ASSERT_TRUE(grayscaleRgb8OnGpu(rgb.data(), pixels, actual.data(), error)) << error;
    EXPECT_EQ(actual, expected) << pixels << " pixels";
  }
}

} // namespace
} // namespace orch::stdlib
