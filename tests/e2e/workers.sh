#!/usr/bin/env bash
# End-to-end checks of the distributed runtime on one machine: worker processes killed with
# SIGKILL at random moments, a hung worker, and `orch run` itself interrupted or killed: the
# outputs match a clean run, and no worker process is ever left behind. Each run starts afresh
# (--restart): resuming from the run journal is tests/e2e/outputs.sh's.
set -euo pipefail
: "${ORCH_BIN:?set by ctest}" "${ORCH_SOURCE_DIR:?set by ctest}"
# shellcheck source=lib/checks.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib/checks.bash"

workdir=$(mktemp -d)
trap 'rm -rf "$workdir"' EXIT
cd "$workdir"
# A temporary directory of its own: runs of tests alongside (ctest -j) would otherwise clean
# up the socket directory of the coordinator this test kills before it looks.
mkdir tmp
export TMPDIR="$workdir/tmp"
for i in $(seq 0 59); do echo "{\"id\": $i, \"n\": $((i % 9 + 1))}"; done >rows.jsonl
cat >pages.orch <<'ORCH'
pipeline pages;
source rows = jsonl("rows.jsonl") as Doc;
call split = test.split(field: "n") { replicas: 2 };
call work = test.sleep(ms: 20) { batch: 4, replicas: 4 };
pages = expand(split(rows)) as Page;
sink jsonl(path: "out/docs.jsonl", record: { id: rows.id, pages: reduce(work(pages)) });
ORCH

"$ORCH_BIN/orch" run pages.orch --restart --in-process --quiet 2>/dev/null
expected=$(sort out/docs.jsonl)
check "the clean run writes every row" test "$(wc -l <out/docs.jsonl)" = 60

workers_of() { pgrep -P "$1" -f "orch-worker --connect" || true; }
# The longest-running worker of a run: one that has certainly joined and holds replicas.
oldest_worker() { pgrep -o -P "$1" -f "orch-worker --connect" || true; }
# Waits until the run has written at least $1 rows (so its workers are busy), at most 30 s.
wait_for_rows() {
  local waited=0
  until [ "$(cat out/docs.jsonl 2>/dev/null | wc -l)" -ge "$1" ] || [ "$waited" -ge 300 ]; do
    sleep 0.1; waited=$((waited + 1))
  done
}
# Workers of run $1 connect to its private socket $TMPDIR/orch-$1-XXXXXX/coordinator.sock.
leftover_workers() { pgrep -f "orch-$1-[^ /]*/coordinator.sock" || true; }
socket_dirs_of() { ls -d "${TMPDIR:-/tmp}/orch-$1-"* 2>/dev/null || true; }

# SIGKILL three workers at random moments while the run goes on.
rm -rf out
"$ORCH_BIN/orch" run pages.orch --restart --workers 4 --heartbeat-ms 100 >run.log 2>&1 &
run=$!
kills=0
for rows in 3 15 27; do
  wait_for_rows "$rows"
  victim=$(oldest_worker "$run")
  if [ -n "$victim" ]; then kill -9 "$victim" && kills=$((kills + 1)); fi
done
status=0; wait "$run" || status=$?
check "three workers were killed during the run" test "$kills" = 3
check "the run with killed workers succeeds" test "$status" = 0
check "... and writes exactly the clean run's rows" test "$(sort out/docs.jsonl)" = "$expected"
check "the summary counts the lost workers" grep -qE "joined .*, [3-9] lost, [3-9] replaced" run.log
check "... and the re-queued batches" grep -qE "[1-9][0-9]* lost batches" run.log
check "no worker outlives the run" test -z "$(leftover_workers "$run")"

# A hung worker keeps its socket but stops answering: it is detected, killed and replaced.
rm -rf out
"$ORCH_BIN/orch" run pages.orch --restart --workers 3 --heartbeat-ms 100 --liveness 4 >hung.log 2>&1 &
run=$!
wait_for_rows 3
hung=$(oldest_worker "$run")
kill -STOP "$hung"
status=0; wait "$run" || status=$?
check "the run with a hung worker succeeds" test "$status" = 0
check "... the hung worker was detected" grep -q "silent for more than 400 ms" hung.log
check "... and the rows match the clean run" test "$(sort out/docs.jsonl)" = "$expected"
check "the hung worker does not outlive the run" test ! -e "/proc/$hung/status" -o -z "$(leftover_workers "$run")"

# SIGTERM and SIGINT stop the run cleanly; SIGKILL takes the workers along.
for signal in TERM INT KILL; do
  rm -rf out
  "$ORCH_BIN/orch" run pages.orch --restart --workers 3 >signal.log 2>&1 &
  run=$!
  # Once the run has begun: on a loaded machine a fixed 0.5 s can come before orch has even
  # started, and SIGTERM would then kill it with status 143.
  signal_once_running "$signal" "$run" signal.log 0.2
  status=0; wait "$run" || status=$?
  sleep 0.3
  if [ "$signal" = KILL ]; then
    check "SIGKILL ends the run" test "$status" = 137
    killed=$run
    check "a killed coordinator leaves its socket directory behind" test -n "$(socket_dirs_of "$killed")"
  else
    check "SIG$signal ends the run with status 130" test "$status" = 130
    check "... and says so" grep -q "interrupted" signal.log
  fi
  check "no worker outlives SIG$signal of orch run" test -z "$(leftover_workers "$run")"
done

rm -rf out
"$ORCH_BIN/orch" run pages.orch --restart --workers 1 --quiet 2>/dev/null
check "the next run removes the socket directory of the killed one" test -z "$(socket_dirs_of "$killed")"

# A Call that aborts early: every row of the source is still accounted for (5,000 rows, the
# live-root bound far below that).
for i in $(seq 0 4999); do echo "{\"id\": $i, \"n\": 2}"; done >many.jsonl
cat >abort.orch <<'ORCH'
pipeline aborting;
source rows = jsonl("many.jsonl") as Doc;
pages = expand(test.split(rows, field: "n")) as Page;
checked = test.fail(pages, kind: "batch", ordinals: "1") { batch: 4, recovery: "abort" };
sink jsonl(path: "out/abort.jsonl", record: { id: rows.id, pages: reduce(checked) });
ORCH
for mode in --in-process --workers=2; do
  status=0
  "$ORCH_BIN/orch" run abort.orch --restart "$mode" --max-live-roots 64 --errors aborted.jsonl >abort.log 2>&1 || status=$?
  check "an aborted run ($mode) exits 1" test "$status" = 1
  check "... says why" grep -q "run aborted: call 'checked' failed a batch" abort.log
  check "... and accounts for all 5000 rows in its summary, as unfinished (not failed)" grep -q "5000 rows in .*0 failed.*5000 unfinished" abort.log
  check "... and its errors journal" test "$(wc -l <aborted.jsonl)" = 5000
done

# SIGINT during a batch that would run for a minute: the run stops at once, the batch is
# abandoned, and the unfinished rows are in the journal as interrupted.
cat >stuck.orch <<'ORCH'
pipeline stuck;
source rows = jsonl("rows.jsonl") as Doc;
slow = test.sleep(rows, ms: 60000) { batch: 60 };
sink jsonl(path: "out/stuck.jsonl", record: { row: slow });
ORCH
for mode in --in-process --workers=1; do
  "$ORCH_BIN/orch" run stuck.orch --restart "$mode" --errors stuck.errors.jsonl >stuck.log 2>&1 &
  run=$!
  signal_once_running INT "$run" stuck.log 0.5
  status=0; timeout 20 tail --pid="$run" -f /dev/null || status=$?
  check "SIGINT during a long batch ($mode) ends the run without waiting for it" test "$status" = 0
  status=0; wait "$run" || status=$?
  check "... with status 130" test "$status" = 130
  check "... and every unfinished row journaled as interrupted" \
    test "$(grep -c '"kind": *"interrupted"' stuck.errors.jsonl)" = 60
done

# A cluster worker on which a batch hangs past its timeout executes itself afresh, joins
# again under its name, and the run completes (the hang happens on the first attempt only).
mkdir -p marks
cat >hang.orch <<ORCH
pipeline hang;
source rows = jsonl("rows.jsonl") as Doc;
checked = test.fail(rows, kind: "hang", ordinals: "7", attempts: 1, marks: "$workdir/marks") { batch: 4, timeout: 500ms };
sink jsonl(path: "out/hang.jsonl", record: { id: checked.id });
ORCH
rm -rf out
"$ORCH_BIN/orch" run hang.orch --restart --listen "ipc://$workdir/cluster.sock" --heartbeat-ms 100 >cluster.log 2>&1 &
run=$!
"$ORCH_BIN/orch" worker --connect "ipc://$workdir/cluster.sock" --name steady >steady.log 2>&1 &
steady=$!
status=0; timeout 60 tail --pid="$run" -f /dev/null || status=$?
wait "$run" || status=$?
check "a run whose batch hangs on a cluster worker completes" test "$status" = 0
check "... with every row" test "$(wc -l <out/hang.jsonl)" = 60
check "... the worker restarted itself" grep -q "restarting: this worker was declared lost: call 'checked' timed out after 500ms" steady.log
check "... as the same process, and joined again" test "$(grep -c "connected to ipc://$workdir/cluster.sock as steady" steady.log)" -ge 2
kill -TERM "$steady"
status=0; wait "$steady" || status=$?
check "... and stops with status 0 on SIGTERM" test "$status" = 0

# --- --wait-workers: no row before the named number of workers joined -----------------------
rm -rf out
"$ORCH_BIN/orch" run pages.orch --restart --listen "ipc://$workdir/wait.sock" --wait-workers 2 \
  --metrics wait.json >wait.log 2>&1 &
run=$!
"$ORCH_BIN/orch" worker --connect "ipc://$workdir/wait.sock" --name early >early.log 2>&1 &
early=$!
sleep 2
"$ORCH_BIN/orch" worker --connect "ipc://$workdir/wait.sock" --name late >late.log 2>&1 &
late=$!
status=0; timeout 60 tail --pid="$run" -f /dev/null || status=$?
wait "$run" || status=$?
check "a run with --wait-workers 2 completes with every row" \
  test "$status:$(sort out/docs.jsonl)" = "0:$expected"
check "... it said it waits for 2 workers" grep -q "waiting for 2 workers to join" wait.log
check "... no batch ran before the second worker joined, and both ran batches" /usr/bin/python3 -c '
import json, sys
m = json.load(open("wait.json"))
late = next(w["joined"] for w in m["workers"] if w["name"] == "late")
places = {b["place"].split("/")[0] for b in m["batches"]}
sys.exit(0 if late >= 1.5 and min(b["dispatched"] for b in m["batches"]) >= late and
         places == {"early", "late"} else 1)'
kill -TERM "$early" "$late" 2>/dev/null || true
wait "$early" "$late" 2>/dev/null || true
rm -rf out
"$ORCH_BIN/orch" run pages.orch --restart --listen "ipc://$workdir/alone.sock" --wait-workers 2 \
  --wait-timeout 1s >alone.log 2>&1 &
run=$!
"$ORCH_BIN/orch" worker --connect "ipc://$workdir/alone.sock" --name alone >alone-worker.log 2>&1 &
alone=$!
status=0; timeout 60 tail --pid="$run" -f /dev/null || status=$?
wait "$run" || status=$?
check "with --wait-timeout 1s and one worker, the run starts with it and completes" \
  test "$status:$(sort out/docs.jsonl)" = "0:$expected"
check "... and says so" grep -q "only 1 of 2 workers joined within 1 s (--wait-workers); the run starts with them" alone.log
kill -TERM "$alone" 2>/dev/null || true
wait "$alone" 2>/dev/null || true

# --- a worker that joins while every replica is busy is handed some of them ----------------
# (it used to take only idle replicas, and with all four busy it ran nothing for the whole run)
for i in $(seq 0 79); do echo "{\"id\": $i}"; done >busy.jsonl
cat >busy.orch <<'ORCH'
pipeline busy;
source rows = jsonl("busy.jsonl") as Doc;
slow = test.sleep(rows.id, ms: 100) { replicas: 4, batch: 1 };
sink jsonl(path: "out/docs.jsonl", record: { id: rows.id, slow: slow });
ORCH
rm -rf out
"$ORCH_BIN/orch" run busy.orch --restart --listen "ipc://$workdir/busy.sock" --metrics busy.json \
  >busy.log 2>&1 &
run=$!
"$ORCH_BIN/orch" worker --connect "ipc://$workdir/busy.sock" --name first --cpus 4 >first.log 2>&1 &
first=$!
wait_for_rows 8
"$ORCH_BIN/orch" worker --connect "ipc://$workdir/busy.sock" --name joiner --cpus 4 >joiner.log 2>&1 &
joiner=$!
status=0; timeout 60 tail --pid="$run" -f /dev/null || status=$?
wait "$run" || status=$?
check "a run that a worker joins while every replica is busy writes every row" \
  test "$status:$(wc -l <out/docs.jsonl)" = "0:80"
check "... and the worker that joined runs batches" /usr/bin/python3 -c '
import json, sys
m = json.load(open("busy.json"))
ran = [b["place"].split("/")[0] for b in m["batches"]]
sys.exit(0 if ran.count("joiner") > 0 else 1)'
check "... while the Call keeps its four replicas" grep -qF "of its 4 replica(s)" busy.log
kill -TERM "$first" "$joiner" 2>/dev/null || true
wait "$first" "$joiner" 2>/dev/null || true

# --- a lost worker: the others are told (protocol `lost`), so none waits for its values ----
rm -rf out
"$ORCH_BIN/orch" run busy.orch --restart --listen "ipc://$workdir/lost.sock" --heartbeat-ms 100 \
  >lost.log 2>&1 &
run=$!
"$ORCH_BIN/orch" worker --connect "ipc://$workdir/lost.sock" --name keeper --cpus 4 >keeper.log 2>&1 &
keeper=$!
"$ORCH_BIN/orch" worker --connect "ipc://$workdir/lost.sock" --name doomed --cpus 4 >doomed.log 2>&1 &
doomed=$!
wait_for_rows 8
kill -KILL "$doomed"
status=0; timeout 60 tail --pid="$run" -f /dev/null || status=$?
wait "$run" || status=$?
check "a run that loses one of two workers writes every row" \
  test "$status:$(wc -l <out/docs.jsonl)" = "0:80"
check "... the coordinator lost it" grep -q "worker doomed lost" lost.log
check "... and told the other worker" grep -q "the coordinator lost worker doomed" keeper.log
kill -TERM "$keeper" 2>/dev/null || true
wait "$keeper" "$doomed" 2>/dev/null || true
check "--wait-workers without --listen is refused" \
  test "$(exit_code "$ORCH_BIN/orch" run pages.orch --wait-workers 2)" = 1

[ "$failures" -eq 0 ] || cat run.log abort.log stuck.log cluster.log steady.log wait.log alone.log busy.log lost.log keeper.log
finish_checks
