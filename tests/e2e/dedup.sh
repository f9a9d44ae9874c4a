#!/usr/bin/env bash
# Deduplication in the stream (docs/runtime.md, "Deduplication"): dedup_pages drops the sample
# pages that repeat an earlier page, each with a survivor that comes before it and an estimated
# similarity near the exact Jaccard similarity of their shingles; the same survivors with worker
# processes, threads, a random ready order, parent-bound batches, a bound of 2 live rows and
# the global barrier; after a kill and resume, and with --retry-failed; `order: "arrival"`;
# dedup.exact over a normalised text; a dedup that is not needed everywhere; and bad settings
# refused by the compiler; frames of the sample videos deduplicated by perceptual hash.
set -euo pipefail
: "${ORCH_BIN:?set by ctest}" "${ORCH_SOURCE_DIR:?set by ctest}"
# shellcheck source=lib/checks.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib/checks.bash"
python=/usr/bin/python3
# The exact Jaccard similarity the checks compare with (no MinHash).
export PYTHONPATH="$ORCH_SOURCE_DIR/tests/e2e/lib"

workdir=$(mktemp -d)
trap 'pkill -f "$workdir" 2>/dev/null || true; rm -rf "$workdir"' EXIT
cp -r "$ORCH_SOURCE_DIR/examples/." "$workdir/"
cd "$workdir"
orch() { "$ORCH_BIN/orch" "$@"; }

# duplicates JOURNAL: "row/path -> row/path" per duplicate line, sorted.
duplicates() {
  $python -c '
import json, sys
for line in open(sys.argv[1]):
    d = json.loads(line)
    if d.get("kind") == "duplicate":
        s = d["duplicate_of"]
        print("%s %d/%s -> %d/%s" % (d["dedup"], d["row"], d["path"], s["row"], s["path"]))
' "$1" | sort
}

# --- dedup_pages, the example ----------------------------------------------------------------
status=0
orch run dedup_pages.orch --set out=out/pages.jsonl --errors base.errors.jsonl --journal j0 \
  --metrics base.json 2>base.log || status=$?
check "dedup_pages completes with the corrupt PDF failed (exit 2)" test "$status" = 2
base=$(duplicates base.errors.jsonl)
count=$(echo "$base" | grep -c . || true)
check "some pages are near-duplicates of earlier ones (the samples repeat their text)" \
  test "$count" -ge 10
check_equal "the kept pages and the duplicates make up every page of the good PDFs (48)" \
  48 "$(( $(wc -l < out/pages.jsonl) + count ))"
check_equal "the summary counts the duplicates" \
  "1" "$(grep -c "dedup 'unique' (near): 48 decided, $count duplicate(s) dropped" base.log)"
check_equal "the metrics count them" "$count" "$($python -c '
import json; print(json.load(open("base.json"))["dedup"][0]["duplicates"])')"
orch report base.json -o base.html
check "the report has a deduplication table with the count" \
  grep -q "<h2>Deduplication</h2>.*<td>unique</td><td>near</td><td>48</td><td>$count</td>" base.html
# Each duplicate: its survivor comes earlier in source order, is a page that was kept, and the
# estimated similarity is near the exact one; no kept page repeats an earlier kept one.
check "every duplicate names an earlier kept page, with a similarity near the exact one" $python - <<'PY'
import json, sys, glob, subprocess
from shingle_jaccard import jaccard
files = sorted(glob.glob("samples/pdfs/*.pdf"))
def page_text(row, page):
    return subprocess.run(["pdftotext", "-f", str(page + 1), "-l", str(page + 1), files[row], "-"],
                          capture_output=True, text=True).stdout
kept = {(r["path"], r["page"]) for r in map(json.loads, open("out/pages.jsonl"))}
ok = True
for line in open("base.errors.jsonl"):
    d = json.loads(line)
    if d.get("kind") != "duplicate":
        continue
    s = d["duplicate_of"]
    if (s["row"], s["path"]) >= (d["row"], d["path"]):
        print("survivor not earlier:", d); ok = False
    if (files[s["row"]], s["path"][0]) not in kept:
        print("survivor not kept:", d); ok = False
    exact = jaccard(page_text(d["row"], d["path"][0]), page_text(s["row"], s["path"][0]))
    if abs(exact - d["similarity"]) > 0.15 or exact < 0.6:
        print("similarity %.3f, exact %.3f:" % (d["similarity"], exact), d); ok = False
texts = [(k, page_text(files.index(k[0]), k[1])) for k in sorted(kept, key=lambda k: (files.index(k[0]), k[1]))]
for i, (a, ta) in enumerate(texts):
    for b, tb in texts[:i]:
        if jaccard(ta, tb) >= 0.95:
            print("kept page repeats a kept page:", a, b); ok = False
sys.exit(0 if ok else 1)
PY

# --- confirm: "exact": candidates confirmed by the shingle sets themselves ---------------------
sed -e 's/threshold: 0.8)/threshold: 0.8, confirm: "exact")/' dedup_pages.orch >exact_confirm.orch
orch run exact_confirm.orch --set out=out/confirmed.jsonl --errors confirmed.errors.jsonl \
  --journal j-confirmed --quiet 2>confirmed.log || true
check "confirm exact: each duplicate's similarity is the exact Jaccard similarity, at least 0.8" \
  $python - <<'PY'
import json, sys, glob, subprocess
from shingle_jaccard import jaccard
files = sorted(glob.glob("samples/pdfs/*.pdf"))
def page_text(row, page):
    return subprocess.run(["pdftotext", "-f", str(page + 1), "-l", str(page + 1), files[row], "-"],
                          capture_output=True, text=True).stdout
dups = [d for d in map(json.loads, open("confirmed.errors.jsonl")) if d.get("kind") == "duplicate"]
ok = len(dups) >= 10
for d in dups:
    s = d["duplicate_of"]
    exact = jaccard(page_text(d["row"], d["path"][0]), page_text(s["row"], s["path"][0]))
    if abs(exact - d["similarity"]) > 1e-9 or exact < 0.8:
        print("similarity %.6f, exact %.6f:" % (d["similarity"], exact), d); ok = False
sys.exit(0 if ok else 1)
PY

# --- the same survivors whatever runs the batches and in what order ---------------------------
for variant in "--in-process" "--workers 3 --ready-order unordered" "--batching parent-bound" \
               "--max-live-roots 2 --in-process" "--gather barrier" "--probe-first"; do
  name=$(echo "$variant" | tr -dc 'a-z0-9')
  status=0
  # shellcheck disable=SC2086
  orch run dedup_pages.orch --set out="out/$name.jsonl" --errors "$name.errors.jsonl" \
    --journal "j-$name" --quiet $variant 2>"$name.log" || status=$?
  check_equal "same duplicates with $variant" "$base" "$(duplicates "$name.errors.jsonl")"
  check "same kept pages with $variant" cmp -s <(sort out/pages.jsonl) <(sort "out/$name.jsonl")
done

# --- killed and resumed: the same survivors, though the earlier run decided some of them -----
sed -e 's/^pipeline dedup_pages;/pipeline slow_dedup;/' \
    -e 's/texts = pdf.text(pages) { batch: 32 };/texts = test.sleep(pdf.text(pages), ms: 50) { batch: 2, replicas: 1 };/' \
    dedup_pages.orch >slow_dedup.orch
"$ORCH_BIN/orch" run slow_dedup.orch --set out=out/slow.jsonl --errors slow.errors.jsonl \
  --journal j-slow --in-process --quiet 2>slow1.log &
run=$!
# Killed once the letter's 3 pages (the survivors of later pages) are written.
for _ in $(seq 200); do
  [ "$(wc -l < out/slow.jsonl 2>/dev/null || echo 0)" -ge 3 ] && break
  sleep 0.05
done
kill -9 "$run"; wait "$run" 2>/dev/null || true
check "the killed run wrote some pages and not all" test "$(wc -l < out/slow.jsonl)" -lt 33
status=0
orch run slow_dedup.orch --set out=out/slow.jsonl --errors slow.errors.jsonl --journal j-slow \
  --in-process 2>slow2.log || status=$?
check "the resumed run skipped the rows the killed one finished" \
  grep -q "resumed: [1-9][0-9]* source rows done" slow2.log
check_equal "same duplicates after a kill and resume" "$base" "$(duplicates slow.errors.jsonl)"
check "same kept pages after a kill and resume" cmp -s <(sort out/pages.jsonl) <(sort out/slow.jsonl)

# --- exact: any value; the first of each survives --------------------------------------------
sed -e 's/unique = dedup.near(texts, threshold: 0.8);/unique = dedup.exact(ordinal(pages));/' \
    dedup_pages.orch >exact.orch
orch run exact.orch --set out=out/exact.jsonl --errors exact.errors.jsonl --journal j-exact \
  --quiet 2>exact.log || true
check_equal "dedup.exact over page numbers keeps the first page of each number (0 to 29)" \
  "$(seq 0 29)" "$($python -c '
import json
for r in map(json.loads, open("out/exact.jsonl")): print(r["page"])' | sort -n)"
check_equal "and drops the 18 later ones, each naming the first page with its number" 18 \
  "$(grep -c '"kind": "duplicate", "dedup": "unique", "path": \[\([0-9]*\)\], "duplicate_of": {"row": [0-9]*, "path": \[\1\]}, "similarity": 1' exact.errors.jsonl)"

# --- order "arrival": no waiting, every page accounted for ------------------------------------
sed -e 's/threshold: 0.8)/threshold: 0.8, order: "arrival")/' dedup_pages.orch >arrival.orch
orch run arrival.orch --set out=out/arrival.jsonl --errors arrival.errors.jsonl \
  --journal j-arrival --quiet 2>arrival.log || true
arrived=$(duplicates arrival.errors.jsonl | grep -c . || true)
check_equal "order arrival: kept and duplicate pages make up all 48" 48 \
  "$(( $(wc -l < out/arrival.jsonl) + arrived ))"

# --- frames by perceptual hash: within 6 bits of an earlier kept frame is a duplicate ----------
cat >frames.orch <<'ORCH'
pipeline frames;
source videos = files("samples/videos/*.mp4") as Video;
clips = expand(video.clips(videos, seconds: 2.0)) as Clip;
frames = expand(video.frames(clips, per_clip: 4)) as Frame;
hashes = image.phash(image.resize(video.decode(frames), width: 160, height: 90));
unique = dedup.hamming(hashes, distance: 6);
sink jsonl(path: "out/frames.jsonl", record: { video: broadcast(videos.stem, frames), clip: broadcast(ordinal(clips), frames), frame: ordinal(frames), hash: unique });
ORCH
orch run frames.orch --errors frames.errors.jsonl --journal j-frames --quiet 2>frames.log || true
check "frames: kept frames are more than 6 bits apart, and each duplicate is within 6 bits of the earlier kept frame it names" $python - <<'PY'
import json, sys
kept = {}
for r in map(json.loads, open("out/frames.jsonl")):
    kept[(r["video"], r["clip"], r["frame"])] = int(r["hash"], 16)
videos = {0: "bars", 2: "circles"}  # rows of files(): bars, broken, circles
hashes = list(kept.values())
ok = len(hashes) >= 5
for i, a in enumerate(hashes):
    for b in hashes[:i]:
        if bin(a ^ b).count("1") <= 6:
            print("two kept frames within 6 bits"); ok = False
dups = [d for d in map(json.loads, open("frames.errors.jsonl")) if d.get("kind") == "duplicate"]
for d in dups:
    s = d["duplicate_of"]
    survivor = (videos[s["row"]], s["path"][0], s["path"][1])
    if survivor not in kept or (s["row"], s["path"]) >= (d["row"], d["path"]):
        print("bad survivor", d); ok = False
    elif not 1 - 6 / 64 <= d["similarity"] <= 1:
        print("bad similarity", d); ok = False
print(len(hashes), "kept,", len(dups), "duplicates")
sys.exit(0 if ok and dups else 1)
PY

# --- settings and inputs the compiler refuses -------------------------------------------------
refused() { # refused MESSAGE LINE: a program with LINE as its dedup fails with MESSAGE
  sed -e "s/unique = dedup.near(texts, threshold: 0.8);/$2/" dedup_pages.orch >bad.orch
  ! "$ORCH_BIN/orchc" bad.orch -o bad.plan 2>bad.log && grep -q "$1" bad.log
}
check "a threshold above 1 is refused" refused "'threshold' must be in (0, 1\]" \
  'unique = dedup.near(texts, threshold: 1.5);'
check "bands that do not divide the permutations are refused" refused "'bands' must divide" \
  'unique = dedup.near(texts, bands: 5);'
check "dedup.near of a number is refused" refused "'dedup.near' compares text" \
  'unique = dedup.near(ordinal(pages));'
check "dedup.minhash with no permutations is refused" refused "'permutations' must be 1 to 1024" \
  'unique = dedup.minhash(texts, permutations: 0);'
check "dedup.near of a record is refused, not a crash" refused "'dedup.near' compares text" \
  'unique = dedup.near({ t: texts });'
check "a Hamming distance over 16 bits is refused" refused "'distance' must be 0 to 16 bits" \
  'unique = dedup.hamming(string(ordinal(pages)), distance: 17);'
check "an unknown order is refused" refused "'order' of 'dedup.exact' must be" \
  'unique = dedup.exact(texts, order: "random");'

finish_checks
