#!/usr/bin/env bash
# Orch's device check, run from the bundle that bench/gpu/bundle.sh builds (as check.sh at its
# top): the GPU parity tests, the GPU benchmark, clip_features on the GPU against the CPU, and
# page_embeddings with its PyTorch model on CUDA against the CPU. Needs only an NVIDIA driver
# (and, for the model, a python3 with torch, numpy and msgpack). Prints one table; exits 1 when
# a check fails (a GPU result that differs from the CPU's, a test that fails, a run that
# crashes or falls back to the CPU, a GPU that nvidia-smi shows but CUDA cannot use, a step past
# its time limit), 0 otherwise. A machine without a GPU skips the GPU checks and says why.
#   check.sh           the benchmark's quick table (batch sizes 1, 16, 256)
#   check.sh --full    every batch size from 1 to 256
# Logs and tables go to $OUT when it is set (the device tool's folder), else ./device-check-out;
# summary.md there is rewritten after every step, so a check cut short still leaves its rows.
set -uo pipefail
bundle=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mkdir -p "${OUT:-device-check-out}" || exit 1
results=$(cd "${OUT:-device-check-out}" && pwd)
bench_args=(--quick)
if [[ "${1:-}" == --full ]]; then bench_args=(); fi
python=${ORCH_PYTHON:-$(command -v python3 || echo /usr/bin/python3)}
export ORCH_PYTHON=$python
started=$(date +%s)
rows=()
failed=0

summary() {
  {
    echo
    echo "| check | result | detail |"
    echo "|---|---|---|"
    printf '%s\n' "${rows[@]}"
    echo
    echo "device: ${gpu:-none}; $(($(date +%s) - started)) s"
    [[ -s $results/bench.txt ]] && sed -n '/^| kernel | batch/,$p' "$results/bench.txt"
  } >"$results/summary.md"
}
row() { # check, result (pass/FAIL/skipped), detail
  rows+=("| $1 | $2 | $3 |")
  [[ $2 == FAIL ]] && failed=1
  echo "== $1: $2 ($3)"
  summary
}
# limited SECONDS LOG COMMAND...: runs it with a time limit, its output in LOG; its status
# (124 when the limit stopped it).
limited() {
  local seconds=$1 log=$2
  shift 2
  timeout --kill-after=10 "$seconds" "$@" >"$log" 2>&1
}
# What a finished orch run's status means here: 0 or 2 (some rows failed: the samples hold a
# corrupt file on purpose) is a run that ended; anything else did not.
ended() { [[ $1 == 0 || $1 == 2 ]]; }
# The GPU image Calls' own lines when a batch went to the CPU after all.
fell_back() { grep -E "GPU [0-9]+ (failed a batch|cannot be used)|runs on the CPU from now on" "$1"; }

echo "== device"
gpu=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null |
  head -n 1)
echo "${gpu:-no nvidia-smi here}"
cat "$bundle/VERSION"

# --- parity tests: every kernel against its CPU reference; the staging schedule ----------------
limited 300 "$results/parity.log" "$bundle/bin/orch_unit_tests" --gtest_brief=1 \
  --gtest_filter='ImageKernels*:GpuBatching*:GpuStaging*:StagingCopier*:GpuPlacement*:InjectedEngine*'
status=$?
ran=$(grep -o '^\[==========\] [0-9]* tests' "$results/parity.log" | grep -o '[0-9]*' | head -n 1)
# Only the tests that need a device skip (GTEST_SKIP with the reason on the next line).
skipped=$(grep -c ': Skipped$' "$results/parity.log")
reason=$(grep -m 1 -A 1 ': Skipped$' "$results/parity.log" | tail -n 1)
if [[ $status != 0 ]]; then
  row "GPU parity tests" FAIL "exit $status, $(grep -c '^\[  FAILED  \]' "$results/parity.log") failed; parity.log"
elif [[ $skipped != 0 && -n $gpu ]]; then
  row "GPU parity tests" FAIL "nvidia-smi shows $gpu, but the tests found no usable GPU: $reason"
elif [[ $skipped != 0 ]]; then
  row "GPU parity tests" skipped "$reason"
else
  row "GPU parity tests" pass "${ran:-?} tests, every kernel equals its CPU reference"
fi
gpu_usable=$([[ $status == 0 && $skipped == 0 ]] && echo 1 || echo 0)

# --- benchmark ---------------------------------------------------------------------------------
limited 420 "$results/bench.txt" "$bundle/bin/orch_gpu_bench" "${bench_args[@]}"
status=$?
if [[ $status != 0 ]]; then
  row "GPU benchmark" FAIL "exit $status: $(grep -m 1 -E 'error|differ' "$results/bench.txt")"
elif grep -q '^GPU: none' "$results/bench.txt"; then
  result=$([[ -n $gpu ]] && echo FAIL || echo skipped)
  row "GPU benchmark" "$result" "no usable GPU: bench.txt has the CPU figures only"
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
limited 180 "$results/clip_gpu.log" "$bundle/bin/orch" run clip_features.orch
gpu_status=$?
mv out gpu-out 2>/dev/null
CUDA_VISIBLE_DEVICES= limited 180 "$results/clip_cpu.log" "$bundle/bin/orch" run clip_features.orch
cpu_status=$?
mv out cpu-out 2>/dev/null
on_gpu=$(grep -c "ran this replica's first batch" "$results/clip_gpu.log")
name="clip_features, GPU = CPU"
if ! ended "$gpu_status" || ! ended "$cpu_status"; then
  row "$name" FAIL "orch run exited $gpu_status on the GPU, $cpu_status on the CPU; clip_*.log"
elif [[ ! -s cpu-out/clip_features.jsonl ]]; then
  row "$name" FAIL "the CPU run wrote nothing; clip_cpu.log"
elif [[ "$(sort gpu-out/clip_features.jsonl 2>/dev/null)" != "$(sort cpu-out/clip_features.jsonl)" ]]; then
  row "$name" FAIL "the outputs differ; clip_gpu.log, clip_cpu.log"
elif [[ $gpu_status != "$cpu_status" ]]; then
  row "$name" FAIL "same rows, but orch run exited $gpu_status on the GPU, $cpu_status on the CPU"
elif [[ $gpu_usable == 0 ]]; then
  row "$name" skipped "no usable GPU: both runs were on the CPU"
elif [[ $on_gpu == 0 ]]; then
  row "$name" FAIL "same rows, but no GPU Call ran a batch on the GPU"
elif fallback=$(fell_back "$results/clip_gpu.log" | head -n 1) && [[ -n $fallback ]]; then
  row "$name" FAIL "same rows, but a batch went to the CPU: $fallback"
else
  row "$name" pass \
    "$(wc -l <cpu-out/clip_features.jsonl) clips identical; $on_gpu GPU replicas ran every batch on the GPU"
fi

# page_embeddings: the model on CUDA (a GPU share for its Call) against the example as written.
name="page_embeddings, model on CUDA"
torch_cuda=$(timeout 120 "$python" -c \
  'import torch, numpy, msgpack; print(int(torch.cuda.is_available()))' 2>/dev/null)
if [[ -z $torch_cuda ]]; then
  row "$name" skipped "$python lacks torch, numpy or msgpack"
elif [[ $torch_cuda == 0 && -n $gpu && $gpu_usable == 1 ]]; then
  row "$name" skipped "$python's PyTorch has no CUDA (a CPU build?), though Orch's kernels ran on $gpu"
elif [[ $torch_cuda == 0 ]]; then
  row "$name" skipped "$python's PyTorch sees no CUDA device"
else
  sed 's/{ batch: 16, replicas: 2 }/{ batch: 16, replicas: 2, gpus: 0.5 }/' page_embeddings.orch \
    >embeddings_gpu.orch
  limited 240 "$results/embeddings_gpu.log" "$bundle/bin/orch" run embeddings_gpu.orch
  gpu_status=$?
  mv out gpu-out-embeddings 2>/dev/null
  limited 240 "$results/embeddings_cpu.log" "$bundle/bin/orch" run page_embeddings.orch
  cpu_status=$?
  mv out cpu-out-embeddings 2>/dev/null
  detail=$("$python" - <<'PY' 2>&1
import json, math, sys
def rows(path):
    found = {}
    for line in open(path):
        row = json.loads(line)
        if row["path"] in found:
            sys.exit("%s: %s appears twice" % (path, row["path"]))
        found[row["path"]] = row["pages"]
    return found
try:
    gpu = rows("gpu-out-embeddings/embeddings.jsonl")
    cpu = rows("cpu-out-embeddings/embeddings.jsonl")
except OSError as error:
    sys.exit(str(error))
if sorted(gpu) != sorted(cpu) or not cpu:
    sys.exit("documents differ: %s against %s" % (sorted(gpu), sorted(cpu)))
worst, pages = 0.0, 0
for path, embeddings in cpu.items():
    if len(gpu[path]) != len(embeddings):
        sys.exit("%s: %d pages against %d" % (path, len(gpu[path]), len(embeddings)))
    for number, (a, b) in enumerate(zip(gpu[path], embeddings)):
        pages += 1
        if len(a) != len(b) or not a:
            sys.exit("%s page %d: %d values against %d" % (path, number, len(a), len(b)))
        for x, y in zip(a, b):
            if not (math.isfinite(x) and math.isfinite(y)):
                sys.exit("%s page %d: %r against %r" % (path, number, x, y))
            worst = max(worst, abs(x - y))
if pages == 0:
    sys.exit("no page was embedded")
print("%d pages; largest difference %.2g" % (pages, worst))
sys.exit(0 if worst <= 1e-4 else 1)
PY
  )
  status=$?
  on_cuda=$(grep -c "embedder: on cuda" "$results/embeddings_gpu.log")
  if ! ended "$gpu_status" || ! ended "$cpu_status"; then
    row "$name" FAIL "orch run exited $gpu_status on the GPU, $cpu_status on the CPU; embeddings_*.log"
  elif [[ $status != 0 ]]; then
    row "$name" FAIL "$detail"
  elif [[ $on_cuda == 0 ]]; then
    row "$name" FAIL "$detail, but the model did not say it ran on CUDA"
  else
    row "$name" pass "$detail (at most 1e-4 from the CPU)"
  fi
fi

summary
cat "$results/summary.md"
exit $failed
