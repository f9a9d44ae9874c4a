#!/usr/bin/env bash
# The GPU image kernels in one go: builds with CUDA (nvcc must be present), runs the GPU parity
# tests, then the throughput benchmark (images/s for batch sizes 1..256, GPU against CPU,
# kernel time against transfer time) and prints its table. Under 5 minutes on one H200.
#   bench/gpu/run.sh            full table
#   bench/gpu/run.sh --quick    batch sizes 1, 16, 256
# BUILD_DIR (default build-gpu) is where it builds. On a machine without a GPU the parity tests
# skip with the reason and the table has the CPU figures only.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
build=${BUILD_DIR:-build-gpu}
started=$(date +%s)

cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DORCH_CUDA=ON >/dev/null
cmake --build "$build" -j "$(nproc)" --target orch_unit_tests orch_gpu_bench

echo "== GPU parity tests"
"$build/bin/orch_unit_tests" \
  --gtest_filter='ImageKernels*:StdlibOperatorsTest.AskingForAGpu*:GpuPlacement*:GpuReplica*' \
  --gtest_brief=1

echo "== throughput"
"$build/bin/orch_gpu_bench" "$@"
echo "bench/gpu/run.sh: $(($(date +%s) - started)) s"
