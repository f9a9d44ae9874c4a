#!/usr/bin/env bash
# The byte budget on real data: render at 300 dpi into an OCR-like consumer over a 1,321-page
# PDF with --value-budget 2GiB and without, and one parent with a million children; the peak
# resident memory of all of a run's processes. Not part of `make test` (about 10 minutes; the
# first run downloads Debian's texlive-pictures-doc, 233 MB, into the bench cache).
#   bench/memory/run.sh [ORCH]   -> build/bench/memory/results.{md,json}
set -euo pipefail
cd "$(dirname "$0")/../.."
orch=$(realpath "${1:-build/bin/orch}")
exec /usr/bin/python3 bench/memory/run.py "$orch" build/bench/memory
