// The host side of a GPU batch, free of CUDA so that it is tested without a GPU: the threads that
// copy images into pinned staging and results out of it, and the schedule that overlaps those
// copies with the device's work on the chunks before and after. C++17: nvcc compiles the engine
// against this header.
#pragma once

#include "orch/stdlib/GpuBatching.h"

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace orch::stdlib {

/// One copy between an image (or a result) and staging memory.
struct StagingCopy {
  const void *from = nullptr;
  void *to = nullptr;
  size_t bytes = 0;
};

/// Threads that do a list of copies together: their bytes, laid end to end, are cut into equal
/// parts, one per thread (the caller does the first). Packing 256 frames of 640x480 RGB is 236 MB
/// of copying; one thread does about 5 GB/s, the device takes them at over 50 GB/s.
class StagingCopier {
public:
  /// Copies below this many bytes in all run on the caller alone: waking threads costs more.
  static constexpr size_t kBytesPerPart = size_t(256) << 10;
  /// The shared copier's threads at most (memory bandwidth is spent by then).
  static constexpr size_t kMostThreads = 8;

  /// `threads` counts the caller: 1 copies on the caller alone.
  explicit StagingCopier(size_t threads);
  ~StagingCopier();
  StagingCopier(const StagingCopier &) = delete;
  StagingCopier &operator=(const StagingCopier &) = delete;

  /// One per process, min(cores, kMostThreads) threads, started on first use. GPU replicas of one
  /// process share it (one copy list at a time; a list too small to share runs on its caller
  /// without waiting).
  static StagingCopier &shared();

  /// Does every copy; returns when all are done.
  void copy(const std::vector<StagingCopy> &copies);

  size_t threads() const { return helpers_.size() + 1; }
  /// How many threads did the last copy (for tests).
  size_t lastParts() const { return lastParts_.load(std::memory_order_relaxed); }

private:
  void copyPart(size_t part);
  void helperLoop(size_t part);

  std::mutex callMutex_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::vector<StagingCopy> *copies_ = nullptr;
  size_t totalBytes_ = 0;
  size_t parts_ = 0;
  size_t unfinished_ = 0;
  uint64_t generation_ = 0;
  bool stopping_ = false;
  std::atomic<size_t> lastParts_{0};
  std::vector<std::thread> helpers_;
};

/// The device side of a chunked batch: staging slots with host buffers, work queued on a slot
/// without waiting, and a wait per slot. The CUDA engine implements it with a stream per slot;
/// tests with a thread that plays the device.
class ChunkDevice {
public:
  virtual ~ChunkDevice() = default;
  /// Host (and device) staging of at least these sizes for `slot`: grown, never shrunk, so a
  /// steady batch size allocates nothing.
  virtual bool reserve(size_t slot, size_t inputBytes, size_t outputBytes, std::string &error) = 0;
  virtual unsigned char *hostInput(size_t slot) = 0;
  virtual const unsigned char *hostOutput(size_t slot) = 0;
  /// Queues the chunk of items [first, first+count) on `slot`: `inputBytes` of its host input
  /// copied in, its kernels, `outputBytes` copied out to its host output. Returns at once.
  virtual bool submit(size_t slot, size_t first, size_t count, size_t inputBytes,
                      size_t outputBytes, std::string &error) = 0;
  /// Waits until the slot's chunk is done (its results are then in hostOutput).
  virtual bool wait(size_t slot, std::string &error) = 0;
};

/// Chunks in flight or being copied at once: while the device works on chunk k, the host copies
/// chunk k-1's results out and chunk k+1's images in, each in its own slot.
constexpr size_t kStagingSlots = 3;

/// How one operation lays out its chunks in staging.
struct ChunkLayout {
  /// Input pixel bytes and output bytes of item i (for cutting chunks and sizing staging).
  std::function<size_t(size_t)> inputBytes, outputBytes;
  /// Bytes ahead of the pixels in a chunk's input (its descriptors) for `count` items.
  std::function<size_t(size_t count)> headerBytes;
  /// Writes the descriptors of items [first, first+count) at `input` and appends the copies of
  /// their pixels (to `input` + headerBytes on); returns the input bytes used, header included.
  std::function<size_t(size_t first, size_t count, unsigned char *input,
                       std::vector<StagingCopy> &copies)>
      pack;
  /// Hands out the results of items [first, first+count) from `output`: appends their copies
  /// and does small conversions itself.
  std::function<void(size_t first, size_t count, const unsigned char *output,
                     std::vector<StagingCopy> &copies)>
      unpack;
};

/// Runs `items` through `device` in chunks (gpuChunkLength) over kStagingSlots slots: chunk k is
/// packed, together with the unpacking of chunk k-2, by `copier` while chunk k-1 is on the
/// device. On a failure the chunks in flight are waited for, and false is returned with the
/// first error (outputs unspecified).
bool runStagedChunks(size_t items, const ChunkLayout &layout, ChunkDevice &device,
                     StagingCopier &copier, std::string &error);

} // namespace orch::stdlib
