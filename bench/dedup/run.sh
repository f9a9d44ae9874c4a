#!/usr/bin/env bash
# Near-duplicate detection: Orch's dedup.near (MinHash + LSH) against the same algorithm in
# Python/NumPy (bench/dedup/reference.py) on the pages of Debian's texlive-pictures-doc and
# synthetic near duplicates of them: precision and recall against exact Jaccard similarity,
# pages/s, and the makespan of pdf.text with and without dedup.near (see bench/dedup/run.py).
# The corpus and its ground truth are cached in ${ORCH_BENCH_CACHE:-~/.cache/orch-bench}.
#   bench/dedup/run.sh [ORCH] [--quick]   (default build/bin/orch; --quick: every 12th PDF)
# Prints a Markdown table; writes ${ORCH_BENCH_RESULTS:-build/bench}/dedup.json. The runs' files go
# to $WORK (a temporary directory unless ORCH_BENCH_OUT names one).
set -euo pipefail
cd "$(dirname "$0")/../.."
orch=build/bin/orch
if [ $# -gt 0 ] && [ "$1" != --quick ]; then orch=$1; shift; fi
orch=$(realpath "$orch")
work=${ORCH_BENCH_OUT:-$(mktemp -d)}
[ -n "${ORCH_BENCH_OUT:-}" ] || trap 'rm -rf "$work"' EXIT
/usr/bin/python3 bench/dedup/run.py "$orch" "$work" "$@"
