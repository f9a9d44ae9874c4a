#!/usr/bin/env bash
# Model-server requests with many in flight (docs/models.md): llm.chat against the test server
# (200 ms latency, 64 slots), in process and on worker processes: requests/s against the ideal
# and the server's own bound, and Orch's CPU per request (see bench/llm/run.py).
#   bench/llm/run.sh [ORCH] [--quick]   (default build/bin/orch; --quick: 1,000 requests, else 4,000)
# Prints a Markdown table; writes ${ORCH_BENCH_RESULTS:-build/bench}/llm.json.
set -euo pipefail
cd "$(dirname "$0")/../.."
orch=build/bin/orch
if [ $# -gt 0 ] && [ "$1" != --quick ]; then orch=$1; shift; fi
orch=$(realpath "$orch")
work=$(mktemp -d)
trap 'pkill -f "$work" 2>/dev/null || true; rm -rf "$work"' EXIT
/usr/bin/python3 bench/llm/run.py "$orch" "$work" "$@"
