#!/usr/bin/env bash
# End-to-end checks of `orch run`: a pipeline from a JSON Lines file to JSON Lines outputs with
# the embedded runtime, params, compiled plans, the policies, the errors journal, exit codes.
set -euo pipefail
: "${ORCH_BIN:?set by ctest}" "${ORCH_SOURCE_DIR:?set by ctest}"

# shellcheck source=lib/checks.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib/checks.bash"

workdir=$(mktemp -d)
trap 'rm -rf "$workdir"' EXIT
cd "$workdir"
cat >in.jsonl <<'ROWS'
{"id": 0, "n": 3}
{"id": 1, "n": 0}
{"id": 2, "n": 6}
not json
{"id": 4, "n": 2}
ROWS
printf '{"id": 7, "n": 1}\n' >other.jsonl
cat >pages.orch <<'ORCH'
pipeline pages;
param input: String = "in.jsonl";
source rows = jsonl(input) as Doc;
call split = test.split(field: "n");
call work = test.sleep(ms: 1) { batch: 4, replicas: 2 };
pages = expand(split(rows)) as Page;
checked = test.fail(work(pages), ordinals: "5");
sink jsonl(path: "out/docs.jsonl", record: { id: rows.id, pages: reduce(checked) });
ORCH
expected='{"id":0,"pages":[0,1,2]}
{"id":1,"pages":[]}
{"id":4,"pages":[0,1]}'

check "a run with one failed row exits 2" \
  test "$(exit_code "$ORCH_BIN/orch" run pages.orch --threads 3)" = 2
check "every good row is written once" test "$(sort out/docs.jsonl)" = "$expected"
check "the malformed line is journaled with its line number" \
  grep -q '"row": 3, "kind": "source-error".*in.jsonl:4: malformed JSON line' pages.errors.jsonl
check "the failed page is journaled with its Call and ordinal" \
  grep -q '"row": 2, "kind": "record-failure", "call": "checked", "path": \[5\]' pages.errors.jsonl
check "... and with the sink row it failed" \
  grep -q '"rows": \[{"sink": 0, "row_path": \[\], "kind": "record-failure"' pages.errors.jsonl
check "the summary accounts for every row" \
  grep -q "5 rows in .* 3 written, 0 dropped, 2 failed" <("$ORCH_BIN/orch" run pages.orch 2>&1)

for policy in "--ready-order unordered" "--batching parent-bound" "--gather barrier" \
              "--max-live-roots 1 --threads 1"; do
  rm -f out/docs.jsonl
  # shellcheck disable=SC2086
  "$ORCH_BIN/orch" run pages.orch $policy --quiet 2>/dev/null || true
  check "$policy writes the same rows" test "$(sort out/docs.jsonl)" = "$expected"
done

check "--set overrides a param" \
  test "$(exit_code "$ORCH_BIN/orch" run pages.orch --set input=other.jsonl --errors none.jsonl)" = 0
check "... and the run reads the other input" test "$(cat out/docs.jsonl)" = '{"id":7,"pages":[0]}'
check "an empty errors journal when nothing failed" test -e none.jsonl -a ! -s none.jsonl

"$ORCH_BIN/orchc" -o pages.plan pages.orch
rm -f out/docs.jsonl
"$ORCH_BIN/orch" run pages.plan --quiet 2>/dev/null || true
check "a compiled plan runs the same" test "$(sort out/docs.jsonl)" = "$expected"
check "--set on a compiled plan is refused" \
  grep -q "needs the .orch source" <("$ORCH_BIN/orch" run pages.plan --set input=x 2>&1 || true)

printf 'pipeline broken\n' >broken.orch
check "a program with errors exits 1 with file:line:col" \
  grep -q "broken.orch:1:16: error" <("$ORCH_BIN/orch" run broken.orch 2>&1 || true)
check "a missing input file exits 1" \
  test "$(exit_code "$ORCH_BIN/orch" run pages.orch --set input=missing.jsonl)" = 1

finish_checks
