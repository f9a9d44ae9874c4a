#!/usr/bin/env bash
# Builds Orch's device check: one folder, and an archive of it for the device tool's `carry`,
# that runs the GPU checks on a machine with nothing but an NVIDIA driver (no apt, no network,
# none of Orch's build dependencies): the GPU parity tests, the GPU benchmark and two example
# pipelines on the GPU against the CPU (bench/gpu/device-check.sh is its entry point).
#   bench/gpu/bundle.sh                BUILD_DIR/device-check/ and BUILD_DIR/device-check.tar.xz
#   bench/gpu/bundle.sh --no-archive   the folder only
#   bench/gpu/bundle.sh --no-build     from BUILD_DIR's binaries as they are (they must have CUDA)
# BUNDLE_DIR (default BUILD_DIR/device-check) is the folder.
# BUILD_DIR (default build) is configured with -DORCH_CUDA=ON: nvcc must be present. gtest, the
# image kernels and the CUDA runtime are linked statically; every other shared library the
# binaries load is copied beside them (but the C library's own, which come with the host's
# loader), and the binaries find them through their RPATH, so nothing leaks into the processes
# they start (Python). The host's glibc must be 2.36 or newer (Debian 12, Ubuntu 24.04).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
build=${BUILD_DIR:-build}
out=${BUNDLE_DIR:-$build/device-check}
archive=1 compile=1
for option in "$@"; do
  case $option in
  --no-archive) archive=0 ;;
  --no-build) compile=0 ;;
  *) echo "bundle.sh: unknown option $option" >&2 && exit 2 ;;
  esac
done
binaries=(orch orch-worker orch_unit_tests orch_gpu_bench)

if [[ $compile == 1 ]]; then
  scripts/install-deps.sh >/dev/null
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" \
    -DORCH_CUDA=ON >/dev/null
  cmake --build "$build" -j "$(nproc)" --target "${binaries[@]}" | grep -v '^\[' || true
fi
for binary in "${binaries[@]}"; do
  if [[ ! -x $build/bin/$binary ]]; then
    echo "bundle.sh: $build/bin/$binary is not built" >&2 && exit 1
  fi
done
# CudaUnavailable.cpp's message is linked only into builds without CUDA.
if grep -q "Orch was built without CUDA" "$build/bin/orch_gpu_bench"; then
  echo "bundle.sh: $build was built without CUDA (nvcc not found or ORCH_CUDA=OFF)" >&2 && exit 1
fi

rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/examples/models" "$out/examples/samples"
for binary in "${binaries[@]}"; do
  strip -o "$out/bin/$binary" "$build/bin/$binary"
  patchelf --force-rpath --set-rpath '$ORIGIN/../lib' "$out/bin/$binary"
done
for binary in "${binaries[@]}"; do ldd "$build/bin/$binary"; done |
  awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | sort -u |
  grep -v -E '/(libc|libm|libpthread|libdl|librt|libresolv|libutil|ld-linux-x86-64)\.so' |
  while read -r library; do cp -L "$library" "$out/lib/"; done

cp bench/gpu/device-check.sh "$out/check.sh"
cp examples/clip_features.orch examples/page_embeddings.orch "$out/examples/"
cp examples/models/embedder.py "$out/examples/models/"
cp -r examples/samples/videos examples/samples/pdfs "$out/examples/samples/"
{
  echo "commit: $(git describe --always --dirty 2>/dev/null || echo unknown)"
  echo "built: $(date -u +%Y-%m-%dT%H:%MZ) on $(. /etc/os-release && echo "$PRETTY_NAME")"
  echo "nvcc: $(/usr/local/cuda/bin/nvcc --version 2>/dev/null | tail -n 1)"
} >"$out/VERSION"
echo "bundle: $out ($(du -sh "$out" | cut -f1), $(ls "$out/lib" | wc -l) libraries)"

if [[ $archive == 1 ]]; then
  # One solid stream with a dictionary larger than the folder: the libraries share much.
  tar -C "$(dirname "$out")" -cf - "$(basename "$out")" |
    xz -T1 --lzma2=preset=9e,dict=256MiB >"$build/device-check.tar.xz"
  bytes=$(stat -c %s "$build/device-check.tar.xz")
  echo "archive: $build/device-check.tar.xz ($((bytes / 1024 / 1024)) MiB; the device tool" \
    "carries at most 64 MiB with the working tree)"
  echo "run it with the device tool: command" \
    "'tar xJf $build/device-check.tar.xz -C /tmp && /tmp/$(basename "$out")/check.sh'," \
    "carry ['$build/device-check.tar.xz'] (see docs/building.md)"
fi
