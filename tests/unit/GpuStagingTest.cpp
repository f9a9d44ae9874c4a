// The host side of GPU batches without a GPU: the staging copier's threads, and the chunk
// schedule driven against a thread that plays the device (copies in, "kernel", copies out, with
// a set time per chunk), so that overlap, order, failures and buffer reuse are checked here.
#include "orch/stdlib/GpuStaging.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

namespace orch::stdlib {
namespace {

using Clock = std::chrono::steady_clock;

/// Bytes from splitmix64, eight at a time (the batches here are tens of MiB).
std::vector<unsigned char> randomBytes(size_t n, uint64_t seed) {
  std::vector<unsigned char> bytes(n);
  for (size_t at = 0; at < n; at += 8) {
    uint64_t z = (seed += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    std::memcpy(bytes.data() + at, &z, std::min<size_t>(8, n - at));
  }
  return bytes;
}

TEST(StagingCopierTest, EveryByteArrivesWhenPartsCutThroughCopies) {
  StagingCopier copier(4);
  ASSERT_EQ(copier.threads(), 4u);
  // Sizes chosen so that the four parts' borders fall inside copies, and empty copies too.
  const std::vector<size_t> sizes = {0, 1, 700000, 7, 0, 1300000, 333333, 65536, 3};
  std::vector<std::vector<unsigned char>> sources, targets;
  std::vector<StagingCopy> copies;
  for (size_t i = 0; i < sizes.size(); ++i) {
    sources.push_back(randomBytes(sizes[i], uint32_t(i)));
    targets.emplace_back(sizes[i], 0);
  }
  for (size_t i = 0; i < sizes.size(); ++i)
    copies.push_back(StagingCopy{sources[i].data(), targets[i].data(), sizes[i]});
  copier.copy(copies);
  EXPECT_EQ(copier.lastParts(), 4u);
  for (size_t i = 0; i < sizes.size(); ++i)
    EXPECT_EQ(targets[i], sources[i]) << "copy " << i;

  // A small list stays on the caller.
  std::vector<unsigned char> small = randomBytes(1000, 9), smallTarget(1000);
  copier.copy({StagingCopy{small.data(), smallTarget.data(), small.size()}});
  EXPECT_EQ(copier.lastParts(), 1u);
  EXPECT_EQ(smallTarget, small);
}

TEST(StagingCopierTest, CallersFromSeveralThreadsEachGetTheirCopies) {
  StagingCopier copier(3);
  const size_t bytes = size_t(3) << 20;
  auto caller = [&](uint32_t seed, bool &same) {
    same = true;
    for (int round = 0; round < 20; ++round) {
      std::vector<unsigned char> source = randomBytes(bytes, seed + round), target(bytes);
      copier.copy(
          {StagingCopy{source.data(), target.data(), bytes / 2},
           StagingCopy{source.data() + bytes / 2, target.data() + bytes / 2, bytes - bytes / 2}});
      same = same && target == source;
    }
  };
  bool first = false, second = false;
  std::thread other([&] { caller(100, second); });
  caller(200, first);
  other.join();
  EXPECT_TRUE(first);
  EXPECT_TRUE(second);
}

/// What happened when, on which thread.
struct Timeline {
  std::mutex mutex;
  std::vector<Clock::time_point> packed, deviceStarted, deviceFinished, unpacked;
  void at(std::vector<Clock::time_point> &when, size_t chunk) {
    std::lock_guard lock(mutex);
    if (when.size() <= chunk)
      when.resize(chunk + 1);
    when[chunk] = Clock::now();
  }
};

/// Plays the device: one thread works off submitted chunks in order (like one GPU), each taking
/// `work`; its "kernel" turns every input byte b into b ^ 0x5A. Chunk `failAt` (counted from 0)
/// fails when waited for.
class FakeDevice : public ChunkDevice {
public:
  FakeDevice(std::chrono::milliseconds work, Timeline &timeline, size_t failAt = SIZE_MAX)
      : work_(work), timeline_(timeline), failAt_(failAt), thread_([this] { run(); }) {}
  ~FakeDevice() override {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
    thread_.join();
  }

  bool reserve(size_t slot, size_t inputBytes, size_t outputBytes, std::string &) override {
    std::lock_guard lock(mutex_);
    EXPECT_FALSE(slots_[slot].busy) << "staging of a chunk still in flight was touched";
    if (slots_[slot].hostIn.size() < inputBytes) {
      slots_[slot].hostIn.resize(inputBytes);
      ++allocations;
    }
    if (slots_[slot].hostOut.size() < outputBytes) {
      slots_[slot].hostOut.resize(outputBytes);
      ++allocations;
    }
    return true;
  }
  unsigned char *hostInput(size_t slot) override { return slots_[slot].hostIn.data(); }
  const unsigned char *hostOutput(size_t slot) override { return slots_[slot].hostOut.data(); }

  bool submit(size_t slot, size_t, size_t count, size_t inputBytes, size_t outputBytes,
              std::string &error) override {
    if (submitted == failSubmitAt) {
      error = "injected submit failure";
      return false;
    }
    std::lock_guard lock(mutex_);
    EXPECT_FALSE(slots_[slot].busy);
    slots_[slot].busy = true;
    slots_[slot].chunk = submitted++;
    queue_.push_back(Job{slot, count, inputBytes, outputBytes});
    ++inFlight;
    mostInFlight = std::max(mostInFlight, inFlight);
    changed_.notify_all();
    return true;
  }

  bool wait(size_t slot, std::string &error) override {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return !slots_[slot].busy; });
    ++waited;
    if (slots_[slot].chunk == failAt_) {
      error = "injected failure of chunk " + std::to_string(failAt_);
      return false;
    }
    return true;
  }

  size_t allocations = 0;
  size_t submitted = 0;
  size_t waited = 0;
  size_t inFlight = 0, mostInFlight = 0;
  size_t failSubmitAt = SIZE_MAX;

private:
  struct Job {
    size_t slot, count, inputBytes, outputBytes;
  };
  struct FakeSlot {
    std::vector<unsigned char> hostIn, hostOut;
    bool busy = false;
    size_t chunk = 0;
  };

  void run() {
    std::unique_lock lock(mutex_);
    for (;;) {
      changed_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty())
        return;
      const Job job = queue_.front();
      queue_.pop_front();
      FakeSlot &slot = slots_[job.slot];
      const size_t chunk = slot.chunk;
      lock.unlock();
      timeline_.at(timeline_.deviceStarted, chunk);
      // Copy in, compute, copy out: the header holds each item's size.
      std::vector<unsigned char> device(slot.hostIn.begin(),
                                        slot.hostIn.begin() + ptrdiff_t(job.inputBytes));
      const size_t header = job.count * sizeof(uint64_t);
      for (size_t i = header; i < device.size(); ++i)
        device[i] ^= 0x5A;
      EXPECT_EQ(job.inputBytes - header, job.outputBytes);
      std::memcpy(slot.hostOut.data(), device.data() + header, job.outputBytes);
      std::this_thread::sleep_for(work_);
      timeline_.at(timeline_.deviceFinished, chunk);
      lock.lock();
      slot.busy = false;
      --inFlight;
      changed_.notify_all();
    }
  }

  std::chrono::milliseconds work_;
  Timeline &timeline_;
  size_t failAt_;
  FakeSlot slots_[kStagingSlots];
  std::deque<Job> queue_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool stopping_ = false;
  std::thread thread_;
};

/// Items of the given sizes in and out; results land in `outputs`.
struct Batch {
  std::vector<std::vector<unsigned char>> inputs, outputs;
  ChunkLayout layout;
  size_t chunks = 0;

  Batch(const std::vector<size_t> &sizes, Timeline &timeline) {
    for (size_t i = 0; i < sizes.size(); ++i) {
      inputs.push_back(randomBytes(sizes[i], uint32_t(1000 + i)));
      outputs.emplace_back(sizes[i], 0);
    }
    layout.inputBytes = [this](size_t i) { return inputs[i].size(); };
    layout.outputBytes = [this](size_t i) { return outputs[i].size(); };
    layout.headerBytes = [](size_t count) { return count * sizeof(uint64_t); };
    layout.pack = [this, &timeline](size_t first, size_t count, unsigned char *input,
                                    std::vector<StagingCopy> &copies) {
      timeline.at(timeline.packed, chunks++);
      unsigned char *pixels = input + count * sizeof(uint64_t);
      size_t used = 0;
      for (size_t i = first; i < first + count; ++i) {
        const uint64_t size = inputs[i].size();
        std::memcpy(input + (i - first) * sizeof(uint64_t), &size, sizeof size);
        copies.push_back(StagingCopy{inputs[i].data(), pixels + used, inputs[i].size()});
        used += inputs[i].size();
      }
      return count * sizeof(uint64_t) + used;
    };
    layout.unpack = [this, &timeline](size_t first, size_t count, const unsigned char *output,
                                      std::vector<StagingCopy> &copies) {
      // Chunks are cut in order, so the chunk of item `first` is the one packed with it.
      timeline.at(timeline.unpacked, chunkOf(first));
      for (size_t i = first; i < first + count; ++i) {
        copies.push_back(StagingCopy{output, outputs[i].data(), outputs[i].size()});
        output += outputs[i].size();
      }
    };
  }

  size_t chunkOf(size_t item) const {
    size_t chunk = 0;
    for (size_t first = 0; first < inputs.size(); ++chunk) {
      const size_t count =
          gpuChunkLength(first, inputs.size(), layout.inputBytes, layout.outputBytes);
      if (item < first + count)
        return chunk;
      first += count;
    }
    return chunk;
  }

  bool allTransformed() const {
    for (size_t i = 0; i < inputs.size(); ++i)
      for (size_t b = 0; b < inputs[i].size(); ++b)
        if (outputs[i][b] != (inputs[i][b] ^ 0x5A))
          return false;
    return true;
  }
};

/// `items` items of 3 MiB (with a few odd sizes): five to six chunks of kGpuChunkBytes.
std::vector<size_t> frameSizes(size_t items) {
  std::vector<size_t> sizes(items, size_t(3) << 20);
  sizes[1] = 17;
  sizes[items / 2] = (size_t(5) << 20) + 3;
  return sizes;
}

TEST(GpuStagingScheduleTest, EveryChunkComesBackToItsItemsInOrder) {
  Timeline timeline;
  FakeDevice device(std::chrono::milliseconds(0), timeline);
  StagingCopier copier(4);
  Batch batch(frameSizes(30), timeline);
  std::string error;
  ASSERT_TRUE(runStagedChunks(batch.inputs.size(), batch.layout, device, copier, error)) << error;
  EXPECT_TRUE(batch.allTransformed());
  EXPECT_GE(device.submitted, 5u);
  EXPECT_EQ(device.waited, device.submitted) << "every chunk is waited for once";
  EXPECT_EQ(device.inFlight, 0u);
  EXPECT_EQ(timeline.unpacked.size(), device.submitted) << "every chunk is unpacked";

  // A batch of one item, and of none.
  Batch one({12345}, timeline);
  ASSERT_TRUE(runStagedChunks(1, one.layout, device, copier, error)) << error;
  EXPECT_TRUE(one.allTransformed());
  Batch none({}, timeline);
  EXPECT_TRUE(runStagedChunks(0, none.layout, device, copier, error));
}

TEST(GpuStagingScheduleTest, TheHostCopiesTheNextChunkWhileTheDeviceWorksOnThisOne) {
  // 40 ms per chunk on the "device": the host's copies of a few MiB take far less, so packing
  // chunk k and unpacking chunk k-2 happen while chunk k-1 is on the device.
  Timeline timeline;
  FakeDevice device(std::chrono::milliseconds(40), timeline);
  StagingCopier copier(4);
  Batch batch(frameSizes(30), timeline);
  std::string error;
  ASSERT_TRUE(runStagedChunks(batch.inputs.size(), batch.layout, device, copier, error)) << error;
  EXPECT_TRUE(batch.allTransformed());
  const size_t chunks = device.submitted;
  ASSERT_GE(chunks, 5u);
  EXPECT_GE(device.mostInFlight, 2u) << "two chunks were queued on the device at once";
  size_t packedDuringPrevious = 0, unpackedDuringNext = 0;
  for (size_t k = 1; k < chunks; ++k)
    packedDuringPrevious += timeline.packed[k] < timeline.deviceFinished[k - 1];
  for (size_t k = 0; k + 1 < chunks; ++k)
    unpackedDuringNext += timeline.unpacked[k] < timeline.deviceFinished[k + 1];
  // Every chunk would overlap on an idle machine; a loaded one may preempt the host thread.
  EXPECT_GE(packedDuringPrevious, (chunks - 1) / 2)
      << "chunk k was packed before chunk k-1 left the device";
  EXPECT_GE(unpackedDuringNext, (chunks - 1) / 2)
      << "chunk k was unpacked before chunk k+1 left the device";
  for (size_t k = 0; k < chunks; ++k)
    EXPECT_GE(timeline.unpacked[k], timeline.deviceFinished[k]) << "results read after the device";
}

TEST(GpuStagingScheduleTest, AFailedChunkStopsTheBatchAfterTheChunksInFlightAreWaitedFor) {
  Timeline timeline;
  FakeDevice device(std::chrono::milliseconds(5), timeline, /*failAt=*/2);
  StagingCopier copier(2);
  Batch batch(frameSizes(30), timeline);
  std::string error;
  EXPECT_FALSE(runStagedChunks(batch.inputs.size(), batch.layout, device, copier, error));
  EXPECT_EQ(error, "injected failure of chunk 2");
  EXPECT_EQ(device.inFlight, 0u) << "nothing left on the device when the batch returns";
  EXPECT_EQ(device.waited, device.submitted);
  EXPECT_LE(device.submitted, 2 + kStagingSlots) << "no chunk queued after the failure was seen";

  // A failure to queue: the chunks already queued are waited for too.
  Timeline timeline2;
  FakeDevice refusing(std::chrono::milliseconds(5), timeline2);
  refusing.failSubmitAt = 3;
  Batch again(frameSizes(30), timeline2);
  EXPECT_FALSE(runStagedChunks(again.inputs.size(), again.layout, refusing, copier, error));
  EXPECT_EQ(error, "injected submit failure");
  EXPECT_EQ(refusing.submitted, 3u);
  EXPECT_EQ(refusing.waited, 3u);
  EXPECT_EQ(refusing.inFlight, 0u);
}

TEST(GpuStagingScheduleTest, ASteadyBatchSizeAllocatesStagingOnlyOnce) {
  Timeline timeline;
  FakeDevice device(std::chrono::milliseconds(0), timeline);
  StagingCopier copier(2);
  std::string error;
  Batch first(frameSizes(30), timeline);
  ASSERT_TRUE(runStagedChunks(first.inputs.size(), first.layout, device, copier, error));
  const size_t allocations = device.allocations;
  EXPECT_LE(allocations, 2 * kStagingSlots * 2) << "each slot's buffers grow a few times at most";
  for (int round = 0; round < 3; ++round) {
    Batch next(frameSizes(30), timeline);
    ASSERT_TRUE(runStagedChunks(next.inputs.size(), next.layout, device, copier, error));
    EXPECT_TRUE(next.allTransformed());
  }
  EXPECT_EQ(device.allocations, allocations) << "later batches of the same shape reuse staging";
}

} // namespace
} // namespace orch::stdlib
