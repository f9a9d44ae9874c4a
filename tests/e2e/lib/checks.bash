# Shared by the end-to-end scripts: named checks, exit-code capture and the final verdict.
# Sourced, not run (ctest runs only tests/e2e/*.sh).
failures=0
check() { # check DESCRIPTION COMMAND...: the command must succeed
  local description=$1; shift
  if "$@"; then echo "ok: $description"; else echo "FAIL: $description"; failures=$((failures + 1)); fi
}
exit_code() { set +e; "$@" >/dev/null 2>&1; echo $?; set -e; }
finish_checks() {
  if [ "$failures" -ne 0 ]; then echo "$failures check(s) failed"; exit 1; fi
}
