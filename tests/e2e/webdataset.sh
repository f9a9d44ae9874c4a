#!/usr/bin/env bash
# The webdataset sink and source: rendered pages as PNG and their metadata as JSON in tar
# shards, read back with Python's tarfile and compared member by member with the same pages
# written as files; read back again with the webdataset source; and a run killed mid-way and
# resumed that ends with every sample exactly once.
set -euo pipefail
: "${ORCH_BIN:?set by ctest}" "${ORCH_SOURCE_DIR:?set by ctest}"
# shellcheck source=lib/checks.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib/checks.bash"
python=/usr/bin/python3

workdir=$(mktemp -d)
trap 'rm -rf "$workdir"' EXIT
cd "$workdir"
cp -r "$ORCH_SOURCE_DIR/examples/samples" .
cat >shards.orch <<'ORCH'
pipeline shards;
param ms: Int = 0;
source docs = files("samples/pdfs/*.pdf") as Doc;
pages = expand(pdf.pages(docs)) as Page;
png = test.sleep(image.encode(pdf.render(pages, dpi: 30), format: "png") { batch: 8 }, ms: ms);
key = format("{}-p{}", broadcast(docs.stem, pages), ordinal(pages) + 1);
sink webdataset(
    dir: "out/shards",
    sample: {
        __key__: key,
        png: png,
        json: { doc: broadcast(docs.stem, pages), page: ordinal(pages) + 1 }
    },
    shard_samples: 10
);
sink files(dir: "out/png", name: key, ext: ".png", content: png);
ORCH

# The expected samples: every good PDF's pages (the broken one fails its row).
status=0
"$ORCH_BIN/orch" run shards.orch --workers 2 --no-journal --quiet --metrics metrics.json 2>run.log ||
  status=$?
check "the run writes every good document (the corrupt PDF fails, exit 2)" test "$status" = 2
check "the metrics count the shards' samples and bytes" $python -c '
import json, os, sys
sink = json.load(open("metrics.json"))["outputs"][0]
size = sum(os.path.getsize("out/shards/" + f) for f in os.listdir("out/shards"))
sys.exit(0 if sink["rows"] == 48 and sink["bytes"] == size else 1)'

check "every member of every shard is its page's PNG or metadata" $python - <<'PY'
import json, os, sys, tarfile
shards = sorted(os.listdir("out/shards"))
problems = []
if shards != ["shard-%06d.tar" % i for i in range(len(shards))] or len(shards) < 3:
    problems.append("shard names: %s" % shards)
seen, docs_in = {}, {}
for index, shard in enumerate(shards):
    with tarfile.open("out/shards/" + shard) as tar:
        names = tar.getnames()
        samples = []
        for name in names:
            key, ext = name.split(".", 1)
            if not samples or samples[-1] != key:
                samples.append(key)
            data = tar.extractfile(name).read()
            seen.setdefault(key, {})[ext] = data
        for key in samples:
            docs_in.setdefault(key.rsplit("-p", 1)[0], set()).add(index)
        if index < len(shards) - 1 and len(samples) < 10:
            problems.append("%s holds %d samples, fewer than shard_samples" % (shard, len(samples)))
pngs = {f[:-4] for f in os.listdir("out/png")}
if set(seen) != pngs or len(seen) != 48:
    problems.append("samples %d, pages %d" % (len(seen), len(pngs)))
for key, members in seen.items():
    if set(members) != {"png", "json"}:
        problems.append("%s has %s" % (key, sorted(members)))
        continue
    if members["png"] != open("out/png/%s.png" % key, "rb").read():
        problems.append("%s.png differs from the file" % key)
    doc, page = key.rsplit("-p", 1)
    if json.loads(members["json"]) != {"doc": doc, "page": int(page)}:
        problems.append("%s.json is %r" % (key, members["json"]))
split = [doc for doc, where in docs_in.items() if len(where) > 1]
if split:
    problems.append("documents split across shards: %s" % split)
if [f for f in os.listdir("out/shards") if not f.endswith(".tar")]:
    problems.append("leftovers: %s" % os.listdir("out/shards"))
print("\n".join(problems))
sys.exit(1 if problems else 0)
PY
cp -r out expected

# Read back with the webdataset source.
cat >back.orch <<'ORCH'
pipeline back;
source samples = webdataset("expected/shards/*.tar") as Sample;
sink files(dir: "back/png", name: samples.__key__ as String, ext: ".png", content: samples.png);
sink jsonl(path: "back/meta.jsonl", record: { key: samples.__key__, meta: samples.json, shard: samples.__shard__ });
ORCH
"$ORCH_BIN/orch" run back.orch --in-process --no-journal --quiet 2>back.log
check "the source reads one row per sample, with the same PNG bytes" diff -r expected/png back/png
check "... and the parsed metadata and the shard of each" $python -c '
import json, sys
rows = [json.loads(line) for line in open("back/meta.jsonl")]
ok = len(rows) == 48 and all(r["meta"] == {"doc": r["key"].rsplit("-p", 1)[0],
                                            "page": int(r["key"].rsplit("-p", 1)[1])} and
                             r["shard"].startswith("expected/shards/shard-") for r in rows)
sys.exit(0 if ok else 1)'

# Killed mid-way (a shard or two written, one partial), then resumed: each sample once. The
# pages sleep 150 ms each so that the run is still going when it is killed, however many
# replicas the sleep gets (automatic replicas); the retry runs the same version of the program.
rm -rf out
"$ORCH_BIN/orch" run shards.orch --workers 2 --set ms=150 --quiet 2>kill.log &
run=$!
for _ in $(seq 300); do [ -e out/shards/shard-000000.tar ] && break; sleep 0.05; done
sleep 0.3
kill -9 "$run" 2>/dev/null || true
wait "$run" 2>/dev/null || true
check "the killed run left its shards hidden while partial" \
  test -z "$(ls out/shards | grep -v '^shard-[0-9]*\.tar$')"
status=0
"$ORCH_BIN/orch" run shards.orch --workers 2 --set ms=150 --quiet 2>resume.log || status=$?
# (0 when the corrupt PDF's failure was journaled before the kill: its row is done.)
check "the resumed run finishes (exit 0 or 2)" test "$status" = 0 -o "$status" = 2
check "the resumed run says it resumed" grep -q "resumed" resume.log
check "after the resume every sample is in the shards exactly once, as in an undisturbed run" $python - <<'PY'
import os, sys, tarfile
def samples(directory):
    members = []
    for shard in sorted(os.listdir(directory)):
        with tarfile.open(os.path.join(directory, shard)) as tar:
            members += [(m.name, tar.extractfile(m).read()) for m in tar.getmembers()]
    return members
resumed, expected = samples("out/shards"), samples("expected/shards")
ok = len(resumed) == len(set(n for n, _ in resumed)) and sorted(resumed) == sorted(expected)
sys.exit(0 if ok else print(len(resumed), len(expected)) or 1)
PY
check "no partial shard is left" test -z "$(ls -A out/shards | grep -v '^shard-[0-9]*\.tar$')"
cp -r out/shards resumed-shards
status=0
"$ORCH_BIN/orch" run shards.orch --workers 2 --set ms=150 --retry-failed --quiet >retry.log 2>&1 || status=$?
check_equal "--retry-failed runs the corrupt PDF again (it wrote no sample) and keeps the shards" \
  "2 $(cd resumed-shards && ls | tr '\n' ' ')$(cat resumed-shards/*.tar | md5sum)" \
  "$status $(cd out/shards && ls | tr '\n' ' ')$(cat out/shards/*.tar | md5sum)"
[ "$failures" -eq 0 ] || cat retry.log
finish_checks
