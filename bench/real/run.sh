#!/usr/bin/env bash
# Real operators on real data against the command lines a user would otherwise run: the text
# layer of every page of a few hundred real PDFs (pdftotext), OCR of rendered pages (tesseract),
# video frames (ffmpeg). Not part of `make test`; the first run downloads Debian's
# texlive-pictures-doc (233 MB) into ${ORCH_BENCH_CACHE:-~/.cache/orch-bench}.
#   bench/real/run.sh [ORCH]   (default build/bin/orch; `make bench-real` builds it first)
# Tables go to standard output and build/bench/real/results.md; raw data to results.json.
# Compare with a previous run: bench/compare.py bench/results/real-DATE.json build/bench/real/results.json
set -euo pipefail
cd "$(dirname "$0")/../.."
orch=$(realpath "${1:-build/bin/orch}")
scripts/install-deps.sh >/dev/null
exec /usr/bin/python3 bench/real/run.py "$orch" build/bench/real
