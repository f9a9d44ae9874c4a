// The GPU path without a GPU: what each CUDA error means, how batches are cut into chunks, how
// staging buffers grow, and an image operator whose GPU engine fails in the middle of a batch
// (an injected engine): the batch is redone on the CPU with identical rows, and the failure is
// logged with its device.
#include "orch/stdlib/GpuBatching.h"
#include "orch/runtime/operators/Operator.h"
#include "orch/stdlib/CudaImageEngine.h"
#include "orch/stdlib/ImageKernels.h"
#include "orch/stdlib/StandardOperators.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace orch::stdlib {
namespace {

using runtime::OperatorConfig;
using runtime::OperatorRow;
using runtime::RowResult;
using runtime::Value;

TEST(GpuBatchingTest, OnlyAMissingGpuIsAbsenceEveryOtherErrorIsLoud) {
  using namespace cuda_errors;
  EXPECT_EQ(classifyCudaError(kNoDevice, 12020), CudaErrorClass::Absent);
  EXPECT_EQ(classifyCudaError(kInsufficientDriver, 0), CudaErrorClass::Absent)
      << "no driver installed at all: a machine without a GPU";
  EXPECT_EQ(classifyCudaError(kInsufficientDriver, 12020), CudaErrorClass::Broken)
      << "a driver older than the runtime: the GPU must not go silently unused";
  EXPECT_EQ(classifyCudaError(46, 13000), CudaErrorClass::Broken) << "devices unavailable";
  EXPECT_EQ(classifyCudaError(kMemoryAllocation, 13000), CudaErrorClass::Transient);
  for (int sticky : {kIllegalAddress, kLaunchFailure, kEccUncorrectable, kMisalignedAddress})
    EXPECT_EQ(classifyCudaError(sticky, 13000), CudaErrorClass::Sticky) << sticky;
  EXPECT_EQ(cudaVersionText(13000), "13.0");
  EXPECT_EQ(cudaVersionText(12020), "12.2");
  EXPECT_EQ(cudaVersionText(0), "none");
}

TEST(GpuBatchingTest, ChunksAreCappedByOutputBytesToo) {
  // 1024 thumbnails of 64x64 RGB (12 KiB each) become 224x224x3 float tensors (588 KiB each):
  // capped by input alone, one chunk would need 588 MiB of output staging per slot.
  const size_t in = 64 * 64 * 3, out = 224 * 224 * 3 * sizeof(float);
  const size_t count = gpuChunkLength(
      0, 1024, [&](size_t) { return in; }, [&](size_t) { return out; });
  EXPECT_EQ(count, kGpuChunkBytes / out);
  EXPECT_LE(count * out, kGpuChunkBytes);
  // Small outputs: input decides, and the item cap holds.
  EXPECT_EQ(gpuChunkLength(
                0, 5000, [](size_t) { return size_t(100); }, [](size_t) { return size_t(8); }),
            kGpuChunkItems);
  EXPECT_EQ(gpuChunkLength(
                0, 10, [](size_t) { return size_t(10) << 20; }, [](size_t) { return size_t(8); }),
            1u);
  // One image larger than a chunk still gets one, on its own.
  EXPECT_EQ(gpuChunkLength(
                3, 10, [](size_t) { return size_t(8); }, [](size_t) { return size_t(40) << 20; }),
            1u);
  EXPECT_EQ(gpuChunkLength(
                9, 10, [](size_t) { return size_t(1); }, [](size_t) { return size_t(1); }),
            1u)
      << "the last item";
}

TEST(GpuBatchingTest, StagingBuffersAtLeastDoubleWhenTheyGrow) {
  EXPECT_EQ(grownCapacity(0, 100), 100u);
  EXPECT_EQ(grownCapacity(100, 80), 100u) << "fits: unchanged";
  EXPECT_EQ(grownCapacity(100, 120), 200u) << "a small growth doubles";
  EXPECT_EQ(grownCapacity(100, 500), 500u);
  size_t capacity = 0, reallocations = 0;
  for (size_t bytes = 1000; bytes <= 1000000; bytes += 1000) {
    const size_t next = grownCapacity(capacity, bytes);
    reallocations += next != capacity;
    capacity = next;
  }
  EXPECT_LE(reallocations, 11u) << "a batch creeping up 1000 times reallocates ~log2 times";
}

/// A GPU engine that fails in the middle of a batch: it writes garbage into half of the outputs
/// and reports `code`.
class FailingEngine : public CudaImageEngine {
public:
  FailingEngine(int device, int code, int *calls) : CudaImageEngine(device), calls_(calls) {
    lastError_ = 0;
    code_ = code;
  }
  bool grayscale(const ImageView *images, size_t count, uint8_t *const *outputs,
                 std::string &error) override {
    ++*calls_;
    for (size_t i = 0; i < count / 2; ++i)
      std::memset(outputs[i], 0xAB, size_t(images[i].width * images[i].height));
    lastError_ = code_;
    error = "injected failure (error " + std::to_string(code_) + ")";
    return false;
  }
  bool laplacianSums(const ImageView *, size_t, LaplacianSums *, std::string &) override {
    return false;
  }
  bool resize(const ImageView *, size_t, int64_t, int64_t, uint8_t *const *,
              std::string &) override {
    return false;
  }
  bool resizeNormalize(const ImageView *, size_t, int64_t, int64_t, float *const *,
                       std::string &) override {
    return false;
  }
  bool phashCoefficients(const ImageView *, size_t, double (*)[64], std::string &) override {
    return false;
  }
  bool grayDifferenceSums(const ImageView *, const ImageView *, size_t, uint64_t *,
                          std::string &) override {
    return false;
  }

private:
  int *calls_;
  int code_ = 0;
};

Value grayImage(int64_t seed) {
  std::string pixels;
  for (int64_t i = 0; i < 12 * 7 * 3; ++i)
    pixels += char((i * (seed + 3) + seed) % 251);
  return Value::record({{"width", Value::integer(12)},
                        {"height", Value::integer(7)},
                        {"channels", Value::integer(3)},
                        {"pixels", Value::bytes(pixels)}});
}

class InjectedEngine : public ::testing::Test {
protected:
  void TearDown() override { setCudaImageEngineFactoryForTesting({}); }

  /// Runs image.grayscale over `batches` batches of 6 images on a replica of GPU `device`.
  std::vector<std::vector<RowResult>> run(double gpus, int64_t device, int batches) {
    runtime::OperatorRegistry registry;
    registerStandardOperators(registry);
    plan::CallOptions options;
    options.gpus = gpus;
    std::vector<plan::NamedConstant> constants;
    OperatorConfig config("gray", "image.grayscale", constants, {});
    config.withOptions(options).withGpuDevice(device).withLog(
        [this](const std::string &line) { log_.push_back(line); });
    std::unique_ptr<runtime::Operator> instance = (*registry.transform("image.grayscale"))(config);
    std::vector<Value> images;
    for (int64_t i = 0; i < 6; ++i)
      images.push_back(grayImage(i));
    std::vector<std::vector<RowResult>> results(batches);
    for (std::vector<RowResult> &batch : results) {
      std::vector<OperatorRow> rows;
      for (const Value &image : images)
        rows.push_back(OperatorRow{std::span<const Value>(&image, 1), runtime::GrainLineage{}});
      instance->process(rows, batch);
    }
    return results;
  }

  std::vector<std::string> log_;
};

TEST_F(InjectedEngine, AStickyFailureMidBatchIsRedoneOnTheCpuAndTheGpuIsGivenUp) {
  const std::vector<std::vector<RowResult>> cpu = run(0, -1, 1);
  int created = 0, calls = 0;
  setCudaImageEngineFactoryForTesting([&](int device, std::string &) {
    ++created;
    return std::make_unique<FailingEngine>(device, cuda_errors::kIllegalAddress, &calls);
  });
  const std::vector<std::vector<RowResult>> gpu = run(1, 2, 3);
  for (const std::vector<RowResult> &batch : gpu) {
    ASSERT_EQ(batch.size(), cpu[0].size());
    for (size_t i = 0; i < batch.size(); ++i)
      EXPECT_EQ(batch[i].value, cpu[0][i].value) << "row " << i;
  }
  EXPECT_EQ(created, 1) << "a corrupt context is not retried";
  EXPECT_EQ(calls, 1);
  ASSERT_EQ(log_.size(), 1u) << "logged once";
  EXPECT_NE(log_[0].find("gray: GPU 2 failed a batch (injected failure (error 700))"),
            std::string::npos)
      << log_[0];
  EXPECT_NE(log_[0].find("runs on the CPU from now on"), std::string::npos) << log_[0];
}

TEST_F(InjectedEngine, AnOutOfMemoryFailureIsRetriedABoundedNumberOfTimes) {
  int created = 0, calls = 0;
  setCudaImageEngineFactoryForTesting([&](int device, std::string &) {
    ++created;
    return std::make_unique<FailingEngine>(device, cuda_errors::kMemoryAllocation, &calls);
  });
  const std::vector<std::vector<RowResult>> cpu = run(0, -1, 1);
  const std::vector<std::vector<RowResult>> gpu = run(1, 0, 8);
  for (const std::vector<RowResult> &batch : gpu)
    for (size_t i = 0; i < batch.size(); ++i)
      EXPECT_EQ(batch[i].value, cpu[0][i].value);
  EXPECT_EQ(created, 4) << "the first engine and three new ones, then the CPU for good";
  ASSERT_EQ(log_.size(), 4u);
  EXPECT_NE(log_[0].find("the GPU is tried again"), std::string::npos) << log_[0];
  EXPECT_NE(log_[3].find("runs on the CPU from now on"), std::string::npos) << log_[3];
}

/// A GPU engine whose grayscale works (the CPU reference stands in for the kernel).
class WorkingEngine : public FailingEngine {
public:
  WorkingEngine(int device, int *calls) : FailingEngine(device, 0, calls), calls_(calls) {}
  bool grayscale(const ImageView *images, size_t count, uint8_t *const *outputs,
                 std::string &) override {
    ++*calls_;
    for (size_t i = 0; i < count; ++i)
      orch::stdlib::grayscale(images[i], outputs[i]);
    return true;
  }

private:
  int *calls_;
};

TEST_F(InjectedEngine, AReplicaSaysOnceThatItsBatchesRunOnTheGpu) {
  // The device check (bench/gpu/device-check.sh) reads this line as the evidence that a GPU
  // Call used its device.
  int calls = 0;
  setCudaImageEngineFactoryForTesting(
      [&](int device, std::string &) { return std::make_unique<WorkingEngine>(device, &calls); });
  const std::vector<std::vector<RowResult>> cpu = run(0, -1, 1);
  const std::vector<std::vector<RowResult>> gpu = run(1, 1, 3);
  EXPECT_EQ(calls, 3);
  for (const std::vector<RowResult> &batch : gpu)
    for (size_t i = 0; i < batch.size(); ++i)
      EXPECT_EQ(batch[i].value, cpu[0][i].value);
  ASSERT_EQ(log_.size(), 1u) << "once, not per batch";
  EXPECT_NE(log_[0].find("gray: GPU 1 ran this replica's first batch"), std::string::npos)
      << log_[0];
}

TEST_F(InjectedEngine, AReplicaWithoutAnAssignedDeviceNeverTouchesAGpu) {
  // `orch worker --gpus none` gives GPU Calls no device (-1): before, it was clamped to GPU 0.
  int created = 0, calls = 0;
  setCudaImageEngineFactoryForTesting([&](int device, std::string &) {
    ++created;
    return std::make_unique<FailingEngine>(device, cuda_errors::kIllegalAddress, &calls);
  });
  run(1, -1, 2);
  EXPECT_EQ(created, 0);
  EXPECT_TRUE(log_.empty());
}

} // namespace
} // namespace orch::stdlib
