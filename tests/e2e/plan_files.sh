#!/usr/bin/env bash
# A plan written by orchc is read back by the runtime side (orch inspect); damaged plans are
# refused with a message that names the file and the problem.
set -euo pipefail
: "${ORCH_BIN:?set by ctest}" "${ORCH_SOURCE_DIR:?set by ctest}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

for example in pdf_to_markdown clip_quality; do
  "$ORCH_BIN/orchc" -o "$work/$example.plan" "$ORCH_SOURCE_DIR/examples/$example.orch"
  "$ORCH_BIN/orch" inspect "$work/$example.plan" >"$work/$example.inspected"
  "$ORCH_BIN/orchc" --emit=plan-text "$ORCH_SOURCE_DIR/examples/$example.orch" >"$work/$example.text"
  cmp -s "$work/$example.inspected" "$work/$example.text" ||
    fail "$example: the plan read back differs from the plan compiled"
  echo "ok: $example round-trips through a .plan file"
done

plan="$work/pdf_to_markdown.plan"
size=$(stat -c %s "$plan")
head -c $((size / 2)) "$plan" >"$work/truncated.plan"
if "$ORCH_BIN/orch" inspect "$work/truncated.plan" >/dev/null 2>"$work/err"; then
  fail "a truncated plan was accepted"
fi
grep -q "truncated.plan: corrupt plan: the file is truncated" "$work/err" ||
  fail "unexpected message for a truncated plan: $(cat "$work/err")"
echo "ok: a truncated plan is refused: $(cat "$work/err")"

printf 'not a plan at all' >"$work/text.plan"
if "$ORCH_BIN/orch" inspect "$work/text.plan" >/dev/null 2>"$work/err"; then
  fail "a text file was accepted as a plan"
fi
grep -q "text.plan: corrupt plan: not an Orch plan" "$work/err" || fail "unexpected message for a text file: $(cat "$work/err")"
echo "ok: a text file is refused: $(cat "$work/err")"

if "$ORCH_BIN/orch" inspect "$work/missing.plan" >/dev/null 2>"$work/err"; then
  fail "a missing plan was accepted"
fi
grep -q "cannot read '.*missing.plan': No such file or directory" "$work/err" ||
  fail "unexpected message for a missing file: $(cat "$work/err")"
echo "ok: a missing plan is reported: $(cat "$work/err")"
