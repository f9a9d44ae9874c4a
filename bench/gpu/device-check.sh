#!/usr/bin/env bash
# Orch's device check, run from the bundle that bench/gpu/bundle.sh builds (as check.sh at its
# top): the GPU parity tests, the GPU benchmark, clip_features on the GPU against the CPU, and
# page_embeddings with its PyTorch model on CUDA against the CPU. Needs only an NVIDIA driver
# (and, for the model, a python3 with torch, numpy and msgpack). Prints one table; exits 1 when
# a check fails (a GPU result that differs from the CPU's, a test that fails, a GPU that is
# there but unusable), 0 otherwise. A machine without a GPU skips the GPU checks and says why.
#   check.sh           the benchmark's quick table (batch sizes 1, 16, 256)
#   check.sh --full    every batch size from 1 to 256
# Logs and tables go to $OUT when it is set (the device tool's folder), else ./device-check-out.
set -uo pipefail
bundle=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
results=${OUT:-$PWD/device-check-out}
mkdir -p "$results"
bench_args=(--quick)
if [[ "${1:-}" == --full ]]; then bench_args=(); fi
python=${ORCH_PYTHON:-$(command -v python3 || echo /usr/bin/python3)}
export ORCH_PYTHON=$python
started=$(date +%s)
rows=()
failed=0
row() { # check, result (pass/FAIL/skipped), detail
  rows+=("| $1 | $2 | $3 |")
  [[ $2 == FAIL ]] && failed=1
  echo "== $1: $2 ($3)"
}
orch() { "$bundle/bin/orch" "$@"; }

echo "== device"
gpu=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null |
  head -n 1)
echo "${gpu:-no nvidia-smi here}"
cat "$bundle/VERSION"

# --- parity tests: every kernel against its CPU reference; the staging schedule ----------------
"$bundle/bin/orch_unit_tests" --gtest_brief=1 \
  --gtest_filter='ImageKernels*:GpuBatching*:GpuStaging*:StagingCopier*:GpuPlacement*:InjectedEngine*' \
  >"$results/parity.log" 2>&1
status=$?
ran=$(grep -o '^\[==========\] [0-9]* tests' "$results/parity.log" | grep -o '[0-9]*' | head -n 1)
# Only the tests that need a device skip (GTEST_SKIP with the reason on the next line).
skipped=$(grep -c ': Skipped$' "$results/parity.log")
reason=$(grep -m 1 -A 1 ': Skipped$' "$results/parity.log" | tail -n 1)
if [[ $status != 0 ]]; then
  row "GPU parity tests" FAIL "$(grep -c '^\[  FAILED  \]' "$results/parity.log") failed; parity.log"
elif [[ $skipped != 0 ]]; then
  row "GPU parity tests" skipped "$reason"
else
  row "GPU parity tests" pass "${ran:-?} tests, every kernel equals its CPU reference"
fi
gpu_usable=$([[ $status == 0 && $skipped == 0 ]] && echo 1 || echo 0)

# --- benchmark ---------------------------------------------------------------------------------
"$bundle/bin/orch_gpu_bench" "${bench_args[@]}" >"$results/bench.txt" 2>&1
status=$?
if [[ $status != 0 ]]; then
  row "GPU benchmark" FAIL "$(grep -m 1 -E 'error|differ' "$results/bench.txt")"
elif grep -q '^GPU: none' "$results/bench.txt"; then
  row "GPU benchmark" skipped "no usable GPU: bench.txt has the CPU figures only"
else
  met=$(grep -c '| yes |' <(sed -n '/^Targets/,$p' "$results/bench.txt"))
  row "GPU benchmark" pass "GPU = CPU in every batch; bench.txt (batch-256 targets: $met met)"
fi

# --- the examples, GPU against CPU ---------------------------------------------------------
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$bundle/examples/." "$work/"
cd "$work" || exit 1

# clip_features: three GPU Calls (half a device each); the CPU run hides the GPU.
orch run clip_features.orch >"$results/clip_gpu.log" 2>&1
mv out gpu-out 2>/dev/null
CUDA_VISIBLE_DEVICES= orch run clip_features.orch >"$results/clip_cpu.log" 2>&1
mv out cpu-out 2>/dev/null
on_gpu=$(grep -c "ran this replica's first batch" "$results/clip_gpu.log")
if [[ ! -s cpu-out/clip_features.jsonl ]]; then
  row "clip_features, GPU = CPU" FAIL "the CPU run wrote nothing; clip_cpu.log"
elif [[ "$(sort gpu-out/clip_features.jsonl 2>/dev/null)" != "$(sort cpu-out/clip_features.jsonl)" ]]; then
  row "clip_features, GPU = CPU" FAIL "the outputs differ; clip_gpu.log, clip_cpu.log"
elif [[ $gpu_usable == 0 ]]; then
  row "clip_features, GPU = CPU" skipped "no usable GPU: both runs were on the CPU"
elif [[ $on_gpu == 0 ]]; then
  row "clip_features, GPU = CPU" FAIL "same rows, but no GPU Call ran a batch on the GPU"
else
  row "clip_features, GPU = CPU" pass \
    "$(wc -l <cpu-out/clip_features.jsonl) clips identical; $on_gpu GPU replicas ran batches"
fi

# page_embeddings: the model on CUDA (a GPU share for its Call) against the example as written.
torch_cuda=$("$python" -c 'import torch, numpy, msgpack; print(int(torch.cuda.is_available()))' \
  2>/dev/null)
if [[ -z $torch_cuda ]]; then
  row "page_embeddings, model on CUDA" skipped "$python lacks torch, numpy or msgpack"
elif [[ $torch_cuda == 0 ]]; then
  row "page_embeddings, model on CUDA" skipped "$python's PyTorch sees no CUDA device"
else
  sed 's/{ batch: 16, replicas: 2 }/{ batch: 16, replicas: 2, gpus: 0.5 }/' page_embeddings.orch \
    >embeddings_gpu.orch
  orch run embeddings_gpu.orch >"$results/embeddings_gpu.log" 2>&1
  mv out gpu-out-embeddings 2>/dev/null
  orch run page_embeddings.orch >"$results/embeddings_cpu.log" 2>&1
  mv out cpu-out-embeddings 2>/dev/null
  detail=$("$python" - <<'PY' 2>&1
import json, sys
def rows(path):
    return {r["path"]: r["pages"] for r in map(json.loads, open(path))}
gpu = rows("gpu-out-embeddings/embeddings.jsonl")
cpu = rows("cpu-out-embeddings/embeddings.jsonl")
if sorted(gpu) != sorted(cpu) or not cpu:
    sys.exit("documents differ: %s against %s" % (sorted(gpu), sorted(cpu)))
worst, pages = 0.0, 0
for path, embeddings in cpu.items():
    if len(gpu[path]) != len(embeddings):
        sys.exit("%s: %d pages against %d" % (path, len(gpu[path]), len(embeddings)))
    for a, b in zip(gpu[path], embeddings):
        pages += 1
        worst = max([worst] + [abs(x - y) for x, y in zip(a, b)])
print("%d pages; largest difference %.2g" % (pages, worst))
sys.exit(0 if worst <= 1e-4 else 1)
PY
  )
  status=$?
  on_cuda=$(grep -c "embedder: on cuda" "$results/embeddings_gpu.log")
  if [[ $status != 0 ]]; then
    row "page_embeddings, model on CUDA" FAIL "$detail"
  elif [[ $on_cuda == 0 ]]; then
    row "page_embeddings, model on CUDA" FAIL "$detail, but the model did not say it ran on CUDA"
  else
    row "page_embeddings, model on CUDA" pass "$detail (at most 1e-4 from the CPU)"
  fi
fi

{
  echo
  echo "| check | result | detail |"
  echo "|---|---|---|"
  printf '%s\n' "${rows[@]}"
  echo
  echo "device: ${gpu:-none}; $(($(date +%s) - started)) s"
  sed -n '/^| kernel | batch/,$p' "$results/bench.txt"
} | tee "$results/summary.md"
exit $failed
