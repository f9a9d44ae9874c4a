#!/usr/bin/env bash
# Outputs under faults (docs/outputs.md): the coordinator and its workers SIGKILLed at 20 random
# moments of a 2,240-grain run, resumed each time, end with exactly an undisturbed run's
# outputs; Ctrl-C and the same command again; a full disk fails rows with the cause and leaves
# no partial line or file; a read-only file system is found before the first row; a second run
# on the same outputs is refused; a mistyped input empties nothing; colliding and unsafe file
# names; source order; --retry-failed, --restart, outputs removed and a changed input.
set -euo pipefail
: "${ORCH_BIN:?set by ctest}" "${ORCH_SOURCE_DIR:?set by ctest}"
# shellcheck source=lib/checks.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib/checks.bash"
python=/usr/bin/python3

workdir=$(mktemp -d)
trap 'pkill -9 -f "orch-[0-9]*-[^ /]*/coordinator.sock" 2>/dev/null || true; [ -n "${KEEP_WORKDIR:-}" ] || rm -rf "$workdir"' EXIT
cd "$workdir"
orch() { "$ORCH_BIN/orch" "$@"; }

# whole_lines FILE: every line of FILE is a complete JSON value.
whole_lines() {
  $python -c '
import json, sys
data = open(sys.argv[1], "rb").read()
assert not data or data.endswith(b"\n"), "a line is cut short"
for line in data.splitlines():
    json.loads(line)' "$1"
}

# --- chaos: SIGKILL everything at 20 random moments, resume each time ------------------------
for i in $(seq 0 449); do echo "{\"id\": $i, \"n\": $((i % 9 + 1))}"; done >rows.jsonl
cat >pages.orch <<'ORCH'
pipeline pages;
source rows = jsonl("rows.jsonl") as Doc;
call split = test.split(field: "n") { replicas: 2 };
call work = test.sleep(ms: 6) { batch: 8, replicas: 3 };
pages = expand(split(rows)) as Page;
checked = test.fail(work(pages), kind: "record", ordinals: "7");
sink jsonl(path: "out/docs.jsonl", record: { id: rows.id, pages: reduce(checked) });
sink files(
    dir: "out/pages",
    name: format("{}-{}", broadcast(rows.id, pages), ordinal(pages)),
    ext: ".txt",
    content: string(checked)
);
ORCH
status=0; orch run pages.orch --in-process --threads 3 --no-journal --quiet 2>/dev/null || status=$?
check "the undisturbed run finishes with the rows it fails (exit 2)" test "$status" = 2
sort out/docs.jsonl >clean.rows
(cd out/pages && ls | sort) >clean.files
$python -c '
import json
print(sorted((r["row"], r["kind"]) for r in map(json.loads, open("pages.errors.jsonl"))))' >clean.errors
check "... and writes rows, files and errors" test -s clean.rows -a -s clean.files -a -s clean.errors
rm -rf out pages.errors.jsonl

kills=0
for attempt in $(seq 1 20); do
  "$ORCH_BIN/orch" run pages.orch --workers 3 --quiet >/dev/null 2>&1 &
  run=$!
  sleep "0.$((RANDOM % 3 + 2))"
  workers=$(pgrep -P "$run" -f "orch-worker" || true)
  if kill -9 "$run" 2>/dev/null; then kills=$((kills + 1)); fi
  [ -n "$workers" ] && kill -9 $workers 2>/dev/null || true
  wait "$run" 2>/dev/null || true
  if [ -e out/docs.jsonl ] && ! whole_lines out/docs.jsonl; then
    echo "attempt $attempt left a cut line"
  fi
done
# The last kill may have come after an attempt finished the job and the next one started afresh,
# before it committed a row: then there is nothing to resume, and the final run starts afresh.
resumable=no
if grep -q "^state running" pages.run/run 2>/dev/null && [ -s pages.run/commits ]; then
  resumable=yes
fi
status=0; orch run pages.orch --workers 3 >resumed.log 2>&1 || status=$?
check "the run was killed many times" test "$kills" -ge 15
check "the last resume finishes (exit 2: the rows that fail)" test "$status" = 2
if [ "$resumable" = yes ]; then
  check "... saying what it skipped" grep -qE "resumed: [0-9]+ source rows done by an earlier run" resumed.log
else
  check "... starting afresh: the last attempt committed nothing" bash -c '! grep -q "resumed:" resumed.log'
fi
check "every row is written exactly once, as undisturbed" test "$(sort out/docs.jsonl)" = "$(cat clean.rows)"
check "every line is whole" whole_lines out/docs.jsonl
check "every file is written, as undisturbed" test "$(cd out/pages && ls | sort)" = "$(cat clean.files)"
check "no partial file is left" test -z "$(find out/pages -name '*.orch-partial')"
check "the errors journal holds each failed row once" test "$($python -c '
import json
print(sorted((r["row"], r["kind"]) for r in map(json.loads, open("pages.errors.jsonl"))))')" = "$(cat clean.errors)"

status=0; orch run pages.orch --in-process --threads 3 --quiet 2>again.log || status=$?
check "a run after a finished one starts afresh" test "$(sort out/docs.jsonl)" = "$(cat clean.rows)"
check "... skipping nothing" test -z "$(grep resumed again.log || true)"

# --- Ctrl-C, then the same command again -------------------------------------------------------
# Interrupted once a row is committed (not after a fixed time: on a loaded machine the workers
# may not have finished a row by then, and a run that committed nothing has nothing to resume).
rm -rf pages.run
"$ORCH_BIN/orch" run pages.orch --workers 3 --quiet 2>/dev/null &
run=$!
for _ in $(seq 400); do [ -s pages.run/commits ] && break; sleep 0.05; done
kill -INT "$run"
status=0; wait "$run" || status=$?
check "SIGINT stops the run (exit 130)" test "$status" = 130
status=0; orch run pages.orch --workers 3 2>interrupted.log || status=$?
check "the same command again resumes" grep -qE "resumed: [0-9]+ source rows done by an earlier run" interrupted.log
check "... runs the interrupted rows again, and writes each row once" test "$(sort out/docs.jsonl)" = "$(cat clean.rows)"
check "... and journals no interrupted row" test -z "$(grep interrupted pages.errors.jsonl || true)"

# --- source order ----------------------------------------------------------------------------
sed 's|sink jsonl(path: "out/docs.jsonl", record: { id: rows.id, pages: reduce(checked) });|sink jsonl(path: "out/ordered.jsonl", record: { index: ordinal(rows), id: rows.id, pages: reduce(checked) }, order: "source");|' \
  pages.orch >ordered.orch
sed -i 's/pipeline pages;/pipeline ordered;/; s|dir: "out/pages"|dir: "out/ordered-pages"|' ordered.orch
status=0; orch run ordered.orch --workers 3 --max-live-roots 16 2>ordered.log || status=$?
check "a sink in source order writes its rows in source order" $python -c '
import json
rows = [json.loads(line) for line in open("out/ordered.jsonl")]
assert [r["index"] for r in rows] == [r["id"] for r in rows] == sorted(r["id"] for r in rows), rows[:5]'
check "... every row once (the failing ones left out, as undisturbed)" \
  test "$($python -c '
import json
print("\n".join(sorted(json.dumps({"id": r["id"], "pages": r["pages"]}, separators=(",", ":")) for r in map(json.loads, open("out/ordered.jsonl")))))')" = "$(cat clean.rows)"
check "... and the summary says how many rows waited" grep -qE "source order: at most [0-9]+ finished source rows waited" ordered.log

# Ctrl-C while the first row hangs and the rows after it are finished: in source order, they
# wait for it and are not written; the same command again runs all three and writes them in
# order. (They were written at the Ctrl-C: the resumed run appended row 0 after rows 1 and 2,
# and its errors journal kept row 0's "interrupted" line.)
mkdir -p hang-marks
printf '{"id": 0, "slow": true}\n{"id": 1, "slow": false}\n{"id": 2, "slow": false}\n' >hang.jsonl
cat >hang.orch <<'ORCH'
pipeline hang;
source rows = jsonl("hang.jsonl") as Doc;
slowed = test.fail(rows, kind: "hang", when: "slow", ordinals: "0", attempts: 1, marks: "hang-marks") { batch: 1, replicas: 2 };
sink jsonl(path: "out/hang.jsonl", record: { id: slowed.id }, order: "source");
ORCH
"$ORCH_BIN/orch" run hang.orch --in-process --quiet 2>/dev/null &
run=$!
for _ in $(seq 400); do [ -n "$(ls hang-marks)" ] && break; sleep 0.05; done
sleep 0.5
kill -INT "$run"
status=0; wait "$run" || status=$?
check "source order, Ctrl-C while the first row hangs (exit 130)" test "$status" = 130
check "... writes none of the rows that wait for it" test ! -s out/hang.jsonl
check "... and lists all three as unfinished" test "$($python -c '
import json
print(sorted(r["row"] for r in map(json.loads, open("hang.errors.jsonl")) if r.get("status") == "unfinished"))')" = "[0, 1, 2]"
status=0; orch run hang.orch --in-process 2>hang.log || status=$?
check "the same command again writes the three rows in source order (exit 0)" \
  test "$status" = 0 -a "$(tr -d ' \n' <out/hang.jsonl)" = '{"id":0}{"id":1}{"id":2}'
check "... and its errors journal is empty" test ! -s hang.errors.jsonl

# --- one writer per output ------------------------------------------------------------------
cat >slow.orch <<'ORCH'
pipeline slow;
source rows = jsonl("rows.jsonl") as Doc;
sink jsonl(path: "out/slow.jsonl", record: { id: rows.id, s: test.sleep(rows.id, ms: 10) { replicas: 1 } });
ORCH
rm -rf slow.run
"$ORCH_BIN/orch" run slow.orch --in-process --quiet 2>/dev/null &
first=$!
await_commit slow.run
status=0; orch run slow.orch --in-process --quiet 2>second.log || status=$?
wait "$first"
check "a second run of the same pipeline is refused (exit 1)" test "$status" = 1
check "... saying another run writes its outputs" grep -q "another orch run (pid [0-9]*) is writing the outputs of pipeline 'slow'" second.log
check "... and the first run's output is whole and complete" test "$(wc -l <out/slow.jsonl)" = 450
sed 's/pipeline slow/pipeline other/' slow.orch >other.orch
rm -rf slow.run
"$ORCH_BIN/orch" run slow.orch --in-process --quiet 2>/dev/null &
first=$!
await_commit slow.run
status=0; orch run other.orch --in-process --quiet 2>other.log || status=$?
wait "$first"
check "another pipeline writing the same file is refused" grep -q '"out/slow.jsonl" is being written by another orch run' other.log
check "... and the file is not interleaved" test "$(sort -u out/slow.jsonl | wc -l)" = 450

# --- streaming: a row is in its file while the run goes on ---------------------------------
# Lines are written a round's roots at a time (group commit), within a hundredth of a second of
# the first, not at the end: a slow run's first row is readable while the others run.
printf '{"id": 1}\n{"id": 2}\n{"id": 3}\n{"id": 4}\n' >four.jsonl
cat >streaming.orch <<'ORCH'
pipeline streaming;
source rows = jsonl("four.jsonl") as Doc;
sink jsonl(path: "out/streaming.jsonl", record: { id: rows.id, s: test.sleep(rows.id, ms: 400) { replicas: 1 } });
ORCH
"$ORCH_BIN/orch" run streaming.orch --in-process --quiet 2>/dev/null &
run=$!
for _ in $(seq 200); do [ -s out/streaming.jsonl ] && break; sleep 0.02; done
still=no
kill -0 "$run" 2>/dev/null && still=yes
lines=$(wc -l <out/streaming.jsonl 2>/dev/null || echo 0)
wait "$run"
check "a finished row is in its file while the run goes on" test "$still" = yes -a "$lines" -ge 1 -a "$lines" -lt 4
check "... and every row at the end" test "$(wc -l <out/streaming.jsonl)" = 4

# --- inputs that are not there ----------------------------------------------------------------
cat >glob.orch <<'ORCH'
pipeline glob;
source docs = files("inputs/*.pdf");
sink jsonl(path: "out/glob.jsonl", record: { path: docs.path });
ORCH
mkdir -p out && echo '{"path": "from an earlier run"}' >out/glob.jsonl
status=0; orch run glob.orch 2>glob.log || status=$?
check "a pattern that matches nothing stops the run (exit 1)" test "$status" = 1
check "... saying so" grep -q 'files: no file matches "inputs/\*.pdf"' glob.log
check "... and empties no output" grep -q "from an earlier run" out/glob.jsonl
sed -i 's|files("inputs/\*.pdf")|files("inputs/*.pdf", optional: true)|' glob.orch
check "optional: true makes it an empty input" orch run glob.orch --quiet
cat >dir.orch <<'ORCH'
pipeline dir;
source rows = lines("out");
sink jsonl(path: "dir.jsonl", record: { r: rows });
ORCH
status=0; orch run dir.orch 2>dir.log || status=$?
check "a directory given as a file stops the run, naming it" grep -q 'lines: "out" is a directory, not a file' dir.log

# --- names --------------------------------------------------------------------------------------
printf '%s\n' '{"n": "a"}' '{"n": ""}' '{"n": "\r"}' '{"n": "a"}' '{"n": "tab\there"}' >names.jsonl
$python -c 'import json; print(json.dumps({"n": "x" * 300}))' >>names.jsonl
cat >names.orch <<'ORCH'
pipeline names;
source rows = jsonl("names.jsonl");
sink files(dir: "out/names", name: rows.n as String, ext: ".txt", content: "x");
ORCH
status=0; orch run names.orch --quiet 2>/dev/null || status=$?
check "names that collide or are too long fail their rows (exit 2)" test "$status" = 2
check "... three of them" test "$(wc -l <names.errors.jsonl)" = 3
check "... the second row named like another says so" \
  grep -q 'was already written by another row of this run' names.errors.jsonl
check "... a name over 255 bytes says so" grep -q 'names may have at most 255' names.errors.jsonl
check "control characters become _" test -e "out/names/tab_here.txt"
check "the first of each name stays" test "$(ls out/names | sort | tr '\n' ' ')" = "_.txt a.txt tab_here.txt "

# --- retrying the rows that failed ----------------------------------------------------------
cat >flaky.py <<'PY'
import os
class Flaky:
    def __call__(self, ids):
        broken = os.path.exists(os.path.join(os.path.dirname(__file__), "broken"))
        return [ValueError("broken") if broken and i % 50 == 0 else i * 2 for i in ids]
PY
cat >flaky.orch <<'ORCH'
pipeline flaky;
operator double(id: Int) -> Int = python("flaky.py", class: "Flaky");
source rows = jsonl("rows.jsonl");
sink jsonl(path: "out/flaky.jsonl", record: { id: rows.id, twice: double(rows.id as Int) { batch: 16 } });
ORCH
if $python -c 'import msgpack' 2>/dev/null; then
  touch broken
  status=0; orch run flaky.orch --quiet 2>/dev/null || status=$?
  check "a run with failing rows ends (exit 2)" test "$status" = 2
  check "... 9 of them" test "$(wc -l <flaky.errors.jsonl)" = 9
  rm broken
  status=0; orch run flaky.orch --retry-failed 2>retry.log || status=$?
  check "--retry-failed runs them again, and they succeed" test "$status" = 0
  check "... only them" grep -q "resumed: 441 source rows done by an earlier run were skipped" retry.log
  check "... every row is written once" test "$(sort -u out/flaky.jsonl | wc -l)" = 450 -a "$(wc -l <out/flaky.jsonl)" = 450
  check "... and the errors journal is empty" test ! -s flaky.errors.jsonl
fi

# --- outputs removed under an unfinished run ---------------------------------------------------
rm -rf slow.run
"$ORCH_BIN/orch" run slow.orch --in-process --quiet 2>/dev/null &
first=$!
await_commit slow.run
kill -9 "$first" 2>/dev/null || true
wait "$first" 2>/dev/null || true
rm -rf out
status=0; orch run slow.orch --in-process 2>removed.log || status=$?
check "an unfinished run whose outputs were removed is not resumed (exit 1)" test "$status" = 1
check "... saying so" grep -q 'cannot resume: "out/slow.jsonl" has 0 bytes where the run journal counts [0-9]* (it was removed or changed); run with --restart' removed.log

# --- a journal of another plan or other inputs --------------------------------------------------
rm -rf slow.run
"$ORCH_BIN/orch" run slow.orch --in-process --restart --quiet 2>/dev/null &
first=$!
await_commit slow.run
kill -9 "$first" 2>/dev/null || true
wait "$first" 2>/dev/null || true
echo '{"id": 450, "n": 1}' >>rows.jsonl
status=0; orch run slow.orch --in-process 2>changed.log || status=$?
check "an unfinished run on other inputs is not resumed (exit 1)" test "$status" = 1
check "... saying what to do" grep -q "holds an unfinished run of this pipeline on other inputs; run with --restart" changed.log
check "--restart starts over" orch run slow.orch --in-process --restart --quiet
check "... and writes every row once" test "$(wc -l <out/slow.jsonl)" = 451

# --- a disk that is always full: the run stops after 10 rows in a row -----------------------
seq 1 5000 >many.txt
cat >devfull.orch <<'ORCH'
pipeline devfull;
source rows = lines("many.txt");
sink jsonl(path: "/dev/full", record: { r: rows });
ORCH
status=0; orch run devfull.orch --in-process --quiet --no-journal 2>devfull.log || status=$?
check "rows that cannot be written fail, and the run stops (exit 1)" test "$status" = 1
check "... saying why" grep -q 'stopped after 10 source rows in a row could not be written (sink 0 (jsonl): cannot write "/dev/full": No space left on device)' devfull.log
check "... counting 10 as failed, none as written, the rest of the round unfinished" \
  grep -qE "'devfull': [0-9]+ rows in .*: 0 written, 0 dropped, 10 failed .*; [0-9]+ unfinished" devfull.log
check "... before the end of its input" test "$(wc -l <devfull.errors.jsonl)" -lt 5000

# --- a full disk (a 2 MB file system of its own; needs root) ---------------------------------
if [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then
  for i in $(seq 0 399); do echo "{\"id\": $i, \"pad\": \"$(printf '%04000d' 0)\"}"; done >big.jsonl
  cat >full.orch <<'ORCH'
pipeline full;
source rows = jsonl("big.jsonl");
sink jsonl(path: "disk/rows.jsonl", record: rows);
sink files(dir: "disk/files", name: string(rows.id), ext: ".json", content: rows);
ORCH
  mkdir -p disk
  unshare -m bash -c '
    mount -t tmpfs -o size=2m tmpfs disk
    status=0; "$0" run full.orch --in-process --no-journal --quiet 2>full.log || status=$?
    echo "$status" >full.status
    cp disk/rows.jsonl full.rows
    ls disk/files | sort >full.files
    ls -a disk/files | grep -c orch-partial >full.partials || true' "$ORCH_BIN/orch"
  check "a full disk fails rows (exit 2, or 1 once 10 in a row failed)" \
    grep -qE "^[12]$" full.status
  check "... with every line whole" whole_lines full.rows
  check "... and each written row in both sinks" test "$(wc -l <full.rows)" = "$(wc -l <full.files)"
  check "... counted as written, the others as failed" \
    grep -qE "'full': [0-9]+ rows in .*: $(wc -l <full.rows) written, 0 dropped, [1-9][0-9]* failed" full.log
  check "... with the cause in the errors journal" grep -q "No space left on device" full.errors.jsonl
  check "... and no partial file" test "$(cat full.partials)" = 0
  mkdir -p readonly
  sed 's|"disk/|"readonly/|g; s/pipeline full;/pipeline readonly;/' full.orch >readonly.orch
  unshare -m bash -c '
    mount -t tmpfs -o ro tmpfs readonly
    status=0; "$0" run readonly.orch --in-process --no-journal 2>readonly.log || status=$?
    echo "$status" >readonly.status' "$ORCH_BIN/orch"
  check "a read-only file system stops the run before its first row (exit 1)" \
    test "$(cat readonly.status)" = 1
  check "... saying why" grep -q 'cannot write "readonly/rows.jsonl": Read-only file system' readonly.log
else
  echo "note: the full-disk checks need root and mount namespaces"
fi
finish_checks
