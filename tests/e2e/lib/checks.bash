# Shared by the end-to-end scripts: named checks, exit-code capture and the final verdict.
# Sourced, not run (ctest runs only tests/e2e/*.sh).
failures=0
check() { # check DESCRIPTION COMMAND...: the command must succeed
  local description=$1; shift
  if "$@"; then echo "ok: $description"; else echo "FAIL: $description"; failures=$((failures + 1)); fi
}
check_equal() { # check_equal DESCRIPTION EXPECTED ACTUAL: both printed when they differ
  if [ "$2" = "$3" ]; then echo "ok: $1"; else
    echo "FAIL: $1"; echo "  expected: $2"; echo "  actual:   $3"; failures=$((failures + 1)); fi
}
exit_code() { set +e; "$@" >/dev/null 2>&1; echo $?; set -e; }
finish_checks() {
  if [ "$failures" -ne 0 ]; then echo "$failures check(s) failed"; exit 1; fi
}
signal_once_running() { # signal_once_running SIGNAL PID LOG SECONDS: once LOG shows the run's first
  # progress line (its handlers are installed: a background job of a script starts with SIGINT
  # ignored, and a signal sent earlier would be lost or kill it), wait SECONDS, then signal PID
  for _ in $(seq 200); do grep -q "source rows done" "$3" && break; sleep 0.05; done
  sleep "$4"
  kill -"$1" "$2"
}
await_commit() { # await_commit JOURNAL_DIR: waits (at most 20 s) until the run journaled there has
  # committed a row. A test that kills a run and expects its resume to skip something waits for
  # this, not a fixed time: on a loaded machine a run may have committed nothing by then.
  for _ in $(seq 400); do [ -s "$1/commits" ] && return 0; sleep 0.05; done
  echo "note: no row committed in $1 after 20 s"
}
run_killing_worker() { # run_killing_worker CLEAN READY METRICS LOG COMMAND...: runs COMMAND (an
  # orch run with --workers and --metrics METRICS, its stderr to LOG) after `eval CLEAN`, and
  # SIGKILLs its worker local-0 once `eval READY` holds (batches flow). Checks of a lost worker's
  # recovery need the killed worker to have held batches: under a loaded ctest -j it may have
  # joined late and held none, so the run is tried again (at most three times).
  local clean=$1 ready=$2 metrics=$3 log=$4 attempt run
  shift 4
  for attempt in 1 2 3; do
    eval "$clean"
    "$@" 2>"$log" &
    run=$!
    for _ in $(seq 500); do
      eval "$ready" && break
      kill -0 "$run" 2>/dev/null || break
      sleep 0.01
    done
    # Only this run's worker (its child): tests run side by side under ctest -j.
    pkill -9 -P "$run" -f "orch-worker --connect .*--name local-0 " || true
    wait "$run" || true
    /usr/bin/python3 -c 'import json, sys; m = json.load(open(sys.argv[1]))
sys.exit(0 if any(b["outcome"] == "lost" for b in m["batches"]) else 1)' "$metrics" && return 0
    echo "attempt $attempt: the killed worker held no batch; again"
  done
}
