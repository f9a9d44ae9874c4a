#!/usr/bin/env bash
# scripts/install-deps.sh on a machine that already has everything: it says so and changes
# nothing (by then `make test` has run it once, so every package is present).
set -euo pipefail
: "${ORCH_SOURCE_DIR:?set by ctest}"
before=$(dpkg-query -W -f='${Package} ${Version} ${Status}\n' | sort)
output=$("$ORCH_SOURCE_DIR/scripts/install-deps.sh")
after=$(dpkg-query -W -f='${Package} ${Version} ${Status}\n' | sort)
case "$output" in
  "install-deps: all "*" packages present") echo "ok: $output" ;;
  *) echo "FAIL: expected a no-op, got: $output"; exit 1 ;;
esac
if [ "$before" != "$after" ]; then
  echo "FAIL: the installed packages changed"
  diff <(echo "$before") <(echo "$after") | head
  exit 1
fi
echo "ok: no package changed"
