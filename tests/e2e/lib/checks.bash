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
