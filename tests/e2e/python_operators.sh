#!/usr/bin/env bash
# Operators a program declares, run by real Python processes (docs/python.md): constructors run
# once per replica, with the Call's threads and GPUs in their environment; batches mix source
# rows; a failing item fails only its row; a failing batch is narrowed down to its row by isolate; a hung process is killed at the timeout and the run
# ends; `kill -9` of a process mid-run loses nothing; worker processes and --in-process agree; a
# result of the wrong type, a syntax error, a failing constructor and a script changed after
# compiling are reported as docs/python.md says; exec(...) runs any executable that speaks the
# protocol; and no operator process outlives its run.
set -euo pipefail
: "${ORCH_BIN:?set by ctest}" "${ORCH_SOURCE_DIR:?set by ctest}"
# shellcheck source=lib/checks.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib/checks.bash"
python=/usr/bin/python3
if ! "$python" -c 'import msgpack' 2>/dev/null; then
  echo "skipped: $python has no msgpack module (scripts/install-deps.sh installs python3-msgpack)"
  exit 77
fi

workdir=$(mktemp -d)
trap 'pkill -9 -f "orch-operator measure" 2>/dev/null || true; [ -n "${KEEP_WORKDIR:-}" ] || rm -rf "$workdir"' EXIT
cd "$workdir"
models="$ORCH_SOURCE_DIR/tests/e2e/models"
cp "$models/behaviours.py" .
orch() { "$ORCH_BIN/orch" "$@"; }
operator_processes() { pgrep -f "orch-operator $1" || true; }

# 40 documents of 1-6 texts each; the texts' lengths are the expected results.
"$python" - <<'PY'
import json
with open("docs.jsonl", "w") as out:
    for i in range(40):
        out.write(json.dumps({"id": i, "texts": ["t%d-%s" % (i, "x" * k) for k in range(i % 6 + 1)]}) + "\n")
PY
cp docs.jsonl docs.clean.jsonl

# program NAME CLASS OPTIONS [CONSTANTS]: a pipeline measuring every text of every document.
program() {
  cat >"$1.orch" <<ORCH
pipeline $1;
operator measure(text: String, const log: String = "", const delay: Float = 0.0) -> Int
    = python("behaviours.py", class: "$2");
source docs = jsonl("docs.jsonl") as Doc;
texts = expand(docs.texts as List<String>) as Text;
sink jsonl(path: "out/$1.jsonl", record: { id: docs.id, lengths: reduce(measure(texts${4:-}) $3) });
ORCH
}

# --- a clean run: constructors, batching, outputs -------------------------------------------
program clean Measure "{ batch: 16, replicas: 2 }" ', log: "constructed.log"'
orch run clean.orch --workers 2 >clean.log 2>&1
check "the clean run writes every document" test "$(wc -l <out/clean.jsonl)" = 40
check "... with every text's length, in order" "$python" -c '
import json
for row in map(json.loads, open("out/clean.jsonl")):
    i = row["id"]
    assert row["lengths"] == [len("t%d-" % i) + k for k in range(i % 6 + 1)], row'
check "each replica's constructor ran exactly once" test "$(wc -l <constructed.log)" = 2
check "... in two different processes" test "$(sort -u constructed.log | wc -l)" = 2
check "batches mixed documents (batch fill in the summary)" \
  grep -qE "call 'measure@[a-z0-9]+': 136 grains in [0-9]+ batches \([0-9.]+ of 16 per batch, [1-9][0-9]* mixing" clean.log
check "the start-up is measured" grep -qE "replica [01] started \(pid [0-9]+\) in [0-9.]+ s" clean.log
check "the summary says when the processes were ready" grep -q "operator processes ready after" clean.log
check "the processes' stderr reaches the log, prefixed with the Call and the replica" \
  grep -qE "measure@[a-z0-9]*: replica [01]: measure: loaded" clean.log
check "no operator process outlives the run" test -z "$(operator_processes measure)"
sort out/clean.jsonl >clean.sorted

orch run clean.orch --in-process --quiet 2>/dev/null
check "--in-process writes what worker processes wrote" test "$(sort out/clean.jsonl)" = "$(cat clean.sorted)"

# --- failures -------------------------------------------------------------------------------
"$python" - <<'PY'
import json
rows = [json.loads(line) for line in open("docs.jsonl")]
rows[3]["texts"][0] = "poison-item"
rows[7]["texts"] = ["a", "poison-batch", "b"]
with open("docs.jsonl", "w") as out:
    out.writelines(json.dumps(row) + "\n" for row in rows)
PY
program failures Measure "{ batch: 16, recovery: \"isolate\" }"
status=0; orch run failures.orch --workers 2 >failures.log 2>&1 || status=$?
check "a run with failing items ends with failed rows (exit 2)" test "$status" = 2
check "... every other document is written" test "$(wc -l <out/failures.jsonl)" = 38
check "... the failed documents are exactly the poisoned two" test "$("$python" -c '
import json
print(sorted(json.loads(line)["row"] for line in open("failures.errors.jsonl")))')" = "[3, 7]"
check "an item's exception names the item's error" grep -q "ValueError: cannot measure 'poison-item'" failures.errors.jsonl
check "a batch's exception comes with the Python traceback" \
  grep -q 'Traceback (most recent call last).*behaviours.py.*RuntimeError: this batch holds poison-batch' failures.errors.jsonl

# A process that hangs is killed at the timeout, restarted, and the run ends.
printf '{"id": 0, "texts": ["ok", "hang"]}\n{"id": 1, "texts": ["fine"]}\n' >hang.jsonl
program hang Measure "{ batch: 1, timeout: 1s }"
sed -i 's/"docs.jsonl"/"hang.jsonl"/' hang.orch
start=$(date +%s)
status=0; timeout 120 "$ORCH_BIN/orch" run hang.orch --workers 1 >hang.log 2>&1 || status=$?
check "the run with a hung process ends (exit 2)" test "$status" = 2
check "... the other document is written" grep -q '"id":1' out/hang.jsonl
check "... the hung item's document failed with the timeout" grep -q "timed out after 1s" hang.errors.jsonl
check "... the process was restarted after each timeout" \
  test "$(grep -c "timed out after 1s while running a batch; it is restarted" hang.log)" -ge 2
check "... within a few timeouts" test $(($(date +%s) - start)) -lt 60
check "no hung process outlives the run" test -z "$(operator_processes measure)"

# kill -9 of an operator process mid-run loses nothing.
cp docs.clean.jsonl docs.jsonl
program clean Measure "{ batch: 4, replicas: 2 }" ', delay: 0.1'
rm -rf out
orch run clean.orch --workers 2 >killed.log 2>&1 &
run=$!
# Once the processes have started (a process killed while it starts is an operator that cannot
# start, which stops the run: a slow machine's start-up took the first kill).
for _ in $(seq 200); do grep -q "source rows done" killed.log && break; sleep 0.05; done
kills=0
for attempt in 1 2 3; do
  sleep 0.4
  victim=$(pgrep -o -f "orch-operator measure" || true)
  if [ -n "$victim" ]; then kill -9 "$victim" && kills=$((kills + 1)); fi
done
status=0; wait "$run" || status=$?
check "operator processes were killed during the run" test "$kills" -ge 2
check "the run with killed processes succeeds" test "$status" = 0
check "... and writes exactly the clean run's rows" test "$(sort out/clean.jsonl)" = "$(cat clean.sorted)"
check "... the losses were logged and the batches ran again" \
  grep -q "was killed by signal 9 (Killed) while running a batch; it is restarted" killed.log

# --- what a process sees of its placement ---------------------------------------------------
cat >environment.orch <<'ORCH'
pipeline environment;
operator seen(text: String) -> String = python("behaviours.py", class: "Environment");
source rows = lines("one.txt");
sink jsonl(path: "out/environment.jsonl", record: { seen: seen(rows) { cpus: 3 } });
ORCH
echo "x" >one.txt
orch run environment.orch --workers 1 --quiet 2>/dev/null
check "cpus sets the thread counts, no GPU is visible to a CPU Call, the replica is named" \
  grep -qE '"seen":"3\|3\|\|seen@[a-z0-9]+\|0"' out/environment.jsonl

# --- results of the wrong type --------------------------------------------------------------
program wrong WrongType "{ batch: 8 }"
status=0; orch run wrong.orch --workers 1 >wrong.log 2>&1 || status=$?
check "a result of the wrong type fails its rows (exit 2)" test "$status" = 2
check "... with a message naming the Call, the item and both types" \
  grep -q "call 'measure@[a-z0-9]*' (operator measure) returned String for item 0 of its batch, but the operator is declared to return Int" wrong.errors.jsonl

# --- operators that cannot start: the run stops before any row ------------------------------
program broken BrokenConstructor "{ batch: 8 }"
sed -i 's/, const log: String = "", const delay: Float = 0.0//' broken.orch
status=0; orch run broken.orch --workers 2 >broken.log 2>&1 || status=$?
check "a failing constructor stops the run (exit 1)" test "$status" = 1
check "... naming the declaration's line and the Python traceback" \
  grep -q "broken.orch:2:1: operator 'measure' (call 'measure@[a-z0-9]*'): could not start: Traceback" broken.log
check "... and the exception" grep -q "FileNotFoundError: weights.pt is missing" broken.log
check "... before any row was admitted" test ! -s out/broken.jsonl
status=0; orch run broken.orch --in-process >broken-in-process.log 2>&1 || status=$?
check "... in-process too" grep -q "FileNotFoundError: weights.pt is missing" broken-in-process.log

# Ctrl-C while a model loads: the run stops at once, in-process and with workers.
program slow SlowStart "{ batch: 8 }"
sed -i 's/, const log: String = "", const delay: Float = 0.0//' slow.orch
for mode in --in-process "--workers 1"; do
  start=$(date +%s)
  # shellcheck disable=SC2086
  "$ORCH_BIN/orch" run slow.orch $mode >slow.log 2>&1 &
  run=$!
  sleep 1.5
  kill -INT "$run"
  status=0; wait "$run" || status=$?
  check "Ctrl-C while a model loads stops the run ($mode, exit 130)" test "$status" = 130
  check "... at once" test $(($(date +%s) - start)) -lt 10
  check "... saying so" grep -q "interrupted" slow.log
done
check "... and leaves no operator process" test -z "$(operator_processes measure)"

# Ctrl-C during a batch in process: the run ends at once, and the operator's process goes with
# its abandoned thread (that this is not called a crash is DeclaredOperatorsTest's, where the
# thread is waited for).
program stuck Measure "{ batch: 8 }" ', delay: 5.0'
"$ORCH_BIN/orch" run stuck.orch --in-process >stuck.log 2>&1 &
run=$!
signal_once_running INT "$run" stuck.log 1
status=0; wait "$run" || status=$?
check "Ctrl-C during an in-process batch: exit 130" test "$status" = 130
check "... and leaves no operator process" test -z "$(operator_processes measure)"

cp "$models/syntax_error.py" .
cat >syntax.orch <<'ORCH'
pipeline syntax;
operator score(text: String) -> Float = python("syntax_error.py", class: "Scorer");
source docs = jsonl("docs.jsonl") as Doc;
sink jsonl(path: "out/syntax.jsonl", record: { s: reduce(score(expand(docs.texts as List<String>) as T)) });
ORCH
status=0; orch run syntax.orch >syntax.log 2>&1 || status=$?
check "a script with a syntax error stops the run (exit 1)" test "$status" = 1
check "... with Python's SyntaxError and its line" grep -q 'syntax_error.py", line 3' syntax.log
check "... and the declaration's line" grep -q "syntax.orch:2:1: operator 'score'" syntax.log
check "... before any row was admitted" test ! -s out/syntax.jsonl

sed -i 's/class: "Scorer"/class: "Scorer"/; s/syntax_error.py/behaviours.py/' syntax.orch
status=0; orch run syntax.orch >noclass.log 2>&1 || status=$?
check "a class the script does not define is named, with the ones it does" \
  grep -q "defines no class 'Scorer' (it defines: AsyncBatch, AsyncClient, BrokenConstructor, Environment, Measure, SlowStart, WrongType)" noclass.log

cat >missing.orch <<'ORCH'
pipeline missing;
operator score(text: String) -> Float = python("models/nowhere.py", class: "Scorer");
source docs = jsonl("docs.jsonl");
sink jsonl(path: "out/missing.jsonl", record: { s: score(docs.id as String) });
ORCH
status=0; orch run missing.orch >missing.log 2>&1 || status=$?
check "a missing script is a compile error at the path (exit 1)" test "$status" = 1
check "... pointing at the path" grep -q "missing.orch:2:48: error: cannot find the script 'models/nowhere.py'" missing.log

# A plan compiled against one version of the script refuses to run another.
program clean Measure "{ batch: 16 }"
"$ORCH_BIN/orchc" clean.orch -o clean.plan
echo "# changed after compiling" >>behaviours.py
status=0; orch run clean.plan --workers 1 >changed.log 2>&1 || status=$?
check "a script changed since compiling stops the run (exit 1)" test "$status" = 1
check "... saying so" grep -q "is not the file the plan was compiled with" changed.log

# --- exec(...): any executable that speaks the protocol --------------------------------------
cp "$models/upper_exec" .
cat >exec.orch <<'ORCH'
pipeline exec;
operator upper(text: String, const suffix: String) -> String
    = exec("upper_exec", args: ["!"]);
source docs = jsonl("docs.jsonl") as Doc;
texts = expand(docs.texts as List<String>) as Text;
sink jsonl(path: "out/exec.jsonl", record: { id: docs.id, upper: reduce(upper(texts, suffix: "?") { batch: 8 }) });
ORCH
orch run exec.orch --workers 2 --quiet 2>exec.log
check "an exec operator transforms every text" \
  grep -q '"id":0,"upper":\["T0-?!"\]' out/exec.jsonl
check "... of every document" test "$(wc -l <out/exec.jsonl)" = 40
# --- asynchronous classes: a coroutine per item (at most in_flight at once), or per batch ---
printf '%s\n' '{"id": 0, "texts": ["a", "bb", "poison-item", "dddd", "eeeee", "ffffff", "g", "hh"]}' \
  '{"id": 1, "texts": ["xyz"]}' >async.jsonl
for class in AsyncClient AsyncBatch; do
  cat >"$class.orch" <<ORCH
pipeline $class;
operator measure(text: String, const log: String = "", const delay: Float = 0.0) -> Int
    = python("behaviours.py", class: "$class");
source docs = jsonl("async.jsonl") as Doc;
texts = expand(docs.texts as List<String>) as Text;
sink jsonl(path: "out/$class.jsonl", record: { id: docs.id, lengths: reduce(measure(texts, log: "$class.open", delay: 0.2) { batch: 16, replicas: 1 }) });
ORCH
  rm -f "$class.open"
  status=0
  orch run "$class.orch" --errors "$class.errors.jsonl" >"$class.log" 2>&1 || status=$?
  check_equal "$class: the document with the poison item fails, the other is written (exit 2)" 2 "$status"
  check_equal "$class: the other document's length" '{"id":1,"lengths":[3]}' "$(cat "out/$class.jsonl")"
done
check "AsyncClient: only the poison item failed, with its exception" \
  grep -q '"path": \[2\].*ValueError: cannot measure .poison-item.' AsyncClient.errors.jsonl
check_equal "AsyncClient: its coroutines ran four at once at most, and four did" 4 "$(sort -n AsyncClient.open | tail -1)"
check "AsyncBatch: the poison item failed alone too (the batch error narrowed down)" \
  grep -q '"path": \[2\]' AsyncBatch.errors.jsonl

finish_checks
