#!/usr/bin/env bash
# Installs, from Debian's archive, exactly the packages Orch needs to build, test and run its
# examples. Idempotent: when everything is present it only checks and exits.
#   scripts/install-deps.sh        what `make build/test/demo` need
#   scripts/install-deps.sh fuzz   also clang and libFuzzer, for `make fuzz`
set -euo pipefail

packages=(
  # build
  g++ make cmake ninja-build pkg-config ccache
  # parser generator (the tool pulls a JRE) and its C++ runtime
  antlr4 libantlr4-runtime-dev uuid-dev
  # diagnostics and support library (LLVM's CMake config also needs zstd); FileCheck for tests
  llvm-16-dev llvm-16-tools libzstd-dev
  # messaging and serialization
  libzmq3-dev cppzmq-dev libmsgpack-cxx-dev libboost-dev
  # hashing for deduplication (XXH3)
  libxxhash-dev
  # JSON Lines sources and sinks
  nlohmann-json3-dev
  # llm.* operators: HTTP requests to model servers (libcurl's multi interface)
  libcurl4-openssl-dev
  # operators: PDF, OCR (with English), video, Unicode; the tools that make the samples and
  # check the PDF text (pdftotext)
  libpoppler-cpp-dev poppler-utils libtesseract-dev libleptonica-dev tesseract-ocr-eng
  # tesseract's command line: the reference of the OCR test, the peer of bench/real/
  tesseract-ocr
  libavformat-dev libavcodec-dev libswscale-dev libavutil-dev libicu-dev
  ffmpeg ghostscript enscript
  # WebDataset shards (tar)
  libarchive-dev
  # tests and benchmarks (network namespaces and process tools for the distributed tests)
  libgtest-dev libgmock-dev libbenchmark-dev python3 iproute2 procps time
  # tests/e2e/transactions.sh kills a run at chosen system calls (strace's fault injection)
  strace
  # bench/gpu/bundle.sh: the device check's binaries find their libraries by RPATH; its archive
  patchelf xz-utils
  # python(...) operators: the bridge needs msgpack; images reach models as NumPy arrays; the
  # PyTorch example and its test (CPU build)
  python3-msgpack python3-numpy python3-torch
  # bench/dedup/: the Python reference of MinHash hashes shingles with XXH3 like Orch
  python3-xxhash
  # the hostile peers of tests/e2e/security.sh speak ZeroMQ (with CURVE)
  python3-zmq
  # the flat-record peer in bench/ (Dask's bag and distributed scheduler)
  python3-dask python3-distributed
  # `orchc --emit=dot` output is checked by rendering it; `orch report` pages by a headless
  # browser; live progress under a pseudo-terminal (script)
  graphviz chromium bsdutils
)
# The VS Code extension's tests and `make vsix` run on Node.js with npm. A Node.js already on
# the machine (Debian's or another repository's, which bundles npm) is kept as it is.
if ! command -v node >/dev/null; then
  packages+=(nodejs)
fi
if ! command -v npm >/dev/null; then
  packages+=(npm)
fi
if [[ "${1:-}" == "fuzz" ]]; then
  packages+=(clang-14 libclang-rt-14-dev)
fi

missing=()
for package in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$package")
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

if [[ $(id -u) -ne 0 ]]; then
  echo "install-deps: missing packages: ${missing[*]}" >&2
  echo "install-deps: run as root (or: sudo $0)" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
