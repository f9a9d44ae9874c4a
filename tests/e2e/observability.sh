#!/usr/bin/env bash
# Live progress on a terminal and off it, --metrics and --trace checked against each other and
# the summary, and the HTML report rendered by headless Chromium.
set -euo pipefail
: "${ORCH_BIN:?set by ctest}" "${ORCH_SOURCE_DIR:?set by ctest}"
# shellcheck source=lib/checks.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib/checks.bash"
python=/usr/bin/python3

workdir=$(mktemp -d)
trap 'rm -rf "$workdir"' EXIT
cd "$workdir"
for i in $(seq 0 29); do echo "{\"id\": $i, \"n\": $((i % 7 + 1))}"; done >rows.jsonl
cat >pages.orch <<'ORCH'
pipeline pages;
source rows = jsonl("rows.jsonl") as Doc;
pages = expand(test.split(rows, field: "n")) as Page;
slow = test.sleep(pages, ms: 10) { batch: 4, replicas: 2 };
sink jsonl(path: "out/docs.jsonl", record: { id: rows.id, pages: reduce(slow) });
ORCH

# On a terminal (a pseudo-terminal made by script): a block redrawn in place.
script -qfec "$ORCH_BIN/orch run pages.orch --in-process --threads 2" /dev/null >tty.log 2>&1 || true
check "on a terminal, progress is redrawn in place" \
  test "$(grep -c $'\x1b\[[0-9]*F' tty.log)" -ge 2
check "... with a line per Call" grep -q "slow: [0-9]*/[0-9]* grains" tty.log
# Off a terminal: plain lines.
"$ORCH_BIN/orch" run pages.orch --in-process 2>plain.log
check "off a terminal, plain progress lines" \
  test "$(grep -c "source rows done" plain.log)" -ge 2
check "... without terminal control codes" test "$(grep -c $'\x1b' plain.log)" = 0
"$ORCH_BIN/orch" run pages.orch --in-process --quiet 2>quiet.log
check "--quiet turns progress off" test "$(grep -c "source rows done" quiet.log)" = 0

# Metrics and trace, against each other and the summary.
"$ORCH_BIN/orch" run pages.orch --workers 2 --metrics metrics.json --trace trace.json 2>run.log
check "metrics and trace agree with each other and with the summary" $python - <<'PY'
import json, re, sys
metrics = json.load(open("metrics.json"))
trace = json.load(open("trace.json"))
summary = open("run.log").read()
problems = []
def expect(ok, what):
    if not ok: problems.append(what)
batches = metrics["batches"]
expect(metrics["format"] == "orch-metrics" and metrics["version"] == 1, "format")
expect(sum(c["batches"] for c in metrics["calls"]) == len(batches), "batch count per call")
expect(sum(c["grains"] for c in metrics["calls"]) == sum(b["grains"] for b in batches), "grains")
expect(all(b["finished"] >= b["dispatched"] >= 0 for b in batches), "batch times")
expect(metrics["rows"]["finished"] == len(metrics["source_rows"]) == 30, "rows")
expect(metrics["rows"]["written"] == 30, "written")
first, median, last = (metrics["row_finish_seconds"][k] for k in ("first", "median", "last"))
expect(0 <= first <= median <= last <= metrics["wall_seconds"], "finish times")
spans = [e for e in trace["traceEvents"] if e["ph"] == "X"]
for e in spans:
    expect(all(k in e for k in ("name", "ts", "dur", "pid", "tid")) and e["dur"] >= 0, "span fields")
expect(len([e for e in spans if e["cat"] == "batch"]) == len(batches), "every batch in the trace")
expect(len([e for e in spans if e["cat"] == "source-row"]) == 30, "every row in the trace")
names = {e["args"]["name"] for e in trace["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"}
expect(any("/replica" in n for n in names), "replica lanes")
for call in metrics["calls"]:
    m = re.search(r"call '%s': (\d+) grains in (\d+) batches" % re.escape(call["name"]), summary)
    expect(m and int(m.group(1)) == call["grains"] and int(m.group(2)) == call["batches"],
           "summary of " + call["name"])
print("\n".join(problems))
sys.exit(1 if problems else 0)
PY

# The report, rendered by a real browser.
"$ORCH_BIN/orch" report metrics.json -o report.html 2>/dev/null
check "the report is one page with three charts and no external resources" \
  test "$(grep -o '<svg' report.html | wc -l)" = 3 -a -z "$(grep -oE '(src|href)=' report.html)"
check "orch report refuses a file that is not metrics" \
  test "$(exit_code "$ORCH_BIN/orch" report rows.jsonl -o bad.html)" = 1
if command -v chromium >/dev/null; then
  timeout 120 chromium --headless --disable-gpu --no-sandbox --hide-scrollbars \
    --window-size=1000,1200 --screenshot="$workdir/report.png" "file://$workdir/report.html" \
    >chromium.log 2>&1 || true
  check "headless Chromium renders the report" test "$(stat -c %s report.png 2>/dev/null || echo 0)" -gt 20000
else
  echo "skip: chromium is not installed; the report was not rendered"
fi
finish_checks
