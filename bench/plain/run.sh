#!/usr/bin/env bash
# Plain programs against hand-tuned ones and the tools a user would reach for without Orch
# (automatic replicas, placement, late-joining workers, stragglers): see bench/plain/run.py.
#   bench/plain/run.sh [ORCH] [--quick]   (default build/bin/orch)
# Prints one section per comparison; the figures also go to $WORK (a temporary
# directory unless ORCH_BENCH_OUT names one) as results.json.
set -euo pipefail
cd "$(dirname "$0")/../.."
orch=$(realpath "${1:-build/bin/orch}")
shift || true
work=${ORCH_BENCH_OUT:-$(mktemp -d)}
[ -n "${ORCH_BENCH_OUT:-}" ] || trap 'rm -rf "$work"' EXIT
/usr/bin/python3 bench/plain/run.py "$orch" "$work" "$@"
