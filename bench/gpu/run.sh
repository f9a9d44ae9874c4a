#!/usr/bin/env bash
# The GPU image kernels in one go: builds with CUDA (nvcc must be present), runs the GPU parity
# tests, then the throughput benchmark (images/s for batch sizes 1..256, GPU against CPU,
# kernel time against transfer time) and prints its table. Under 5 minutes on one H200.
#   bench/gpu/run.sh            full table
#   bench/gpu/run.sh --quick    batch sizes 1, 16, 256
# BUILD_DIR (default build-gpu) is where it builds. It prints the driver and toolkit versions
# first. On a machine without a GPU the parity tests skip with the reason and the table has the
# CPU figures only; a GPU that is there but cannot be used (a driver older than the runtime)
# fails the tests and the benchmark.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
build=${BUILD_DIR:-build-gpu}
started=$(date +%s)

cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DORCH_CUDA=ON >/dev/null
cmake --build "$build" -j "$(nproc)" --target orch_unit_tests orch_gpu_bench

echo "== versions"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null ||
  echo "nvidia-smi: not available (no NVIDIA driver on this machine)"
/usr/local/cuda/bin/nvcc --version 2>/dev/null | tail -n 1 || true

echo "== GPU parity tests"
"$build/bin/orch_unit_tests" \
  --gtest_filter='ImageKernels*:StdlibOperatorsTest.AskingForAGpu*:GpuPlacement*:GpuReplica*' \
  --gtest_brief=1

echo "== throughput"
"$build/bin/orch_gpu_bench" "$@"
echo "bench/gpu/run.sh: $(($(date +%s) - started)) s"
