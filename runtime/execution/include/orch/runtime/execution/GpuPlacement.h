// Which CUDA device each GPU replica gets. A process (an `orch worker`, or `orch run
// --in-process`) knows the devices it may use; each Call replica that asks for `gpus` gets
// one, first fit by a running total of the shares placed on each device, never more than one
// whole device's worth on a device while another has room: whole-GPU replicas take empty
// devices, fractional ones share a device until it is full (two `gpus: 0.5` replicas on the
// first device, the next two on the second). Local worker processes started by `orch run`
// split the machine's devices between them.
#pragma once

#include <cstdint>
#include <vector>

namespace orch::runtime {

/// Places the GPU replicas of one process, in the order it hosts them.
class GpuPlacer {
public:
  explicit GpuPlacer(std::vector<int64_t> devices)
      : devices_(std::move(devices)), load_(devices_.size(), 0.0) {}

  /// The device of the next replica asking for `gpus` (a replica asking for more than one
  /// GPU reserves that many empty devices and gets the first); -1 without devices or without
  /// a GPU request. When no device has room the replica shares the least loaded one.
  int64_t place(double gpus);

  /// The shares placed on each device so far.
  const std::vector<double> &load() const { return load_; }

private:
  std::vector<int64_t> devices_;
  std::vector<double> load_;
};

/// The devices local worker `worker` (of `workers`) offers on a machine with `deviceCount`:
/// worker i takes devices i, i + workers, ...; workers beyond the devices get none.
std::vector<int64_t> devicesOfLocalWorker(int64_t deviceCount, unsigned worker, unsigned workers);

} // namespace orch::runtime
