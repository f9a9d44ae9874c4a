#!/usr/bin/env bash
# Runs every benchmark: the Google Benchmark microbenchmarks, then the simulated experiments
# of the paper (bench/experiments/run.py) with their ideal bounds and the Dask peer.
#   bench/run.sh            the full workload (the MinerU corpus shape; takes a while)
#   bench/run.sh --quick    1/8 of the corpus, under 10 minutes on 2 cores
# Tables go to standard output and build/bench/results.md; raw data to build/bench/*.json.
set -euo pipefail
cd "$(dirname "$0")/.."
make build >/dev/null
build/bin/orch_bench --benchmark_min_time=0.2
bench/language/cleaning.sh build/bin/orch
bench/language/text_or_ocr.sh build/bin/orch
bench/plain/run.sh build/bin/orch "$@"
bench/dedup/run.sh build/bin/orch "$@"
bench/llm/run.sh build/bin/orch "$@"
bench/python/bridge.sh build/bin/orch
bench/outputs/journal.sh build/bin/orch
bench/cluster/curve.sh build/bin/orch
bench/video/frames.sh build/bin/orch
/usr/bin/python3 bench/experiments/run.py "$PWD/build/bin/orch" build/bench "$@"
