#!/usr/bin/env bash
# End-to-end checks of the distributed runtime on one machine: worker processes killed with
# SIGKILL at random moments, a hung worker, and `orch run` itself interrupted or killed: the
# outputs match a clean run, and no worker process is ever left behind.
set -euo pipefail
: "${ORCH_BIN:?set by ctest}" "${ORCH_SOURCE_DIR:?set by ctest}"
# shellcheck source=lib/checks.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib/checks.bash"

workdir=$(mktemp -d)
trap 'rm -rf "$workdir"' EXIT
cd "$workdir"
for i in $(seq 0 59); do echo "{\"id\": $i, \"n\": $((i % 9 + 1))}"; done >rows.jsonl
cat >pages.orch <<'ORCH'
pipeline pages;
source rows = jsonl("rows.jsonl") as Doc;
call split = test.split(field: "n") { replicas: 2 };
call work = test.sleep(ms: 20) { batch: 4, replicas: 4 };
pages = expand(split(rows)) as Page;
sink jsonl(path: "out/docs.jsonl", record: { id: rows.id, pages: reduce(work(pages)) });
ORCH

"$ORCH_BIN/orch" run pages.orch --in-process --quiet 2>/dev/null
expected=$(sort out/docs.jsonl)
check "the clean run writes every row" test "$(wc -l <out/docs.jsonl)" = 60

workers_of() { pgrep -P "$1" -f "orch worker" || true; }
# The longest-running worker of a run: one that has certainly joined and holds replicas.
oldest_worker() { pgrep -o -P "$1" -f "orch worker" || true; }
# Waits until the run has written at least $1 rows (so its workers are busy), at most 30 s.
wait_for_rows() {
  local waited=0
  until [ "$(cat out/docs.jsonl 2>/dev/null | wc -l)" -ge "$1" ] || [ "$waited" -ge 300 ]; do
    sleep 0.1; waited=$((waited + 1))
  done
}
leftover_workers() { pgrep -f "orch-$1-[0-9]*.sock" || true; }

# SIGKILL three workers at random moments while the run goes on.
rm -rf out
"$ORCH_BIN/orch" run pages.orch --workers 4 --heartbeat-ms 100 >run.log 2>&1 &
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
"$ORCH_BIN/orch" run pages.orch --workers 3 --heartbeat-ms 100 --liveness 4 >hung.log 2>&1 &
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
  "$ORCH_BIN/orch" run pages.orch --workers 3 >signal.log 2>&1 &
  run=$!
  sleep 0.5
  kill -"$signal" "$run"
  status=0; wait "$run" || status=$?
  sleep 0.3
  if [ "$signal" = KILL ]; then
    check "SIGKILL ends the run" test "$status" = 137
    rm -f "${TMPDIR:-/tmp}/orch-$run-"*.sock # a killed coordinator cannot remove its socket
  else
    check "SIG$signal ends the run with status 130" test "$status" = 130
    check "... and says so" grep -q "interrupted" signal.log
  fi
  check "no worker outlives SIG$signal of orch run" test -z "$(leftover_workers "$run")"
done

[ "$failures" -eq 0 ] || cat run.log
finish_checks
