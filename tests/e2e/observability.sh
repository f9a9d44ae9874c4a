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
check "the report has its charts and loads nothing (no scripts, no remote resources)" \
  test "$(grep -o '<svg' report.html | wc -l)" -ge 5 -a -z "$(grep -oiE "<script|src=|href=['\"]?https?:|url\(" report.html)"
check "orch report refuses a file that is not metrics" \
  test "$(exit_code "$ORCH_BIN/orch" report rows.jsonl -o bad.html)" = 1

# What went wrong and where the time went: failed rows, a worker killed mid-run, two sinks.
for i in $(seq 0 59); do echo "{\"id\": $i, \"n\": $((i % 7 + 1))}"; done >troubled.jsonl
cat >troubled.orch <<'ORCH'
pipeline troubled;
source rows = jsonl("troubled.jsonl") as Doc;
pages = expand(test.split(rows, field: "n")) as Page;
checked = test.fail(pages, kind: "group", ordinals: "5") { batch: 8 };
slow = test.sleep(checked, ms: 15) { batch: 4, replicas: 2 };
sink jsonl(path: "out/troubled.jsonl", record: { id: rows.id, pages: reduce(slow) });
sink files(dir: "out/pages", name: format("row-{}", rows.id), ext: ".json", content: { pages: reduce(slow) });
ORCH
# Kill a worker once rows are written (one file each): the run replaces it and re-runs what it
# held.
run_killing_worker "rm -rf out/pages out/troubled.jsonl troubled.json troubled.errors.jsonl" \
  'test "$(ls out/pages 2>/dev/null | wc -l)" -ge 3' troubled.json troubled.log \
  "$ORCH_BIN/orch" run troubled.orch --workers 2 --no-journal --metrics troubled.json
"$ORCH_BIN/orch" report troubled.json -o troubled.html 2>/dev/null
check "metrics account for failures, workers, outputs and time" $python - <<'PY'
import json, os, re, sys
m = json.load(open("troubled.json"))
summary = open("troubled.log").read()
problems = []
def expect(ok, what):
    if not ok: problems.append(what)
failures = m["failures"]
# Rows with at least 6 pages (n = i % 7 + 1 >= 6) have a page 5, which poisons its row.
failed_ids = sorted(i for i in range(60) if i % 7 + 1 >= 6)
expect(failures["total"] == m["rows"]["failed"] == len(failed_ids), "failure count")
expect(sorted(int(f["label"].split()[1]) for f in failures["shown"]) == failed_ids, "failure labels")
expect(all(f["call"] == "checked" and f["kind"] == "group-failure" and
           "injected failure at ordinal 5" in f["message"] for f in failures["shown"]), "causes")
expect(failures["errors_journal"] == "troubled.errors.jsonl", "errors journal")
lost = [w for w in m["workers"] if "lost" in w]
expect(len(lost) == 1 and "killed by signal 9" in lost[0]["lost_reason"], "the lost worker")
expect(len(m["workers"]) == 3 and max(w["joined"] for w in m["workers"]) >= lost[0]["lost"], "replacement")
# The replacement takes a share of the bottleneck (it ran no batch when it got only the idle
# replicas of finished Calls), unless it joined when slow had little work left.
replacement = max(m["workers"], key=lambda w: w["joined"])
slow_index = [c["name"] for c in m["calls"]].index("slow")
later = [b for b in m["batches"] if b["call"] == slow_index and b["dispatched"] > replacement["joined"] + 0.2]
expect(replacement["batches"] > 0 or len(later) < 6, "the replacement runs batches (%d slow batches after it joined)" % len(later))
expect(sum(w["batches"] for w in m["workers"]) == len([b for b in m["batches"] if b["place"]]), "batches per worker")
calls = {c["name"]: c for c in m["calls"]}
lost_grains = sum(b["grains"] for b in m["batches"] if b["outcome"] == "lost")
expect(sum(c["rerun_grains"] for c in m["calls"]) == lost_grains > 0, "grains run again")
for c in m["calls"]:
    spent = c["active_seconds"] + c["saturated_seconds"] + c["starved_seconds"]
    expect(spent <= m["wall_seconds"] + 0.01, "time of " + c["name"])
expect(m["bottleneck"]["call"] == "slow", "bottleneck")
expect(re.search(r"bottleneck: slow \(busy \d+ %", summary), "bottleneck in the summary")
outputs = {o["target"]: o for o in m["outputs"]}
expect(outputs["out/troubled.jsonl"]["rows"] == 60 - len(failed_ids), "jsonl rows")
expect(outputs["out/troubled.jsonl"]["bytes"] == os.path.getsize("out/troubled.jsonl"), "jsonl bytes")
files = os.listdir("out/pages")
expect(outputs["out/pages/*.json"]["rows"] == len(files), "files rows")
expect(outputs["out/pages/*.json"]["bytes"] == sum(os.path.getsize("out/pages/" + f) for f in files), "files bytes")
print("\n".join(problems))
sys.exit(1 if problems else 0)
PY
check "the report lists each failed row with its cause" \
  test "$(grep -o 'injected failure at ordinal 5' troubled.html | wc -l)" = "$(grep -c '"kind"' troubled.errors.jsonl)"
check "the report links the errors journal" grep -q "href='troubled.errors.jsonl'" troubled.html
check "the report marks the lost worker and names the bottleneck" \
  grep -q "killed by signal 9" troubled.html
check "... and the bottleneck" grep -q "<b>Bottleneck: slow</b>" troubled.html
check "the report shows the outputs" grep -q "out/pages/\*.json" troubled.html

# Demand and skipped members: an if leaves work out, a reduce keeps the pages that worked.
for i in 0 1 2; do echo "{\"id\": $i, \"n\": 4}"; done >kept.jsonl
cat >kept.orch <<'ORCH'
pipeline kept;
source rows = jsonl("kept.jsonl") as Doc;
pages = expand(test.split(rows, field: "n")) as Page;
checked = test.fail(pages, ordinals: "2") { batch: 4 };
text = if pages < 3 then checked else test.identity(pages) { batch: 4 };
sink jsonl(path: "out/kept.jsonl", record: { id: rows.id, pages: reduce(text, failed: "skip") });
ORCH
"$ORCH_BIN/orch" run kept.orch --in-process --no-journal --metrics kept.json 2>kept.log || true
"$ORCH_BIN/orch" report kept.json -o kept.html 2>/dev/null
check "skipped members: rows written without them, one errors-journal line each, counted" $python - <<'PY'
import json
rows = [json.loads(line) for line in open("out/kept.jsonl")]
lines = [json.loads(line) for line in open("kept.errors.jsonl")]
m = json.load(open("kept.json"))
calls = {c["name"]: c for c in m["calls"]}
assert [r["pages"] for r in rows] == [[0, 1, 3]] * 3, rows
assert [(l["kind"], l["status"], l["path"], l["cause"]["call"]) for l in lines] == \
    [("skipped-member", "written", [2], "checked")] * 3, lines
assert m["skipped_members"]["total"] == 3 and m["engine"]["members_skipped"] == 3, m["skipped_members"]
assert calls["checked"]["grains"] == 9 and calls["checked"]["not_needed"] == 3, calls["checked"]
assert calls["test.identity@text"]["not_needed"] == 9, calls["test.identity@text"]
summary = open("kept.log").read()
assert "3 failed member(s) left out" in summary and "3 not needed" in summary, summary
PY
check "... and the report lists them and counts the work not needed" \
  grep -q "left out of their rows by <code>reduce" kept.html
check "... (the calls table has a not-needed column)" grep -q "<th>not needed</th>" kept.html
# --retry-failed runs row 0 again (it fails again) and keeps the other rows' skipped members.
sed -e 's|"out/kept.jsonl"|"out/retry.jsonl"|' -e 's|^pipeline kept;|pipeline retry;|' \
    -e 's|reduce(text, failed: "skip") });|reduce(text, failed: "skip"), bad: test.fail(rows, ordinals: "0") });|' \
    kept.orch >retry.orch
"$ORCH_BIN/orch" run retry.orch --in-process --quiet 2>/dev/null || true
"$ORCH_BIN/orch" run retry.orch --in-process --quiet --retry-failed 2>/dev/null || true
check "--retry-failed keeps the skipped-member lines of rows it does not run again" \
  test "$($python -c '
import json
print(sorted((l["row"], l["kind"]) for l in map(json.loads, open("retry.errors.jsonl"))))')" = \
  "[(0, 'record-failure'), (1, 'skipped-member'), (2, 'skipped-member')]"

# Automatic replicas: the bottleneck's changes in the summary, the metrics and the report.
cat >auto.orch <<'ORCH'
pipeline auto;
source rows = jsonl("rows.jsonl") as Doc;
pages = expand(test.split(rows, field: "n")) as Page;
slow = test.sleep(pages, ms: 25);
pinned = test.sleep(slow, ms: 1) { replicas: 1 };
sink jsonl(path: "out/auto.jsonl", record: { id: rows.id, pages: reduce(pinned) });
ORCH
"$ORCH_BIN/orch" run auto.orch --in-process --threads 4 --no-journal --metrics auto.json 2>auto.log
"$ORCH_BIN/orch" report auto.json -o auto.html 2>/dev/null
check "automatic replicas: the summary prints each change of the bottleneck and why" \
  grep -q "^orch:     replicas 1 -> [0-9]* at [0-9.]* s: busy [0-9]* % of 1 replica, input waiting" auto.log
check "... the metrics list the changes, the count and which Calls were automatic" $python - <<'PY'
import json, sys
calls = {c["name"]: c for c in json.load(open("auto.json"))["calls"]}
slow, pinned = calls["slow"], calls["pinned"]
changes = slow["replica_changes"]
ok = (slow["automatic_replicas"] and not pinned["automatic_replicas"] and changes and
      changes[0]["replicas"] >= 2 and "cores idle" in changes[0]["why"] and
      slow["replicas"] == max(c["replicas"] for c in changes) and
      pinned["replicas"] == 1 and pinned["replica_changes"] == [] and
      len(slow["replica_places"]) >= 2 and 0 < slow["busy_share"] <= 1.05)
sys.exit(0 if ok else 1)
PY
check "... and the report has a Replicas section with them" \
  grep -q "<h2>Replicas</h2>.*<td class='call'>slow</td><td>[0-9]* (automatic)</td><td>[0-9.]* s: [0-9]* (busy" auto.html

# A run of 6,000 pages keeps its report small.
for i in $(seq 0 999); do echo "{\"id\": $i, \"n\": 6}"; done >big.jsonl
sed 's/troubled.jsonl/big.jsonl/; s/ordinals: "5"/ordinals: "99"/; s/ms: 15/ms: 0/; s/batch: 4,/batch: 1,/' troubled.orch >big.orch
"$ORCH_BIN/orch" run big.orch --in-process --no-journal --quiet --metrics big.json 2>/dev/null
"$ORCH_BIN/orch" report big.json -o big.html 2>/dev/null
echo "the 6,000-page run's report: $(stat -c %s big.html) bytes"
check "a 6,000-page run's report stays under 2 MB" test "$(stat -c %s big.html)" -lt 2000000

# The failures table says which page failed; replicas are numbered within their Call; worker
# lanes give each worker's busy share of its replicas' time.
check "the failures table says which page failed" grep -q "<td>Page 5</td>" troubled.html
check "... the metrics have its path, and each replica's number is within its Call's count" \
  $python - <<'PY'
import json
m = json.load(open("troubled.json"))
shown = m["failures"]["shown"]
assert shown and all(f["path"] == [5] and f["where"] == "Page 5" for f in shown), shown[:2]
for call in m["calls"]:
    for replica in call["replica_places"]:
        number = int(replica["place"].rsplit(" ", 1)[1])
        assert number < call["replicas"], (call["name"], replica["place"], call["replicas"])
PY
check "worker lanes show busy shares of their replicas' time, never over 100 %" $python - <<'PY'
import re
shares = re.findall(r"(\d+) batches, busy (\d+) % of (\d+) replicas?", open("troubled.html").read())
# Two workers and the replacement (which may get no batch: it joins late).
assert 2 <= len(shares) <= 3 and all(int(busy) <= 100 for _, busy, _ in shares), shares
PY
mkdir -p reports
"$ORCH_BIN/orch" report troubled.json -o reports/troubled.html 2>/dev/null
check "a report written elsewhere (-o) links the errors journal where it is" \
  grep -q "href='../troubled.errors.jsonl'" reports/troubled.html

# --errors - journals to standard output (no file named "-"), and the report names it unlinked.
"$ORCH_BIN/orch" run troubled.orch --in-process --no-journal --errors - --metrics dash.json \
  >dash.out 2>/dev/null || true
"$ORCH_BIN/orch" report dash.json -o dash.html 2>/dev/null
check "--errors - writes the errors journal to standard output" \
  test ! -e ./- -a "$(grep -c '"kind"' dash.out)" = \
  "$($python -c 'import json; print(json.load(open("dash.json"))["failures"]["total"])')" \
  -a -s dash.out
check "... and the report names it without a link" \
  grep -q "in the errors journal <code>/dev/stdout</code>" dash.html

# The bytes-held chart draws the byte budget.
"$ORCH_BIN/orch" run pages.orch --in-process --no-journal --quiet --value-budget 4KiB \
  --metrics limit.json 2>/dev/null
"$ORCH_BIN/orch" report limit.json -o limit.html 2>/dev/null
check "the bytes-held chart has a line for the budget" \
  grep -q "stroke-dasharray='6 4'/><text[^>]*>budget 4.0 KiB</text>" limit.html

# Per-filter counts: the summary, the metrics and the report.
cat >filtered.orch <<'ORCH'
pipeline filtered;
source rows = jsonl("rows.jsonl") as Doc;
pages = expand(test.split(rows, field: "n")) as Page;
later = filter(pages, pages >= 2);
sink jsonl(path: "out/filtered.jsonl", record: { id: rows.id, pages: reduce(test.identity(later)) });
ORCH
"$ORCH_BIN/orch" run filtered.orch --in-process --no-journal --metrics filtered.json 2>filtered.log
"$ORCH_BIN/orch" report filtered.json -o filtered.html 2>/dev/null
# 115 pages; rows with one page drop one (5 rows), the others two (25 rows).
check "the summary counts what each filter kept and dropped" \
  grep -q "^orch:   filter 'later' (filtered.orch:4:[0-9]*): 60 kept, 55 dropped$" filtered.log
check "... the metrics" $python -c '
import json
f = json.load(open("filtered.json"))["filters"]
assert [(x["name"], x["kept"], x["dropped"], x["failed"]) for x in f] == [("later", 60, 55, 0)], f'
check "... and the report" grep -q "<h2>Filters</h2>.*<td>later</td><td>line 4, column [0-9]*</td><td>60</td><td>55</td>" filtered.html

# Ctrl-C: interrupted rows are unfinished, never failed; the resumed run counts the rows done
# earlier from its first progress line and ends at 30 of 30.
mkdir -p docs
for i in $(seq 0 29); do echo "doc $i" >"docs/d$i.txt"; done
cat >resumed.orch <<'ORCH'
pipeline resumed;
source docs = files("docs/*.txt") as Doc;
slow = test.sleep(docs.name, ms: 150) { batch: 2, replicas: 2 };
sink jsonl(path: "out/resumed.jsonl", record: { name: docs.name, s: slow });
ORCH
"$ORCH_BIN/orch" run resumed.orch --in-process --threads 2 --metrics interrupted.json \
  2>interrupted.log &
run=$!
signal_once_running INT "$run" interrupted.log 0.6
status=0; wait "$run" || status=$?
check "SIGINT: status 130" test "$status" = 130
check "... progress and summary say unfinished, and no row failed" \
  test "$(grep -c " unfinished" interrupted.log)" -ge 2 -a -z "$(grep -E "[1-9][0-9]* failed" interrupted.log || true)"
"$ORCH_BIN/orch" report interrupted.json -o interrupted.html 2>/dev/null
check "... the metrics, the errors journal and the report agree" $python - <<'PY'
import json
m = json.load(open("interrupted.json"))
statuses = {r["status"] for r in m["source_rows"]}
assert m["rows"]["failed"] == 0 and m["rows"]["unfinished"] > 0, m["rows"]
assert "failed" not in statuses and "unfinished" in statuses, statuses
assert m["failures"]["total"] == 0, m["failures"]
lines = [json.loads(l) for l in open("resumed.errors.jsonl")]
assert len(lines) == m["rows"]["unfinished"], (len(lines), m["rows"])
assert all(l["status"] == "unfinished" and l["kind"] == "interrupted" for l in lines), lines[:1]
html = open("interrupted.html").read()
assert "No source row failed" in html and "%d unfinished" % m["rows"]["unfinished"] in html
assert "The run stopped early:</b> interrupted" in html and m["stopped"].startswith("interrupted")
assert m["rows"]["finished"] + m["rows"]["not_started"] == 30, m["rows"]
# Rows the stop left unfinished did not finish: the last finish time is a written row's.
written = [r["finished"] for r in m["source_rows"] if r["status"] == "written"]
assert m["row_finish_seconds"]["last"] == max(written), (m["row_finish_seconds"], max(written))
PY
done_before=$($python -c 'import json; print(json.load(open("interrupted.json"))["rows"]["written"])')
"$ORCH_BIN/orch" run resumed.orch --in-process --threads 2 2>resumed.log
check "the resumed run counts the rows done earlier from its first progress line" \
  grep -q "^orch: $done_before of 30 source rows done (0 written, 0 failed; resumed: $done_before of 30 rows done earlier)" resumed.log
check "... and ends at 30 of 30" \
  grep -q "^orch: 30 of 30 source rows done ($((30 - done_before)) written, 0 failed; resumed: $done_before of 30 rows done earlier)" resumed.log

# A row that failed before the stop stays failed when the run is resumed: the resumed run names
# it, and its exit status is 2, not 0.
sed -e 's/^pipeline resumed;/pipeline mixed;/' -e 's|out/resumed.jsonl|out/mixed.jsonl|' \
    -e 's|s: slow });|s: test.fail(slow, ordinals: "0") });|' resumed.orch >mixed.orch
"$ORCH_BIN/orch" run mixed.orch --in-process --threads 2 2>mixed.log &
run=$!
signal_once_running INT "$run" mixed.log 0.6
wait "$run" || true
status=0; "$ORCH_BIN/orch" run mixed.orch --in-process --threads 2 2>mixed-resumed.log || status=$?
check "a resumed run whose earlier run failed a row exits 2 and says so" \
  test "$status" = 2 -a -n "$(grep "resumed: [0-9]* source rows done by an earlier run were skipped (1 of them had failed" mixed-resumed.log)"
check "... from its first progress line" grep -q "rows done earlier, 1 of them failed)" mixed-resumed.log

# Operators' own output with the Call and replica, silenced by --log-level; a replica whose
# process crashed is marked on its worker's lane; an operator that fails whole batches which
# splitting rescues gets a warning naming the cause.
if "$python" -c 'import msgpack' 2>/dev/null; then
  cat >talk.py <<'PY'
import os, sys
class Talk:
    def __init__(self):
        print("loaded the talking model", file=sys.stderr, flush=True)
    def __call__(self, xs):
        print("working on", len(xs), "items", file=sys.stderr, flush=True)
        if 3 in xs:
            os._exit(3)
        return [x + 1 for x in xs]
def check(x):
    if x == 5:
        raise ValueError("bad item %d" % x)
    if x == 7:
        error = ValueError("bad item 7")
        error.add_note("a note added after the exception")
        raise error
    return x * 2
class Picky:
    def __call__(self, xs):
        if len(xs) > 1:
            raise RuntimeError("model returned 1 result for a batch of %d" % len(xs))
        return [check(x) for x in xs]
PY
  cat >talk.orch <<'ORCH'
pipeline talk;
operator talk(x: Int) -> Int = python("talk.py", class: "Talk");
operator picky(x: Int) -> Int = python("talk.py", class: "Picky");
source rows = jsonl("rows.jsonl") as Doc;
sink jsonl(path: "out/talk.jsonl", record: { id: rows.id, t: talk(rows.id as Int) { batch: 4 }, p: picky(rows.id as Int) { batch: 8 } });
ORCH
  "$ORCH_BIN/orch" run talk.orch --workers 1 --no-journal --metrics talk.json 2>talk.log || true
  "$ORCH_BIN/orch" report talk.json -o talk.html 2>/dev/null
  check "an operator's own output names its Call and replica" \
    grep -q "talk@sink0: replica 0: loaded the talking model" talk.log
  check "... and, during a batch, the batch's rows" \
    grep -qE "talk@sink0: replica 0, rows? [0-9]+(, [0-9]+)*( and [0-9]+)?: working on [0-9]+ items" talk.log
  check "a batch whose operator's process crashed is on its worker's lane" $python -c '
import json
m = json.load(open("talk.json"))
crashed = [b for b in m["batches"] if b["outcome"] == "crashed"]
assert crashed and all(b["place"] == "local-0/replica 0" for b in crashed), crashed'
  check "... marked in the report" grep -q "its operator.s process crashed on batch [0-9]* of .talk@sink0. at [0-9.]* s; the replica was restarted" talk.html
  check "batches rescued by splitting: a warning with the cause in the summary" \
    grep -q "warning: call 'picky@sink0': [0-9]* batch(es) failed whole and were split.*(the first failure: RuntimeError: model returned 1 result for a batch of" talk.log
  check "... and in the report" grep -q "class='warning'><b>Warning: picky@sink0</b>" talk.html
  check "... but not for a Call whose splits found one bad item (isolation working)" \
    test -z "$(grep "warning: call 'talk@sink0'" talk.log || true)"
  check "a folded traceback is headed by its exception, not a note added after it" \
    grep -q "<summary>ValueError: bad item 7" talk.html
  check "a Python traceback keeps its lines in the report, folded under the exception" $python -c '
import re
html = open("talk.html").read()
found = re.search(r"<details><summary>ValueError: bad item 5[^<]*</summary><pre>(.*?)</pre>", html, re.S)
assert found and found.group(1).startswith("Traceback (most recent call last):\n  File "), html[-3000:]
assert "\n    raise ValueError(" in found.group(1), found.group(1)'

  "$ORCH_BIN/orch" run talk.orch --workers 1 --no-journal --log-level warning 2>quiet-talk.log || true
  check "--log-level warning silences operators' own output" \
    test -z "$(grep "loaded the talking model" quiet-talk.log || true)"
  check "--log-level refuses an unknown level" \
    test "$(exit_code "$ORCH_BIN/orch" run talk.orch --log-level loud)" = 1
  talk_metrics=talk.json
else
  echo "skip: $python has no msgpack module; operators' output was not checked"
  talk_metrics=
fi

# The documented metrics fields, both ways, against every metrics file of this script.
# shellcheck disable=SC2086
check "docs/observability.md documents exactly the fields of real metrics files" \
  $python "$ORCH_SOURCE_DIR/tests/e2e/lib/metrics_doc.py" "$ORCH_SOURCE_DIR/docs/observability.md" \
  metrics.json troubled.json kept.json auto.json limit.json filtered.json interrupted.json $talk_metrics

if command -v chromium >/dev/null; then
  # Every report of this script laid out at 1400 and 800 px: no text over another, none
  # beyond the page's edge (tracebacks folded open).
  for page in troubled.html kept.html auto.html filtered.html interrupted.html limit.html ${talk_metrics:+talk.html}; do
    check "headless Chromium lays out $page without overlapping text" \
      $python "$ORCH_SOURCE_DIR/tests/e2e/lib/report_layout.py" "$page" 1400 800
  done
  timeout 120 chromium --headless --disable-gpu --no-sandbox --hide-scrollbars \
    --window-size=1000,2600 --screenshot="$workdir/report.png" "file://$workdir/troubled.html" \
    >chromium.log 2>&1 || true
  check "headless Chromium renders the report" test "$(stat -c %s report.png 2>/dev/null || echo 0)" -gt 20000
  # ORCH_REPORT_SCREENSHOT=PATH keeps the picture (docs/report-troubled.png is one).
  [ -z "${ORCH_REPORT_SCREENSHOT:-}" ] || cp report.png "$ORCH_REPORT_SCREENSHOT"
else
  echo "skip: chromium is not installed; the report was not rendered"
fi
finish_checks
