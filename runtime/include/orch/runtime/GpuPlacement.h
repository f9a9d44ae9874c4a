// Which CUDA device each GPU replica gets. A process (an `orch worker`, or `orch run
// --in-process`) knows the devices it may use; each Call replica that asks for `gpus` gets
// one: whole-GPU replicas take the devices round robin, fractional ones share a device until
// it is full (two `gpus: 0.5` replicas on the first device, the next two on the second).
// Local worker processes started by `orch run` split the machine's devices between them.
#pragma once

#include <cstdint>
#include <vector>

namespace orch::runtime {

/// The device of the `ordinal`-th GPU replica (counting from 0, in the order the process
/// hosts them) asking for `gpusPerReplica`; -1 without devices or without a GPU request.
int64_t gpuDeviceForReplica(const std::vector<int64_t> &devices, double gpusPerReplica,
                            uint32_t ordinal);

/// The devices local worker `worker` (of `workers`) offers on a machine with `deviceCount`:
/// worker i takes devices i, i + workers, ...; workers beyond the devices get none.
std::vector<int64_t> devicesOfLocalWorker(int64_t deviceCount, unsigned worker, unsigned workers);

} // namespace orch::runtime
