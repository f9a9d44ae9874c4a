#!/usr/bin/env bash
# The paper's simulated experiments (bench/experiments/run.py) with two binaries on the same
# day, one after the other: a reference commit's and this checkout's. This machine moves
# figures by more than 5 % between days (the Dask peer, which is not Orch, by 22 %), so a
# regression is checked against a same-day run of the reference, not a stored one.
#   bench/ab.sh REF [--quick] [--over PCT]
# REF: a commit (e.g. the one that made bench/results/full-2026-12-01.json), built in a git
# worktree (same build type as build/, ccache helps), or a directory holding a build of it
# (orch, orch-worker, orchc). Runs both, then prints bench/compare.py REF-run NEW-run --over PCT
# (3 by default). Results in build/bench/ab/.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { sed -n 2,10p "$0"; exit 2; }
ref=$1; shift
quick=()
over=3
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=(--quick) ;;
    --over) over=$2; shift ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
  shift
done
make build >/dev/null
out=$PWD/build/bench/ab
rm -rf "$out"
mkdir -p "$out"
# The binaries run from copies: a build meanwhile does not change what is measured.
mkdir -p "$out/ref-bin" "$out/new-bin"
if [ -x "$ref/orch" ]; then
  cp "$ref"/{orch,orch-worker,orchc} "$out/ref-bin/"
else
  tree=$(mktemp -d)
  trap 'git worktree remove --force "$tree" >/dev/null 2>&1 || rm -rf "$tree"' EXIT
  git worktree add --detach -f "$tree" "$ref" >/dev/null
  type=$(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' build/CMakeCache.txt)
  cmake -S "$tree" -B "$tree/build" -G Ninja -DCMAKE_BUILD_TYPE="${type:-RelWithDebInfo}" >/dev/null
  cmake --build "$tree/build" -j "$(nproc)" --target orch orch-worker orchc >/dev/null
  cp "$tree"/build/bin/{orch,orch-worker,orchc} "$out/ref-bin/"
fi
cp build/bin/{orch,orch-worker,orchc} "$out/new-bin/"
/usr/bin/python3 bench/experiments/run.py "$out/ref-bin/orch" "$out/ref" "${quick[@]}" >"$out/ref.log"
/usr/bin/python3 bench/experiments/run.py "$out/new-bin/orch" "$out/new" "${quick[@]}" >"$out/new.log"
/usr/bin/python3 bench/compare.py "$out/ref/results.json" "$out/new/results.json" --over "$over"
