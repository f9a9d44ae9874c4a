// The host-side rules of the GPU image engine, free of CUDA so that they are tested on machines
// without a GPU: what a CUDA error means, how a batch is cut into chunks, how staging buffers
// grow. Header-only C++17: nvcc compiles the engine against it.
#pragma once

#include <cstddef>
#include <string>

namespace orch::stdlib {

/// The cudaError_t values the rules below name (cuda/include/driver_types.h).
namespace cuda_errors {
constexpr int kMemoryAllocation = 2;
constexpr int kInsufficientDriver = 35;
constexpr int kNoDevice = 100;
constexpr int kEccUncorrectable = 214;
constexpr int kIllegalAddress = 700;
constexpr int kLaunchTimeout = 702;
constexpr int kAssert = 710;
constexpr int kHardwareStackError = 714;
constexpr int kIllegalInstruction = 715;
constexpr int kMisalignedAddress = 716;
constexpr int kInvalidAddressSpace = 717;
constexpr int kInvalidPc = 718;
constexpr int kLaunchFailure = 719;
} // namespace cuda_errors

/// What a CUDA error means for Orch.
enum class CudaErrorClass {
  /// There is no GPU here: no device, or no CUDA driver installed at all. GPU tests skip;
  /// GPU Calls run their CPU implementations.
  Absent,
  /// A GPU stack is there but cannot be used: a driver older than the runtime, or any other
  /// error. GPU tests fail, `orch run` says so with the versions.
  Broken,
  /// May pass later (out of memory): a replica drops its engine and tries a new one.
  Transient,
  /// The context is corrupt (an illegal address, a failed launch): the replica's GPU is given
  /// up for good and its batches run on the CPU.
  Sticky,
};

/// `driverVersion` is what cudaDriverGetVersion reports (0: no driver installed).
inline CudaErrorClass classifyCudaError(int code, int driverVersion) {
  using namespace cuda_errors;
  switch (code) {
  case kNoDevice:
    return CudaErrorClass::Absent;
  case kInsufficientDriver:
    return driverVersion == 0 ? CudaErrorClass::Absent : CudaErrorClass::Broken;
  case kMemoryAllocation:
    return CudaErrorClass::Transient;
  case kEccUncorrectable:
  case kIllegalAddress:
  case kLaunchTimeout:
  case kAssert:
  case kHardwareStackError:
  case kIllegalInstruction:
  case kMisalignedAddress:
  case kInvalidAddressSpace:
  case kInvalidPc:
  case kLaunchFailure:
    return CudaErrorClass::Sticky;
  default:
    return CudaErrorClass::Broken;
  }
}

/// "13.0" for the 13000 that CUDA's version calls report; "none" for 0.
inline std::string cudaVersionText(int version) {
  if (version <= 0)
    return "none";
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

/// A chunk holds at most this many images and, once it has one, at most this many bytes of
/// input and of output: two chunks are in flight per replica, each with pinned host and device
/// buffers of that size (a single larger image gets a chunk, and buffers, of its own).
constexpr size_t kGpuChunkBytes = size_t(16) << 20;
constexpr size_t kGpuChunkItems = 1024;

/// How many of the items from `first` (of `items`) go into the next chunk: at least one.
template <typename InputBytes, typename OutputBytes>
size_t gpuChunkLength(size_t first, size_t items, InputBytes inputBytes, OutputBytes outputBytes) {
  size_t count = 0, in = 0, out = 0;
  while (first + count < items && count < kGpuChunkItems) {
    const size_t nextIn = inputBytes(first + count), nextOut = outputBytes(first + count);
    if (count > 0 && (in + nextIn > kGpuChunkBytes || out + nextOut > kGpuChunkBytes))
      break;
    in += nextIn;
    out += nextOut;
    ++count;
  }
  return count;
}

/// The capacity a grow-only buffer of `capacity` takes to hold `bytes`: unchanged when they
/// fit, else at least double, so that a batch size creeping up costs few reallocations (each
/// one a device-wide stall).
constexpr size_t grownCapacity(size_t capacity, size_t bytes) {
  return bytes <= capacity ? capacity : (bytes > 2 * capacity ? bytes : 2 * capacity);
}

} // namespace orch::stdlib
