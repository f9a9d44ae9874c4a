#!/usr/bin/env bash
# Outputs as one transaction per source row, and resume that survives what happens between two
# runs (docs/outputs.md): a row that fails in one sink leaves no trace in the others and
# --retry-failed never duplicates; --retry-failed after a failed row wrote some rows; a
# WebDataset sink resumed after SIGINT, SIGTERM, SIGKILL and a full disk, with and without
# --retry-failed; keys and names in UTF-8 whatever the locale, up to 255 bytes; symbolic links
# at output paths; a comment or `orchc fmt` between a killed run and its resume.
set -euo pipefail
: "${ORCH_BIN:?set by ctest}" "${ORCH_SOURCE_DIR:?set by ctest}"
# shellcheck source=lib/checks.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib/checks.bash"
python=/usr/bin/python3

workdir=$(mktemp -d)
trap '[ -n "${KEEP_WORKDIR:-}" ] || rm -rf "$workdir"' EXIT
cd "$workdir"
orch() { "$ORCH_BIN/orch" "$@"; }
export LANG=C LC_ALL=C

# tar_samples DIR: the sorted keys of every sample in DIR's shards, with repeats.
tar_samples() {
  $python -c '
import glob, sys, tarfile
keys = []
for shard in sorted(glob.glob(sys.argv[1] + "/shard-*.tar")):
    with tarfile.open(shard, encoding="utf-8") as tar:
        for member in tar.getmembers():
            if member.name.endswith(".json"):
                keys.append(member.name[: -len(".json")])
print("\n".join(sorted(keys)))' "$1"
}

# --- two sinks: a row that one sink cannot write is in neither ------------------------------
for i in $(seq 0 19); do echo "{\"id\": $i, \"v\": $i}"; done >rows.jsonl
cat >two.orch <<'ORCH'
pipeline two;
source rows = jsonl("rows.jsonl") as Doc;
sink jsonl(path: "out/docs.jsonl", record: { id: rows.id, v: rows.v });
sink files(dir: "out/files", name: format("doc{}", rows.id), ext: ".txt", content: format("{}", rows.v));
ORCH
mkdir -p out/files/doc7.txt/sub
status=0; orch run two.orch --in-process 2>two.log || status=$?
check "a row the files sink cannot write fails (exit 2)" test "$status" = 2
check "... counted as failed" grep -qE "'two': 20 rows in .*: 19 written, 0 dropped, 1 failed" two.log
check "... and not in the other sink" test "$(wc -l <out/docs.jsonl)" = 19 -a -z "$(grep '"id":7' out/docs.jsonl || true)"
rm -r out/files/doc7.txt
status=0; orch run two.orch --in-process --retry-failed 2>two-retry.log || status=$?
check "--retry-failed then writes it (exit 0)" test "$status" = 0
check "... once, in both sinks" test "$(wc -l <out/docs.jsonl)" = 20 -a "$(sort -u out/docs.jsonl | wc -l)" = 20 -a -f out/files/doc7.txt
check "... and no partial file is left" test -z "$(find out -name '*.orch-partial')"

# The other order: the files sink first, the jsonl sink refusing a row (a NaN).
for i in $(seq 0 19); do echo "{\"id\": $i, \"v\": $i, \"x\": \"$([ "$i" = 3 ] && echo nan || echo 1.5)\"}"; done >nan.jsonl
cat >nan.orch <<'ORCH'
pipeline nan;
source rows = jsonl("nan.jsonl") as Doc;
sink files(dir: "out/nan-files", name: format("doc{}", rows.id), ext: ".txt", content: format("{}", rows.v));
sink jsonl(path: "out/nan.jsonl", record: { id: rows.id, x: float(rows.x as String) });
ORCH
status=0; orch run nan.orch --in-process 2>nan.log || status=$?
check "a row the jsonl sink cannot write (NaN) fails (exit 2)" test "$status" = 2
check "... and its file is not written either" test ! -e out/nan-files/doc3.txt -a -e out/nan-files/doc4.txt

# --- --retry-failed after a failed source row wrote some of its rows -------------------------
printf '{"id":0,"n":2}\n{"id":1,"n":1}\n' >rf.jsonl
mkdir -p marks
cat >rf.orch <<'ORCH'
pipeline rf;
source rows = jsonl("rf.jsonl") as Doc;
pages = expand(test.split(rows, field: "n")) as Page;
c = test.fail(pages, ordinals: "1", attempts: 2, marks: "marks");
sink jsonl(path: "out/pages.jsonl", record: { id: broadcast(rows.id, pages), p: c });
ORCH
status=0; orch run rf.orch --in-process 2>rf.log || status=$?
check "a source row with one failed page fails (exit 2)" test "$status" = 2
check "... and writes the page that worked" test "$(sort out/pages.jsonl | tr -d '\n')" = '{"id":0,"p":0}{"id":1,"p":0}'
status=0; orch run rf.orch --in-process --retry-failed 2>rf-retry.log || status=$?
check "--retry-failed runs it again; it fails again (exit 2)" test "$status" = 2
check "... without duplicating or losing a row" test "$(sort out/pages.jsonl | tr -d '\n')" = '{"id":0,"p":0}{"id":1,"p":0}'
check "... with the failure journaled once" test "$(grep -c '"row": 0,' rf.errors.jsonl)" = 1
check "... and the journal says the run finished" grep -q "state complete" rf.run/run
status=0; orch run rf.orch --in-process --retry-failed 2>rf-retry2.log || status=$?
check "a second --retry-failed succeeds (exit 0)" test "$status" = 0
check "... every page once" test "$(sort out/pages.jsonl | tr -d '\n')" = '{"id":0,"p":0}{"id":0,"p":1}{"id":1,"p":0}'
check "... and the errors journal is empty" test ! -s rf.errors.jsonl

# --- WebDataset: stopped every way, then resumed ----------------------------------------------
for i in $(seq 0 59); do echo "{\"id\": $i}"; done >wds.jsonl
cat >wds.orch <<'ORCH'
pipeline wds;
source rows = jsonl("wds.jsonl") as Doc;
s = test.sleep(rows.id, ms: 40) { batch: 1, replicas: 1 };
sink webdataset(dir: "out/wds", sample: { __key__: format("k{}", rows.id), json: { id: s } }, shard_samples: 4);
sink jsonl(path: "out/wds.jsonl", record: { id: s });
ORCH
expected=$(seq 0 59 | sed 's/^/k/' | sort)
for signal in INT TERM KILL; do
  rm -rf out/wds out/wds.jsonl wds.run
  "$ORCH_BIN/orch" run wds.orch --in-process --quiet 2>/dev/null &
  run=$!
  await_commit wds.run
  kill -"$signal" "$run"
  wait "$run" 2>/dev/null || true
  status=0; orch run wds.orch --in-process 2>"wds-resume-$signal.log" || status=$?
  check "webdataset after SIG$signal: the same command resumes and finishes (exit 0)" test "$status" = 0
  check "... skipping what was done" grep -qE "resumed: [1-9][0-9]* source rows done by an earlier run" "wds-resume-$signal.log"
  check "... with every sample once" test "$(tar_samples out/wds)" = "$expected"
  check "... no partial shard left" test -z "$(find out/wds -name '*.orch-partial')"
done

# A failed row that wrote samples, retried.
cat >wdsf.orch <<'ORCH'
pipeline wdsf;
source rows = jsonl("rf.jsonl") as Doc;
pages = expand(test.split(rows, field: "n")) as Page;
c = test.fail(pages, ordinals: "1", attempts: 1, marks: "wmarks");
sink webdataset(dir: "out/wdsf", sample: { __key__: format("d{}-p{}", broadcast(rows.id, pages), c), json: { p: c } }, shard_samples: 1);
ORCH
mkdir -p wmarks
status=0; orch run wdsf.orch --in-process 2>wdsf.log || status=$?
check "webdataset: a failed row's good page is written (exit 2)" test "$status" = 2 -a "$(tar_samples out/wdsf | tr '\n' ' ')" = "d0-p0 d1-p0 "
status=0; orch run wdsf.orch --in-process --retry-failed 2>wdsf-retry.log || status=$?
check "... --retry-failed takes it back and writes the row whole (exit 0)" test "$status" = 0
check "... every sample once" test "$(tar_samples out/wdsf | tr '\n' ' ')" = "d0-p0 d0-p1 d1-p0 "

# --retry-failed that cannot take its rows out of one sink changes no sink; one killed at any
# write or rename while it takes them out is completed by the next run.
printf '{"id":0,"n":1}\n{"id":1,"n":3}\n{"id":2,"n":2}\n{"id":3,"n":2}\n' >tw.jsonl
cat >tw.orch <<'ORCH'
pipeline tw;
source rows = jsonl("tw.jsonl") as Doc;
pages = expand(test.split(rows, field: "n")) as Page;
c = test.fail(pages, ordinals: "1", attempts: 1, marks: "twmarks");
id = broadcast(rows.id, pages);
sink jsonl(path: "out/tw.jsonl", record: { id: id, p: c }, order: "source");
sink webdataset(dir: "out/tw", sample: { __key__: format("d{}-p{}", id, c), json: { p: c } }, shard_samples: 2);
sink files(dir: "out/twf", name: format("d{}-p{}", id, c), ext: ".txt", content: format("{}", c));
ORCH
tw_expected='{"id":0,"p":0}{"id":1,"p":0}{"id":1,"p":1}{"id":1,"p":2}{"id":2,"p":0}{"id":2,"p":1}{"id":3,"p":0}{"id":3,"p":1} d0-p0 d1-p0 d1-p1 d1-p2 d2-p0 d2-p1 d3-p0 d3-p1  d0-p0.txt d1-p0.txt d1-p1.txt d1-p2.txt d2-p0.txt d2-p1.txt d3-p0.txt d3-p1.txt '
tw_outputs() {
  echo "$(sort out/tw.jsonl | tr -d '\n') $(tar_samples out/tw | tr '\n' ' ') $(ls -A out/twf | sort | tr '\n' ' ')"
}
mkdir -p twmarks
status=0; orch run tw.orch --in-process 2>/dev/null || status=$?
check "two failed documents with pages that worked (exit 2)" test "$status" = 2
mkdir -p tw-state && cp -a out tw.run tw.errors.jsonl twmarks tw-state/
before=$(md5sum out/tw.jsonl)
mv out/tw/shard-000000.tar shard-away.tar
status=0; orch run tw.orch --in-process --retry-failed 2>tw-away.log || status=$?
check "--retry-failed with a shard gone is refused (exit 1)" test "$status" = 1
check "... and changes no other sink" test "$(md5sum out/tw.jsonl)" = "$before"
mv shard-away.tar out/tw/shard-000000.tar
status=0; orch run tw.orch --in-process --retry-failed 2>/dev/null || status=$?
check "... with the shard back, it runs (exit 0) and writes every row once" \
  test "$status" = 0 -a "$(tw_outputs)" = "$tw_expected"
if strace -o /dev/null true 2>/dev/null; then
  crashed=0
  runs=0
  for point in write:1 write:2 write:3 write:4 write:6 write:10 write:20 write:28 write:30 write:35 \
    rename:1 rename:2 rename:3 renameat:1 renameat:2 renameat:3 renameat:4 renameat:5 renameat:7 \
    ftruncate:2 unlinkat:1 unlinkat:3; do
    rm -rf out tw.run tw.errors.jsonl twmarks && cp -a tw-state/. .
    sh -c 'strace -f -o /dev/null -e trace="$1" -e inject="$1:signal=KILL:when=$2" "$3" run tw.orch \
      --in-process --retry-failed --quiet >/dev/null 2>&1 || exit 1' sh "${point%%:*}" "${point##*:}" \
      "$ORCH_BIN/orch" 2>/dev/null || crashed=$((crashed + 1))
    # The next run completes it, with --retry-failed or without.
    next=$([ $((runs % 2)) = 0 ] && echo --retry-failed || true)
    runs=$((runs + 1))
    status=0; orch run tw.orch --in-process $next 2>"tw-after.log" || status=$?
    if [ "$status" != 0 ] || [ "$(tw_outputs)" != "$tw_expected" ] ||
      { [ -n "$next" ] && ! grep -q "resumed:" tw-after.log; } || [ -n "$(find out -name '.*')" ]; then
      echo "killed at $point, then ${next:-a plain run}: status $status, outputs $(tw_outputs)"
      grep "error" tw-after.log || true
      crashed=-1000
    fi
  done
  check "--retry-failed killed at any write or rename while it starts: the next run completes it" \
    test "$crashed" -ge 10
else
  echo "note: the checks that kill --retry-failed at each system call need strace"
fi

# A full disk (a file system of its own; needs root), then space freed.
if [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then
  for i in $(seq 0 99); do echo "{\"id\": $i, \"pad\": \"$(printf '%04000d' 0)\"}"; done >big.jsonl
  cat >full.orch <<'ORCH'
pipeline full;
source rows = jsonl("big.jsonl") as Doc;
sink webdataset(dir: "disk/wds", sample: { __key__: format("k{}", rows.id), json: rows }, shard_samples: 8);
ORCH
  mkdir -p disk
  unshare -m bash -c '
    mount -t tmpfs -o size=200k tmpfs disk
    "$0" run full.orch --in-process --quiet 2>full.log || true
    mkdir -p kept && cp -a disk/. kept/
    umount disk
    mount -t tmpfs -o size=4m tmpfs disk
    cp -a kept/. disk/
    status=0; "$0" run full.orch --in-process --retry-failed 2>full-resume.log || status=$?
    echo "$status" >full.status
    mkdir -p after && cp -a disk/wds after/' "$ORCH_BIN/orch"
  check "webdataset after a full disk: freed, --retry-failed finishes (exit 0)" test "$(cat full.status)" = 0
  check "... with every sample once" test "$(tar_samples after/wds)" = "$(seq 0 99 | sed 's/^/k/' | sort)"

  # A jsonl output alone holds a round's rows back and writes them together (group commit):
  # the disk fills all the same at the root whose rows do not fit (their space is reserved
  # when the root is prepared), the journal never records a row the file lacks, and freed,
  # --retry-failed writes every row once.
  for i in $(seq 0 599); do echo "{\"id\": $i, \"pad\": \"$(printf '%04000d' 0)\"}"; done >lines.jsonl
  cat >lines.orch <<'ORCH'
pipeline lines;
source rows = jsonl("lines.jsonl") as Doc;
sink jsonl(path: "disk/lines.jsonl", record: rows);
ORCH
  unshare -m bash -c '
    mount -t tmpfs -o size=1m tmpfs disk
    status=0; "$0" run lines.orch --in-process 2>lines-full.log || status=$?
    echo "$status" >lines-full.status
    cp disk/lines.jsonl lines-full.rows
    cp lines.errors.jsonl lines-full.errors
    mkdir -p kept-lines && cp -a disk/. kept-lines/
    umount disk
    mount -t tmpfs -o size=8m tmpfs disk
    cp -a kept-lines/. disk/
    status=0; "$0" run lines.orch --in-process --retry-failed 2>lines-retry.log || status=$?
    echo "$status" >lines-retry.status
    cp disk/lines.jsonl lines-after.rows' "$ORCH_BIN/orch"
  written=$(grep -oE "rows in [0-9.]+ s: [0-9]+ written" lines-full.log | grep -oE "[0-9]+ written" | cut -d" " -f1)
  check "jsonl on a full disk: rows fail (exit 1 or 2)" grep -qE "^[12]$" lines-full.status
  check "... some written first" test "${written:-0}" -gt 0
  check "... each written row in the file, whole, and no other" \
    test "$($python -c '
import json, sys
ids = [json.loads(line)["id"] for line in open(sys.argv[1])]
print(len(ids) if ids == sorted(set(ids)) else "repeated or out of order")' lines-full.rows)" = "$written"
  check "... with the cause in the errors journal" grep -q "No space left on device" lines-full.errors
  # Space reserved ahead for held lines is not taken from rows that fit: two jsonl outputs of
  # 2.4 MB on a 3 MiB disk (a megabyte reserved ahead for each failed 79 of their rows).
  cat >two-lines.orch <<'ORCH'
pipeline twolines;
source rows = jsonl("lines.jsonl") as Doc;
sink jsonl(path: "disk/ids.jsonl", record: { id: rows.id });
sink jsonl(path: "disk/lines.jsonl", record: rows);
ORCH
  unshare -m bash -c '
    mount -t tmpfs -o size=3m tmpfs disk
    status=0; "$0" run two-lines.orch --in-process --no-journal --quiet 2>two-lines.log || status=$?
    echo "$status" >two-lines.status
    du -k disk/lines.jsonl | cut -f1 >two-lines.du' "$ORCH_BIN/orch"
  check "two jsonl outputs on a disk they fit: every row written (exit 0)" \
    test "$(cat two-lines.status)" = 0
  check "... and the space reserved ahead given back" test "$(cat two-lines.du)" -le 2400
  check "freed, --retry-failed finishes (exit 0)" test "$(cat lines-retry.status)" = 0
  check "... with every row once" test "$($python -c '
import json, sys
print(sorted(json.loads(line)["id"] for line in open(sys.argv[1])) == list(range(600)))' lines-after.rows)" = True
else
  echo "note: the full-disk checks need root and mount namespaces"
fi

# --- names: UTF-8 whatever the locale, and up to 255 bytes -----------------------------------
long=$(printf 'x%.0s' $(seq 1 251))
printf '{"key":"résumé-p1"}\n{"key":"%s"}\n' "$long" >names.jsonl
cat >names.orch <<'ORCH'
pipeline names;
source rows = jsonl("names.jsonl") as Doc;
key = rows.key as String;
sink webdataset(dir: "out/names-wds", sample: { __key__: key, txt: key }, shard_samples: 10);
sink files(dir: "out/names", name: key, ext: ".txt", content: key);
ORCH
status=0; orch run names.orch --in-process 2>names.log || status=$?
check "a non-ASCII key and a 255-byte name are written under LANG=C (exit 0)" test "$status" = 0
check "... the key as UTF-8 in the shard" $python -c '
import glob, tarfile
names = [m.name for m in tarfile.open(glob.glob("out/names-wds/*.tar")[0], encoding="utf-8")]
assert "résumé-p1.txt" in names, names'
check "... and both files" test -f "out/names/résumé-p1.txt" -a -f "out/names/$long.txt"

# --- symbolic links at output paths ------------------------------------------------------------
# /dev/stdout is written as it is, to a pipe and to a file.
cat >stdout.orch <<'ORCH'
pipeline stdout;
source rows = jsonl("rows.jsonl") as Doc;
sink jsonl(path: "/dev/stdout", record: rows);
ORCH
check "a jsonl sink writes to /dev/stdout when it is a pipe" \
  test "$(orch run stdout.orch --in-process --no-journal 2>/dev/null | wc -l)" = 20
orch run stdout.orch --in-process --no-journal >stdout.jsonl 2>/dev/null || true
check "... and when it is a file" test "$(wc -l <stdout.jsonl)" = 20
echo HEADER >stdout-appended.jsonl
orch run stdout.orch --in-process --no-journal >>stdout-appended.jsonl 2>/dev/null || true
check "... appended to (>>), keeping what the file held" \
  test "$(head -1 stdout-appended.jsonl)" = HEADER -a "$(wc -l <stdout-appended.jsonl)" = 21
cat >errs.orch <<'ORCH'
pipeline errs;
source rows = jsonl("rows.jsonl") as Doc;
sink jsonl(path: "out/errs.jsonl", record: test.fail(rows, ordinals: "0,1,2,3,4,5,6"));
ORCH
status=0; orch run errs.orch --in-process --no-journal --errors /dev/stderr 2>errors-on-stderr.txt || status=$?
check "an errors journal on /dev/stderr, a file, holds whole lines beside the summary" \
  $python -c '
import json, sys
lines = [l for l in open("errors-on-stderr.txt") if l.startswith("{")]
assert sorted(json.loads(l)["row"] for l in lines) == list(range(7)), lines
assert any(l.startswith("orch: pipeline") for l in open("errors-on-stderr.txt"))'
status=0; orch run errs.orch --in-process --no-journal --errors /dev/null 2>/dev/null || status=$?
check "an errors journal on /dev/null discards its lines (exit 2: rows failed, not 1)" test "$status" = 2
mkdir -p out/probe && touch out/probe/.orch-probe-99999
cat >probe.orch <<'ORCH'
pipeline probe;
source rows = jsonl("rows.jsonl") as Doc;
sink files(dir: "out/probe", name: format("r{}", rows.id), ext: ".txt", content: "x");
ORCH
orch run probe.orch --in-process --quiet 2>/dev/null || true
check "a probe file left by a killed run is removed by the next" test ! -e out/probe/.orch-probe-99999
if [ -w /dev/shm ]; then
  echo "precious" >victim
  ln -sf "$workdir/victim" "/dev/shm/orch-test-$$.jsonl"
  sed "s|/dev/stdout|/dev/shm/orch-test-$$.jsonl|; s/pipeline stdout;/pipeline shm;/" stdout.orch >shm.orch
  status=0; orch run shm.orch --in-process --no-journal 2>/dev/null || status=$?
  rm -f "/dev/shm/orch-test-$$.jsonl"
  check "a link under /dev/ to a file is refused like any other (exit 1)" test "$status" = 1 -a "$(cat victim)" = precious
fi
echo "precious" >victim
cat >link.orch <<'ORCH'
pipeline link;
source rows = jsonl("rows.jsonl") as Doc;
sink jsonl(path: "out/link.jsonl", record: rows);
ORCH
ln -sf "$workdir/victim" out/link.jsonl
status=0; orch run link.orch --in-process 2>link.log || status=$?
check "an output that is a symbolic link is refused (exit 1)" test "$status" = 1
check "... saying so" grep -q 'out/link.jsonl" is a symbolic link' link.log
check "... and its target is untouched" test "$(cat victim)" = precious
rm out/link.jsonl
ln -sf "$workdir/victim" link.errors.jsonl
status=0; orch run link.orch --in-process 2>link2.log || status=$?
check "an errors journal that is a symbolic link is refused too (exit 1)" test "$status" = 1
check "... and its target is untouched" test "$(cat victim)" = precious
rm link.errors.jsonl
sed 's|"out/link.jsonl"|"victim"|' link.orch >target.orch
sed -i 's/pipeline link;/pipeline target;/' target.orch
status=0; orch run target.orch --in-process 2>/dev/null || status=$?
check "... the link's target named in the program is written (exit 0)" test "$status" = 0 -a "$(wc -l <victim)" = 20
echo "precious" >victim

cat >plant.orch <<'ORCH'
pipeline plant;
source rows = jsonl("rows.jsonl") as Doc;
sink files(dir: "out/plant", name: format("doc{}", rows.id), ext: ".txt", content: format("{}", test.sleep(rows.v, ms: 100) { batch: 1, replicas: 1 }));
ORCH
"$ORCH_BIN/orch" run plant.orch --in-process --quiet 2>/dev/null &
run=$!
for _ in $(seq 1 50); do [ -d out/plant ] && break; sleep 0.05; done
for i in $(seq 5 19); do ln -sf "$workdir/victim" "out/plant/.doc$i.txt.orch-partial" 2>/dev/null || true; done
wait "$run" || true
check "a partial file planted as a link during a run is not written through" test "$(cat victim)" = precious
check "... and every output is a regular file" test -z "$(find out/plant -name 'doc*.txt' -type l)" -a "$(find out/plant -name 'doc*.txt' -type f | wc -l)" = 20

# --- resume down to the child: a document's finished pages are not run again ---------------
echo '{"id": 0, "n": 200}' >big-doc.jsonl
cat >child.orch <<'ORCH'
pipeline child;
source docs = jsonl("big-doc.jsonl") as Doc;
pages = expand(test.split(docs, field: "n")) as Page;
call work = test.sleep(ms: 20) { batch: 4 };
call prepare = test.identity() { batch: 4 };
done = work(prepare(pages));
sink jsonl(path: "out/child.jsonl", record: { id: docs.id, pages: reduce(done) });
ORCH
# killed_then_resumed NAME [--workers N]: runs NAME.orch in process (or with N worker processes),
# SIGKILLs it (and its workers) after 2 s, runs it again (NAME.log, exit status in $status).
killed_then_resumed() {
  local executor=(--in-process)
  [ "${2:-}" = --workers ] && executor=(--workers "$3")
  "$ORCH_BIN/orch" run "$1.orch" "${executor[@]}" --quiet 2>/dev/null &
  local run=$!
  sleep 2
  pkill -9 -P "$run" 2>/dev/null || true
  kill -9 "$run"
  wait "$run" 2>/dev/null || true
  status=0
  orch run "$1.orch" "${executor[@]}" 2>"$1.log" || status=$?
}
killed_then_resumed child
reused=$(sed -nE 's/.*, and ([0-9]+) finished grains of the others were reused.*/\1/p' child.log)
ran=$(sed -nE "s/.*call 'work': ([0-9]+) grains in.*/\1/p" child.log)
# A page whose work is kept needs no prepare (demand): its prepare is "not needed".
kept=$(sed -nE "s/.*call 'prepare': .* ([0-9]+) not needed.*/\1/p" child.log)
check "a 200-page document killed half way resumes (exit 0)" test "$status" = 0
check "... reusing the pages that had finished" test "${reused:-0}" -gt 20
check "... running only the others' work (every page's once in all)" test "$((${kept:-0} + ran))" = 200
check "... and not preparing again a page whose work was kept" test "${kept:-0}" -gt 20
check "... and, finished with no failed row, it keeps no values (nothing will resume it)" \
  test -f child.run/values -a ! -s child.run/values
check "... with the document whole, its pages in order" $python -c '
import json
rows = [json.loads(line) for line in open("out/child.jsonl")]
assert len(rows) == 1 and rows[0]["pages"] == list(range(200)), rows'
# A Call whose grains cost less than keeping their values is computed again instead of kept
# (unless it says `checkpoint: true`).
cat >cheap.orch <<'ORCH'
pipeline cheap;
source docs = jsonl("big-doc.jsonl") as Doc;
pages = expand(test.split(docs, field: "n")) as Page;
call work = test.sleep(ms: 20) { batch: 4 };
call quick = test.identity() { batch: 4 };
call keptQuick = test.identity() { batch: 4, checkpoint: true };
done = work(pages);
sink jsonl(path: "out/cheap.jsonl", record: { id: docs.id, a: reduce(quick(done)), b: reduce(keptQuick(done)) });
ORCH
for executor in --in-process --workers; do
  killed_then_resumed cheap "$executor" 2
  quick=$(sed -nE "s/.*call 'quick': ([0-9]+) grains in.*/\1/p" cheap.log)
  keptQuick=$(sed -nE "s/.*call 'keptQuick': ([0-9]+) grains in.*/\1/p" cheap.log)
  echo "resumed ($executor): quick ran ${quick:-?} grains, keptQuick ${keptQuick:-?}"
  # keptQuick reused what was kept of it; quick, less than half as much (a batch preempted on a
  # loaded machine may take long enough to be kept). Before, both reused the same.
  check "a Call cheaper per grain than keeping its values is not kept: the resume runs it again ($executor)" \
    test "$status" = 0 -a $((200 - ${quick:-0})) -le $(((200 - ${keptQuick:-200}) / 2))
  check "... unless it says checkpoint: true ($executor)" test "${keptQuick:-200}" -le 180
  check "... and the document is whole ($executor)" $python -c '
import json
rows = [json.loads(line) for line in open("out/cheap.jsonl")]
assert len(rows) == 1 and rows[0]["a"] == rows[0]["b"] == list(range(200)), rows'
done
cat >nocheck.orch <<'ORCH'
pipeline nocheck;
source docs = jsonl("big-doc.jsonl") as Doc;
pages = expand(test.split(docs, field: "n")) as Page;
call work = test.sleep(ms: 20) { batch: 4, checkpoint: false };
done = test.identity(work(pages));
sink jsonl(path: "out/nocheck.jsonl", record: { id: docs.id, pages: reduce(done) });
ORCH
killed_then_resumed nocheck
check "checkpoint: false runs every page of the document again (exit 0)" \
  grep -q "call 'work': 200 grains in" nocheck.log
check "... and the Calls after it too (their kept values came from its old results)" \
  grep -q "call 'done': 200 grains in" nocheck.log
# Results over 64 KiB are kept only where a Call says `checkpoint: true` (in process, and with
# workers, where such results would otherwise stay on the worker that made them).
bigcheck_program() { # NAME OPTION
  cat >"$1.orch" <<ORCH
pipeline $1;
source docs = jsonl("big-doc.jsonl") as Doc;
pages = expand(test.split(docs, field: "n")) as Page;
call work = test.sleep(ms: 20) { batch: 4 };
call big = test.blob(bytes: 100000) { batch: 4 $2 };
sink jsonl(path: "out/$1.jsonl", record: { id: docs.id, sizes: reduce(len(big(work(pages)))) });
ORCH
}
bigcheck_program bigsmall ""
killed_then_resumed bigsmall
check "without checkpoint a result over 64 KiB is not kept: every page's blob runs again" \
  grep -q "call 'big': 200 grains in" bigsmall.log
for executor in --in-process --workers; do
  bigcheck_program bigkept ", checkpoint: true"
  killed_then_resumed bigkept "$executor" 2
  ran=$(sed -nE "s/.*call 'big': ([0-9]+) grains in.*/\1/p" bigkept.log)
  check "checkpoint: true keeps results over 64 KiB ($executor): a page's blob runs once in all" \
    test "${ran:-200}" -lt 200 -a "$status" = 0
  check "... and the document is whole ($executor)" $python -c '
import json
rows = [json.loads(line) for line in open("out/bigkept.jsonl")]
assert len(rows) == 1 and rows[0]["sizes"] == [100000] * 200, rows'
  rm -rf bigkept.run out/bigkept.jsonl
done

# --- edits between a killed run and its resume -----------------------------------------------
for i in $(seq 0 39); do echo "{\"id\": $i}"; done >edit.jsonl
cat >edit.orch <<'ORCH'
pipeline edit;
source rows = jsonl("edit.jsonl") as Doc;
sink jsonl(path: "out/edit.jsonl", record: { id: rows.id, t: text.len(format("{}", test.sleep(rows.id, ms: 50) { batch: 8 })) });
ORCH
rm -rf edit.run
"$ORCH_BIN/orch" run edit.orch --in-process --quiet 2>/dev/null &
run=$!
await_commit edit.run
kill -9 "$run"; wait "$run" 2>/dev/null || true
{ echo "// a comment added before resuming"; echo; cat edit.orch; } >edited.orch && mv edited.orch edit.orch
"$ORCH_BIN/orchc" fmt edit.orch >/dev/null
status=0; orch run edit.orch --in-process 2>edit.log || status=$?
check "a comment and orchc fmt between a killed run and its resume: it resumes (exit 0)" test "$status" = 0
check "... skipping what was done" grep -qE "resumed: [1-9][0-9]* source rows done by an earlier run" edit.log
check "... with every row once" test "$(sort -u out/edit.jsonl | wc -l)" = 40 -a "$(wc -l <out/edit.jsonl)" = 40

rm -rf edit.run
"$ORCH_BIN/orch" run edit.orch --in-process --restart --quiet 2>/dev/null &
run=$!
await_commit edit.run
kill -9 "$run"; wait "$run" 2>/dev/null || true
sed -i 's/batch: 8/batch: 16/' edit.orch
status=0; orch run edit.orch --in-process 2>edit2.log || status=$?
check "an edit that changes what the run does is refused (exit 1)" test "$status" = 1
check "... saying what changed" grep -q "batch 8 → 16" edit2.log
orch run edit.orch --in-process --restart --quiet 2>/dev/null || true
sed -i 's/batch: 16/batch: 4/' edit.orch
status=0; orch run edit.orch --in-process --retry-failed 2>edit3.log || status=$?
check "--retry-failed after such an edit runs every row, and says why (exit 0)" \
  grep -q "note: --retry-failed: \"edit.run\" holds a run of another version of this pipeline (Call \`test.sleep@sink0\`: batch 16 → 4), so every source row ran" edit3.log
# --- crash quarantine: a row an in-process run crashed on fails on resume, unread -----------
printf '{"id": %d, "bad": %s}\n' 0 false 1 false 2 true 3 false 4 false >crash.jsonl
cat >crash.orch <<'ORCH'
pipeline crash;
source rows = jsonl("crash.jsonl") as Doc;
v = test.fail({ id: rows.id as Int, bad: rows.bad as Bool }, kind: "crash", when: "bad", ordinals: "0,1,2,3,4") { batch: 1 };
sink jsonl(path: "out/crash.jsonl", record: { id: v.id });
ORCH
status=0; "$ORCH_BIN/orch" run crash.orch --in-process --quiet 2>/dev/null || status=$?
check "an in-process operator that segfaults on row 2 takes the run with it (signal 11)" test "$status" = 139
check "... which wrote the row down beside its journal" grep -qx "source 0 row 2 signal 11 while running" crash.run/crashed
status=0; orch run crash.orch --in-process 2>crash.log || status=$?
check "the resumed run ends with that row failed (exit 2)" test "$status" = 2
check "... and every other row written once" test "$(sort -n <(sed -E 's/.*"id":([0-9]+).*/\1/' out/crash.jsonl) | tr '\n' ' ')" = "0 1 3 4 "
check "... the row journaled as a crash of an earlier run" $python -c '
import json
lines = [json.loads(line) for line in open("crash.errors.jsonl")]
assert [(l["row"], l["kind"]) for l in lines] == [(2, "crash")], lines
assert lines[0]["message"].startswith("crashed an earlier run (signal 11, SIGSEGV, while an operator ran on it)"), lines'
status=0; "$ORCH_BIN/orch" run crash.orch --in-process --retry-failed --quiet 2>/dev/null || status=$?
check "--retry-failed runs the row again (and crashes again)" test "$status" = 139
status=0; orch run crash.orch --in-process 2>crash2.log || status=$?
check "... and the next resume fails it again, the others kept (exit 2)" \
  test "$status" = 2 -a "$(wc -l <out/crash.jsonl)" = 4
check "... counting it failed" grep -q "1 failed" crash2.log
finish_checks
