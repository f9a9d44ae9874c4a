// Which CUDA device each GPU replica gets. A process (an `orch worker`, or `orch run
// --in-process`) knows the devices it may use; each Call replica that asks for `gpus` gets
// one, first fit by a running total of the shares placed on each device, never more than one
// whole device's worth on a device while another has room: whole-GPU replicas take empty
// devices, fractional ones share a device until it is full (two `gpus: 0.5` replicas on the
// first device, the next two on the second). Local worker processes started by `orch run`
// split the machine's devices between them. A Call's `gpu_memory` is placed too: a device whose
// memory is known takes replicas while the memory they promise fits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace orch::runtime {

/// Places the GPU replicas of one process, in the order it hosts them.
class GpuPlacer {
public:
  /// `memory[i]`: bytes of device `devices[i]` (missing or 0: not known, any request fits).
  explicit GpuPlacer(std::vector<int64_t> devices, std::vector<uint64_t> memory = {})
      : devices_(std::move(devices)), memory_(std::move(memory)), load_(devices_.size(), 0.0),
        memoryPromised_(devices_.size(), 0) {
    memory_.resize(devices_.size(), 0);
  }

  /// The device of the next replica asking for `gpus` and `memoryBytes` of GPU memory on each
  /// device it uses (a replica asking for more than one GPU reserves that many empty devices
  /// and gets the first); -1 without devices or without a GPU request. A device takes it while
  /// its shares stay within one GPU and, when both are known, its memory promised within what
  /// it has. When none has room the replica shares the least loaded device among those whose
  /// memory still holds it, else the one with the most memory left.
  int64_t place(double gpus, uint64_t memoryBytes = 0);
  /// A replica placed on `device` with these `gpus` and `memoryBytes` is gone (released,
  /// retired): what it took is free again.
  void release(int64_t device, double gpus, uint64_t memoryBytes = 0);

  /// The shares placed on each device so far, and the GPU memory promised on each.
  const std::vector<double> &load() const { return load_; }
  const std::vector<uint64_t> &memoryPromised() const { return memoryPromised_; }

private:
  bool memoryFits(size_t device, uint64_t memoryBytes) const;
  /// Takes `share` and `memoryBytes` on each of `devices`; the first one's id.
  int64_t take(std::vector<size_t> devices, double share, double gpus, uint64_t memoryBytes);

  std::vector<int64_t> devices_;
  std::vector<uint64_t> memory_;
  std::vector<double> load_;
  std::vector<uint64_t> memoryPromised_;
  /// What each placed replica took, for release.
  struct Reservation {
    double gpus;
    uint64_t memoryBytes;
    double share;
    std::vector<size_t> devices;
  };
  std::vector<Reservation> reservations_;
};

/// The GPU memory one replica asking for `gpus` promises: `gpuMemoryBytes` on each device it
/// uses (one for a share, ceil(gpus) for more); 0 without either. Saturates.
uint64_t gpuMemoryPerReplica(double gpus, int64_t gpuMemoryBytes);

/// The memory of `devices` devices, summed, when `memory` says each one's (none 0); else 0,
/// not known. Saturates.
uint64_t knownGpuMemory(const std::vector<uint64_t> &memory, size_t devices);

/// The devices local worker `worker` (of `workers`) offers on a machine with `deviceCount`:
/// worker i takes devices i, i + workers, ...; workers beyond the devices get none.
std::vector<int64_t> devicesOfLocalWorker(int64_t deviceCount, unsigned worker, unsigned workers);

} // namespace orch::runtime
