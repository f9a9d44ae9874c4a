#!/usr/bin/env bash
# End-to-end checks of the command-line tools: versions, help, exit codes.
set -euo pipefail
: "${ORCH_BIN:?set by ctest}" "${ORCH_SOURCE_DIR:?set by ctest}"

# shellcheck source=lib/checks.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib/checks.bash"

version=$(sed -n 's/^project(Orch VERSION \([0-9.]*\).*/\1/p' "$ORCH_SOURCE_DIR/CMakeLists.txt")
check "orchc --version prints the project version" \
  grep -q "orchc $version" <("$ORCH_BIN/orchc" --version)
check "orch --version prints the project version" \
  grep -q "orch $version" <("$ORCH_BIN/orch" --version)
check "orchc --help lists --check" grep -q -- "--check" <("$ORCH_BIN/orchc" --help)
check "orch --help describes the tool" grep -q "runs Orch pipelines" <("$ORCH_BIN/orch" --help)

workdir=$(mktemp -d)
trap 'rm -rf "$workdir"' EXIT
printf 'pipeline ok;\nsource s = files("*.txt");\nsink jsonl(path: "o.jsonl", record: { p: s.path });\n' >"$workdir/ok.orch"
printf 'pipeline bad\n' >"$workdir/bad.orch"
check "a valid file exits 0" test "$(exit_code "$ORCH_BIN/orchc" --check "$workdir/ok.orch")" = 0
check "a syntax error exits 1" test "$(exit_code "$ORCH_BIN/orchc" --check "$workdir/bad.orch")" = 1
check "a missing file exits 1" test "$(exit_code "$ORCH_BIN/orchc" --check "$workdir/none.orch")" = 1
check "a missing argument is a usage error" test "$(exit_code "$ORCH_BIN/orchc")" != 0
check "an unknown flag is a usage error" \
  test "$(exit_code "$ORCH_BIN/orchc" --no-such-flag "$workdir/ok.orch")" != 0

check "--hang-guard refuses what is no duration" \
  test "$(exit_code "$ORCH_BIN/orch" run --hang-guard 5 "$workdir/ok.orch")" = 1
check "... and names the flag" \
  grep -q -- "--hang-guard expects a duration" <("$ORCH_BIN/orch" run --hang-guard 5 "$workdir/ok.orch" 2>&1)

check "orch worker --help describes --connect" grep -q -- "--connect" <("$ORCH_BIN/orch" worker --help)
check "orch-worker --help describes --connect" grep -q -- "--connect" <("$ORCH_BIN/orch-worker" --help)
# Workers carry the runtime and the standard library, not the compiler.
check "orch-worker does not load the ANTLR runtime" bash -c "! ldd '$ORCH_BIN/orch-worker' | grep -q antlr"
check "orch-worker holds no frontend code" bash -c "! nm -C '$ORCH_BIN/orch-worker' | grep -q 'orch::frontend::'"
check "... which orch does (the check can fail)" bash -c "nm -C '$ORCH_BIN/orch' | grep -q 'orch::frontend::'"
# An orch without its orch-worker says so instead of starting workers that cannot run.
mkdir -p "$workdir/lonely"
cp "$ORCH_BIN/orch" "$workdir/lonely/orch"
printf '{"id": 1}\n' >"$workdir/lonely/one.jsonl"
cat >"$workdir/lonely/one.orch" <<ORCH
pipeline one;
source rows = jsonl("$workdir/lonely/one.jsonl") as Row;
sink jsonl(path: "$workdir/lonely/out.jsonl", record: { id: rows.id });
ORCH
check "orch run without orch-worker beside it exits 1" \
  test "$(exit_code "$workdir/lonely/orch" run "$workdir/lonely/one.orch" --workers 1 --quiet)" = 1
check "... naming the missing program" \
  grep -q "install orch-worker beside orch" <("$workdir/lonely/orch" run "$workdir/lonely/one.orch" --workers 1 --quiet 2>&1)
check "... while --in-process needs no worker" \
  test "$(exit_code "$workdir/lonely/orch" run "$workdir/lonely/one.orch" --in-process --quiet --no-journal --errors "$workdir/one.errors.jsonl")" = 0
# Installed side by side, orch finds its orch-worker.
cmake --install "$ORCH_BIN/.." --prefix "$workdir/prefix" >/dev/null
check "cmake --install puts the four programs in PREFIX/bin" \
  test "$(ls "$workdir/prefix/bin" | tr '\n' ' ')" = "orch orch-lsp orch-worker orchc "
check "... and the installed orch runs local workers" \
  test "$(exit_code "$workdir/prefix/bin/orch" run "$workdir/lonely/one.orch" --workers 1 --quiet --no-journal)" = 0
check "the Slurm template is valid bash" bash -n "$ORCH_SOURCE_DIR/deploy/slurm/orch.sbatch"
check "orch worker --once without a coordinator gives up with status 1" \
  test "$(exit_code "$ORCH_BIN/orch" worker --connect "ipc://$workdir/none.sock" --connect-timeout 1 --once)" = 1
# Without --once a worker keeps trying, backing off, until it is stopped.
"$ORCH_BIN/orch" worker --connect "ipc://$workdir/none.sock" --connect-timeout 1 >"$workdir/retry.log" 2>&1 &
retrying=$!
sleep 3
kill -TERM "$retrying"
status=0; wait "$retrying" || status=$?
check "orch worker without a coordinator connects again until stopped, then exits 0" \
  test "$status" = 0
check "orch worker says when it connects again" grep -q "connecting again in 200 ms" "$workdir/retry.log"
for flag in --max-live-roots --threads --depth --liveness --heartbeat-ms; do
  check "orch run $flag 0 is refused at the command line" \
    grep -q -- "error: $flag must be at least 1" <("$ORCH_BIN/orch" run "$workdir/ok.orch" "$flag" 0 2>&1)
done
printf '{"id": 1}\n' >"$workdir/one.jsonl"
cat >"$workdir/timed.orch" <<ORCH
pipeline timed;
source rows = jsonl("$workdir/one.jsonl") as Doc;
slow = test.sleep(rows, ms: 1) { timeout: 5s };
sink jsonl(path: "$workdir/timed.jsonl", record: { row: slow });
ORCH
check "orch run --in-process notes that a timed-out batch's thread cannot be stopped" \
  grep -q "note: call 'slow' has a timeout, and --in-process cannot stop a batch" \
  <(cd "$workdir" && "$ORCH_BIN/orch" run "$workdir/timed.orch" --in-process --quiet 2>&1)
check "... and worker processes say nothing of it" \
  test -z "$(cd "$workdir" && "$ORCH_BIN/orch" run "$workdir/timed.orch" --quiet 2>&1 | grep note: || true)"
check "orch run --max-live-roots 0 exits 1" \
  test "$(exit_code "$ORCH_BIN/orch" run "$workdir/ok.orch" --max-live-roots 0)" = 1
check "docs/operators.md is what orch operators prints" \
  diff <("$ORCH_BIN/orch" operators) "$ORCH_SOURCE_DIR/docs/operators.md"

# orchc fmt: rewrites in place, --check lists and fails, - filters, a broken file stays as it was.
printf 'pipeline  f ;source s=files( "*.txt" ) ;// keep me\nsink jsonl(path:"o.jsonl",record:s.path,);\n' >"$workdir/messy.orch"
cp "$workdir/messy.orch" "$workdir/messy-copy.orch"
cp "$workdir/bad.orch" "$workdir/bad-copy.orch"
canonical=$'pipeline f;\nsource s = files("*.txt");  // keep me\nsink jsonl(path: "o.jsonl", record: s.path);'
check "orchc fmt - writes the canonical layout to stdout" \
  test "$("$ORCH_BIN/orchc" fmt - <"$workdir/messy.orch")" = "$canonical"
check "orchc fmt --check fails on an unformatted file" \
  test "$(exit_code "$ORCH_BIN/orchc" fmt --check "$workdir/messy.orch")" = 1
check "orchc fmt --check lists it" grep -qx "$workdir/messy.orch" \
  <("$ORCH_BIN/orchc" fmt --check "$workdir/messy.orch" 2>/dev/null || true)
check "orchc fmt --check writes nothing" cmp -s "$workdir/messy.orch" "$workdir/messy-copy.orch"
check "orchc fmt with a broken file still formats the others, and exits 1" \
  test "$(exit_code "$ORCH_BIN/orchc" fmt "$workdir/bad.orch" "$workdir/messy.orch")" = 1
check "orchc fmt rewrote the good file" test "$(cat "$workdir/messy.orch")" = "$canonical"
check "orchc fmt left the broken file as it was" cmp -s "$workdir/bad.orch" "$workdir/bad-copy.orch"
check "orchc fmt names the syntax error" grep -q "bad.orch:1:13: error: expected ';'" \
  <("$ORCH_BIN/orchc" fmt "$workdir/bad.orch" 2>&1 || true)
check "orchc fmt --check passes on the formatted file" \
  test "$(exit_code "$ORCH_BIN/orchc" fmt --check "$workdir/messy.orch")" = 0
# Formatting never changes a plan's bytes; its source positions live beside it (x.plan.positions).
printf '{"v": 1}\n{"v": 2}\n{"v": 3}\n' >"$workdir/pos.jsonl"
printf 'pipeline pos; source rows = jsonl("pos.jsonl") as Doc; // one line\nbig=filter(rows,rows.v as Int>1); sink jsonl(path: "pos-out.jsonl", record: { v: big.v });\n' >"$workdir/pos.orch"
"$ORCH_BIN/orchc" -o "$workdir/before.plan" "$workdir/pos.orch"
"$ORCH_BIN/orchc" fmt "$workdir/pos.orch" >/dev/null
"$ORCH_BIN/orchc" -o "$workdir/after.plan" "$workdir/pos.orch"
check "orchc fmt moved the filter to another line" grep -qx "big = filter(rows, rows.v as Int > 1);" "$workdir/pos.orch"
check "... and the plan's bytes are the same" cmp -s "$workdir/before.plan" "$workdir/after.plan"
check "... while its positions, beside it, follow the text" \
  bash -c "! cmp -s '$workdir/before.plan.positions' '$workdir/after.plan.positions'"
filter_line() { (cd "$workdir" && "$ORCH_BIN/orch" run "$1" --in-process 2>&1 | grep "filter 'big'"); }
check "orch run of the plan names the filter's place in the formatted file" \
  grep -q "filter 'big' ($workdir/pos.orch:3:7): 2 kept, 1 dropped" <(filter_line after.plan)
check "... and positions written before formatting are not used (they point at the old lines)" \
  grep -q "filter 'big' ($workdir/pos.orch): 2 kept, 1 dropped" <(filter_line before.plan)
rm "$workdir/after.plan.positions"
check "... and without its positions the file alone" \
  grep -q "filter 'big' ($workdir/pos.orch): 2 kept, 1 dropped" <(filter_line after.plan)
long_name=$(printf 'p%.0s' $(seq 1 245)).plan
check "a plan named with 250 bytes is written, with a warning that its positions have no room" \
  grep -q "leaves no room for its positions file beside it" \
  <(cd "$workdir" && "$ORCH_BIN/orchc" -o "$long_name" pos.orch 2>&1)
check "... and runs" grep -q "filter 'big' (pos.orch): 2 kept" \
  <(cd "$workdir" && "$ORCH_BIN/orch" run "$long_name" --in-process --restart 2>&1)
check "positions written for other bytes are not used" \
  grep -q "filter 'big' ($workdir/pos.orch): 2 kept" \
  <("$ORCH_BIN/orchc" -o "$workdir/other.plan" "$workdir/ok.orch" &&
    cp "$workdir/other.plan.positions" "$workdir/after.plan.positions" && filter_line after.plan)
check "the examples are formatted" "$ORCH_BIN/orchc" fmt --check "$ORCH_SOURCE_DIR"/examples/*.orch
check "the complete programs in the docs are formatted" /usr/bin/python3 - "$ORCH_BIN/orchc" \
  "$ORCH_SOURCE_DIR/README.md" "$ORCH_SOURCE_DIR"/docs/*.md <<'PY'
import re, subprocess, sys
orchc, bad = sys.argv[1], []
for path in sys.argv[2:]:
    for block in re.findall(r"```orch\n(.*?)```", open(path).read(), flags=re.S):
        result = subprocess.run([orchc, "fmt", "-"], input=block, capture_output=True, text=True)
        if result.returncode == 0 and result.stdout != block:
            bad.append(path)
print("not formatted:", bad) if bad else None
sys.exit(1 if bad else 0)
PY
finish_checks
