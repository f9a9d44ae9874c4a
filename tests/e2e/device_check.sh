#!/usr/bin/env bash
# The device check's bundle (bench/gpu/bundle.sh) on this machine, without a GPU: its binaries
# load every library but the C library's from the bundle, it runs where the machine's library
# folder holds nothing but the C library's own and what the shell tools need (a machine with
# only a driver), and it skips each GPU check cleanly with the reason. Skips (77) when the build
# has no CUDA.
set -euo pipefail
: "${ORCH_BIN:?set by ctest}" "${ORCH_SOURCE_DIR:?set by ctest}"
# shellcheck source=lib/checks.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib/checks.bash"

if grep -q "Orch was built without CUDA" "$ORCH_BIN/orch_gpu_bench"; then
  echo "skipped: this build has no CUDA (nvcc not found or ORCH_CUDA=OFF)"
  exit 77
fi
if [ "$(id -u)" != 0 ]; then
  echo "skipped: hiding the machine's libraries in a mount namespace needs root"
  exit 77
fi
workdir=$(mktemp -d)
trap 'rm -rf "$workdir"' EXIT
bundle=$workdir/device-check
BUILD_DIR=$(dirname "$ORCH_BIN") BUNDLE_DIR=$bundle \
  "$ORCH_SOURCE_DIR/bench/gpu/bundle.sh" --no-build --no-archive >"$workdir/bundle.log"
cat "$workdir/bundle.log"

glibc='/(libc|libm|libpthread|libdl|librt|libresolv|libutil|ld-linux-x86-64)\.so'
for binary in orch orch-worker orch_unit_tests orch_gpu_bench; do
  check "$binary finds its libraries through RPATH \$ORIGIN/../lib" \
    bash -c "readelf -d '$bundle/bin/$binary' | grep -q 'Library rpath: \[\$ORIGIN/../lib\]'"
  outside=$(ldd "$bundle/bin/$binary" | awk '$2 == "=>" { print $3 }' |
    grep -v -E "^$bundle/(bin/\.\./)?lib/|$glibc" || true)
  check_equal "$binary loads nothing from outside the bundle but the C library" "" "$outside"
done

# A host with only the C library (and what bash and the tools of check.sh need): the machine's
# library folder is replaced, in a mount namespace of its own, by one holding just those.
host=$workdir/host-libraries
mkdir -p "$host"
{
  dpkg -L libc6 | grep -E '^(/usr)?/lib/x86_64-linux-gnu/[^/]+\.so'
  for tool in bash grep sed sort mktemp cp mv rm mkdir wc date tee cat head tail dirname awk \
    timeout; do
    ldd "$(command -v "$tool")" | awk '$2 == "=>" { print $3 }'
  done
} | sort -u | while read -r library; do cp -L "$library" "$host/"; done
cd "$workdir"
status=0
unshare --mount --propagation private bash -c "
  mount --bind '$host' /usr/lib/x86_64-linux-gnu &&
  ORCH_PYTHON=/nonexistent/python3 OUT='$workdir/out' '$bundle/check.sh'" >check.log 2>&1 ||
  status=$?
cat check.log
check_equal "the check passes without a GPU (exit 0)" 0 "$status"
check "it says why the GPU parity tests were skipped" \
  grep -q '^| GPU parity tests | skipped | no usable CUDA device' check.log
check "the benchmark has the CPU figures" \
  grep -q '^| GPU benchmark | skipped | no usable GPU' check.log
check "clip_features ran twice from the bundle and wrote the same rows (on the CPU)" \
  grep -q '^| clip_features, GPU = CPU | skipped | no usable GPU: both runs were on the CPU' check.log
check "page_embeddings says why it was skipped" \
  grep -q '^| page_embeddings, model on CUDA | skipped | /nonexistent/python3 lacks torch' check.log
check "the table and the logs are in \$OUT" \
  test -s out/summary.md -a -s out/bench.txt -a -s out/clip_cpu.log
finish_checks
