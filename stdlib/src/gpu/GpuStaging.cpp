// Copies into and out of GPU staging on several threads, and the schedule of a chunked batch
// that overlaps them with the device (GpuStaging.h).
#include "orch/stdlib/GpuStaging.h"

#include <pthread.h>

#include <algorithm>
#include <cstring>

namespace orch::stdlib {

StagingCopier::StagingCopier(size_t threads) {
  for (size_t part = 1; part < std::max<size_t>(threads, 1); ++part)
    helpers_.emplace_back([this, part] {
      ::pthread_setname_np(::pthread_self(), "orch-staging");
      helperLoop(part);
    });
}

StagingCopier::~StagingCopier() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread &helper : helpers_)
    helper.join();
}

StagingCopier &StagingCopier::shared() {
  // Never destroyed: a replica may still copy while static destructors run at exit.
  static StagingCopier *copier =
      new StagingCopier(std::clamp<size_t>(std::thread::hardware_concurrency(), 1, kMostThreads));
  return *copier;
}

void StagingCopier::copy(const std::vector<StagingCopy> &copies) {
  size_t total = 0;
  for (const StagingCopy &c : copies)
    total += c.bytes;
  const size_t parts = std::clamp<size_t>(total / kBytesPerPart, 1, threads());
  lastParts_ = parts;
  if (parts == 1) {
    // On the caller alone: no need to wait for another replica's copy.
    for (const StagingCopy &c : copies)
      std::memcpy(c.to, c.from, c.bytes);
    return;
  }
  std::lock_guard call(callMutex_);
  {
    std::lock_guard lock(mutex_);
    copies_ = &copies;
    totalBytes_ = total;
    parts_ = parts;
    unfinished_ = parts - 1;
    ++generation_;
  }
  wake_.notify_all();
  copyPart(0);
  std::unique_lock lock(mutex_);
  done_.wait(lock, [&] { return unfinished_ == 0; });
  copies_ = nullptr;
}

void StagingCopier::copyPart(size_t part) {
  // Part p is bytes [p*total/parts, (p+1)*total/parts) of the copies laid end to end.
  const size_t begin = totalBytes_ * part / parts_, end = totalBytes_ * (part + 1) / parts_;
  size_t at = 0;
  for (const StagingCopy &c : *copies_) {
    const size_t from = std::max(begin, at), to = std::min(end, at + c.bytes);
    if (from < to)
      std::memcpy(static_cast<unsigned char *>(c.to) + (from - at),
                  static_cast<const unsigned char *>(c.from) + (from - at), to - from);
    at += c.bytes;
    if (at >= end)
      break;
  }
}

void StagingCopier::helperLoop(size_t part) {
  uint64_t seen = 0;
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
    if (stopping_)
      return;
    seen = generation_;
    if (part >= parts_)
      continue;
    lock.unlock();
    copyPart(part);
    lock.lock();
    if (--unfinished_ == 0)
      done_.notify_one();
  }
}

namespace {

/// A chunk on its slot, from its packing until its results are handed out.
struct ChunkInFlight {
  size_t first = 0, count = 0;
  bool pending = false;
};

} // namespace

bool runStagedChunks(size_t items, const ChunkLayout &layout, ChunkDevice &device,
                     StagingCopier &copier, std::string &error) {
  ChunkInFlight slots[kStagingSlots];
  std::vector<StagingCopy> copies;
  bool ok = true;
  // Waits for a slot's chunk and lists its results' copies (none after a failure).
  auto finish = [&](size_t slot) {
    ChunkInFlight &chunk = slots[slot];
    chunk.pending = false;
    std::string waitError;
    if (!device.wait(slot, waitError)) {
      if (ok)
        error = waitError;
      ok = false;
    }
    if (ok)
      layout.unpack(chunk.first, chunk.count, device.hostOutput(slot), copies);
  };

  size_t next = 0;
  for (size_t chunk = 0; ok && next < items; ++chunk) {
    const size_t slot = chunk % kStagingSlots;
    copies.clear();
    // The oldest chunk in flight is done by the time this one is packed: its slot is the one
    // after this one's, and the chunk in between stays on the device meanwhile.
    if (ChunkInFlight &oldest = slots[(chunk + 1) % kStagingSlots]; oldest.pending)
      finish((chunk + 1) % kStagingSlots);
    if (!ok)
      break;
    const size_t count = gpuChunkLength(next, items, layout.inputBytes, layout.outputBytes);
    size_t inputBytes = layout.headerBytes(count), outputBytes = 0;
    for (size_t i = next; i < next + count; ++i) {
      inputBytes += layout.inputBytes(i);
      outputBytes += layout.outputBytes(i);
    }
    if (!device.reserve(slot, inputBytes, outputBytes, error)) {
      ok = false;
      break;
    }
    const size_t used = layout.pack(next, count, device.hostInput(slot), copies);
    copier.copy(copies);
    if (!device.submit(slot, next, count, used, outputBytes, error)) {
      ok = false;
      break;
    }
    slots[slot] = ChunkInFlight{next, count, true};
    next += count;
  }
  // The rest in the order they were queued; every one is waited for, also after a failure.
  copies.clear();
  size_t oldestSlot = 0;
  for (size_t slot = 0; slot < kStagingSlots; ++slot)
    if (slots[slot].pending &&
        (!slots[oldestSlot].pending || slots[slot].first < slots[oldestSlot].first))
      oldestSlot = slot;
  for (size_t k = 0; k < kStagingSlots; ++k)
    if (const size_t slot = (oldestSlot + k) % kStagingSlots; slots[slot].pending)
      finish(slot);
  if (ok)
    copier.copy(copies);
  return ok;
}

} // namespace orch::stdlib
