#!/usr/bin/env bash
# Every example run end to end on the bundled samples, with golden checks: the flagship's
# Markdown has every page's marker in page order (OCR included), the corrupt files are in the
# errors journal, pdf_text matches pdftotext page by page, page_images saves scanned pages as
# PNG pixel for pixel, page_dataset writes WebDataset shards, text_or_ocr merges the text layer
# and OCR page by page, clip_quality scores every clip,
# clip_features gives every clip its motion and frame hashes; vlm_ocr, against the test model
# server, gives the flagship's OCR text; quality_score and
# page_embeddings give what their Python models give when run directly;
# worker processes and --in-process give identical outputs; OCR batches mix documents; names
# derived from data never escape a sink's directory.
set -euo pipefail
: "${ORCH_BIN:?set by ctest}" "${ORCH_SOURCE_DIR:?set by ctest}"
# shellcheck source=lib/checks.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib/checks.bash"
python=/usr/bin/python3

workdir=$(mktemp -d)
trap 'pkill -f "$workdir" 2>/dev/null || true; rm -rf "$workdir"' EXIT
cp -r "$ORCH_SOURCE_DIR/examples/." "$workdir/"
cd "$workdir"
orch() { "$ORCH_BIN/orch" "$@"; }

# markers_in_order FILE DOC PAGES: "DOC page 1" ... "DOC page PAGES" appear, in that order.
markers_in_order() {
  test "$(grep -o "$2 page [0-9]*" "$1" | awk '{print $3}' | tr '\n' ' ')" = \
       "$(seq -s ' ' 1 "$3") "
}

# --- pdf_to_markdown, the flagship ----------------------------------------------------------
status=0; orch run pdf_to_markdown.orch --workers 4 --quiet 2>run.log || status=$?
check "pdf_to_markdown completes with the corrupt PDF failed (exit 2)" test "$status" = 2
check "one Markdown file per good PDF" test "$(ls out/*.md | wc -l)" = 5
for doc in memo:1 letter:3 report:12 manual:30 scanned:2; do
  check "${doc%:*}.md has every page in order" markers_in_order "out/${doc%:*}.md" "${doc%:*}" "${doc#*:}"
done
check "the scanned PDF was read by OCR" grep -q "The word of this page is bravo" out/scanned.md
check "the corrupt PDF is in the errors journal with its cause" \
  grep -q '"call": "split", .*broken.pdf.*corrupt or not a PDF' pdf_to_markdown.errors.jsonl
check "docs.jsonl counts each document's pages" test "$($python -c '
import json
rows = sorted((r["path"].split("/")[-1], r["pages"]) for r in map(json.loads, open("out/docs.jsonl")))
print(rows)')" = "[('letter.pdf', 3), ('manual.pdf', 30), ('memo.pdf', 1), ('report.pdf', 12), ('scanned.pdf', 2)]"
mv out workers-out
orch run pdf_to_markdown.orch --in-process --quiet 2>/dev/null || true
check "4 worker processes and --in-process write identical Markdown" diff -r -x docs.jsonl workers-out out
check "... and identical JSON lines" test "$(sort workers-out/docs.jsonl)" = "$(sort out/docs.jsonl)"
rm -rf out workers-out

# --- pdf_text: the text layer, page by page as pdftotext sees it ------------------------------
orch run pdf_text.orch --quiet 2>/dev/null || true
check "pdf_text matches pdftotext on every page" $python - <<'PY'
import json, subprocess, sys
def words(text): return " ".join(text.split())
ok = True
for row in map(json.loads, open("out/pdf_text.jsonl")):
    for number, text in enumerate(row["pages"], 1):
        expected = subprocess.run(["pdftotext", "-f", str(number), "-l", str(number), row["path"], "-"],
                                  capture_output=True, text=True).stdout
        if words(text) != words(expected):
            print(f"{row['path']} page {number}: {words(text)[:60]!r} != {words(expected)[:60]!r}")
            ok = False
sys.exit(0 if ok else 1)
PY
check "pdf_text reads every page of the good PDFs" test "$($python -c '
import json; print(sum(len(r["pages"]) for r in map(json.loads, open("out/pdf_text.jsonl"))))')" = 48
rm -rf out

# --- page_images: pages without a text layer saved as PNG --------------------------------------
orch run page_images.orch --quiet 2>/dev/null || true
check "page_images saves the scanned PDF's two pages, named after document and page" \
  test "$(ls out/page_images | tr '\n' ' ')" = "scanned-p1.png scanned-p2.png "
check "each PNG is the page as poppler renders it at 100 dpi, pixel for pixel" $python - <<'PY'
import subprocess, sys, tempfile
for page in (1, 2):
    png = subprocess.run(["ffmpeg", "-v", "error", "-i", "out/page_images/scanned-p%d.png" % page,
                          "-f", "rawvideo", "-pix_fmt", "rgb24", "-"], capture_output=True,
                         check=True).stdout
    probe = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "stream=width,height",
                            "-of", "csv=p=0", "out/page_images/scanned-p%d.png" % page],
                           capture_output=True, text=True, check=True).stdout.strip()
    width, height = map(int, probe.split(","))
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["pdftoppm", "-r", "100", "-f", str(page), "-l", str(page),
                        "samples/pdfs/scanned.pdf", tmp + "/ref"], check=True)
        ppm = open(tmp + "/ref-%d.ppm" % page, "rb").read()
    magic, size, depth, pixels = ppm.split(b"\n", 3)
    ref_width, ref_height = map(int, size.split())
    # pdftoppm may round the page height up by one row; the rows both have are compared.
    rows = min(height, ref_height)
    if width != ref_width or abs(height - ref_height) > 1 or png[:rows * width * 3] != pixels[:rows * width * 3]:
        sys.exit("page %d differs (%dx%d vs %dx%d)" % (page, width, height, ref_width, ref_height))
PY
check "page_images counts them per document" \
  grep -q '"path":"samples/pdfs/scanned.pdf","low_text_pages":2' out/page_images.jsonl
rm -rf out

# --- page_dataset: every page as PNG, text and metadata in WebDataset shards -------------------
orch run page_dataset.orch --quiet 2>/dev/null || true
check "page_dataset's shards hold every page with its PNG, text layer and metadata" $python - <<'PY'
import json, os, subprocess, sys, tarfile
shards = sorted(os.listdir("out/page_dataset"))
samples = {}
for shard in shards:
    with tarfile.open("out/page_dataset/" + shard) as tar:
        for member in tar.getmembers():
            key, ext = member.name.split(".", 1)
            samples.setdefault(key, {})[ext] = tar.extractfile(member).read()
ok = len(samples) == 48 and shards[0] == "shard-000000.tar"
for key, members in samples.items():
    doc, page = key.rsplit("-p", 1)
    ok = ok and members["png"].startswith(b"\x89PNG") and json.loads(members["json"]) == {
        "document": doc, "page": int(page), "dpi": 50}
    text = subprocess.run(["pdftotext", "-f", page, "-l", page, "samples/pdfs/%s.pdf" % doc, "-"],
                          capture_output=True, text=True).stdout.rstrip("\f")
    ok = ok and members["txt"].decode() == text
sys.exit(0 if ok else 1)
PY
rm -rf out

# --- dedup_pages: near-duplicate pages dropped, each naming an earlier kept page -------------
# (tests/e2e/dedup.sh checks its similarities against exact Jaccard and every executor.)
status=0; orch run dedup_pages.orch --quiet --errors dedup.errors.jsonl 2>dedup.log || status=$?
check "dedup_pages completes with the corrupt PDF failed (exit 2)" test "$status" = 2
check "dedup_pages: every page of the good PDFs is kept or a duplicate of an earlier kept one" \
  $python - <<'PY'
import glob, json, sys
files = sorted(glob.glob("samples/pdfs/*.pdf"))
kept = {(files.index(r["path"]), r["page"]) for r in map(json.loads, open("out/dedup_pages.jsonl"))}
dups = [d for d in map(json.loads, open("dedup.errors.jsonl")) if d.get("kind") == "duplicate"]
ok = len(kept) + len(dups) == 48 and len(dups) >= 10
for d in dups:
    s = (d["duplicate_of"]["row"], d["duplicate_of"]["path"][0])
    ok = ok and s in kept and s < (d["row"], d["path"][0]) and d["similarity"] >= 0.8
# The report pages repeat the manual's and the letter's (same words, another name).
ok = ok and all((files.index("samples/pdfs/report.pdf"), p) not in kept for p in range(3))
print(len(kept), "kept,", len(dups), "duplicates")
sys.exit(0 if ok else 1)
PY

# --- text_or_ocr: the text layer where it has text, OCR where it does not (expressions) -------
status=0; orch run text_or_ocr.orch --workers 3 --quiet --metrics toc.json 2>toc.log || status=$?
check "text_or_ocr completes with the corrupt PDF failed (exit 2)" test "$status" = 2
# Demand: the `if` renders and OCRs only the 2 scanned pages; the other 46 pages (and the
# corrupt PDF's none) leave both Calls out.
# (Grains committed, not grains dispatched: a batch lost with a worker runs again.)
check_equal "text_or_ocr: the render and the OCR ran on the 2 scanned pages only, 46 not needed each" \
  "[(2, 46), (2, 46)]" "$($python -c '
import json
calls = {c["name"]: c for c in json.load(open("toc.json"))["calls"]}
print([(calls[n]["outcomes"].get("committed"), calls[n]["not_needed"]) for n in ("ocred", "pdf.render@ocred")])')"
check "text_or_ocr: every good PDF has all its pages, and only the scanned one was OCRed" \
  test "$($python -c '
import json
rows = sorted((r["path"].split("/")[-1], len(r["pages"]), r["ocr_pages"])
              for r in map(json.loads, open("out/text_or_ocr.jsonl")))
print(rows)')" = "[('letter.pdf', 3, 0), ('manual.pdf', 30, 0), ('memo.pdf', 1, 0), ('report.pdf', 12, 0), ('scanned.pdf', 2, 2)]"
check "... the scanned pages' text comes from OCR" grep -q "The word of this page is bravo" out/pages/scanned-p2.txt
check "... the other pages' text from their text layer" grep -q "report page 7" out/pages/report-p7.txt
check "... one file per page, named by format() and ordinal()" test "$(ls out/pages | wc -l)" = 48
mv out workers-out
orch run text_or_ocr.orch --in-process --quiet 2>/dev/null || true
check "... 3 worker processes and --in-process write identical pages" diff -r workers-out/pages out/pages
rm -rf out workers-out

# --- clip_quality: video -> clips -> frames -> sharpness ------------------------------------
status=0; orch run clip_quality.orch --workers 4 --quiet 2>clip.log || status=$?
check "clip_quality completes with the corrupt video failed (exit 2)" test "$status" = 2
if [ ! -e /dev/nvidia0 ]; then
  check "without a GPU, the { gpus: 1 } Call says once that it runs on the CPU" \
    test "$(grep -c "call 'sharp' asks for a GPU, but none is usable here" clip.log)" = 1
fi
check "every clip of the good videos is scored (2 + 3 clips)" test "$(wc -l <out/clips.jsonl)" = 5
check "each good video has a row" test "$(wc -l <out/videos.jsonl)" = 2
check "the corrupt video is in the errors journal" grep -q 'broken.mp4' clip_quality.errors.jsonl
check "scores are numbers" $python -c '
import json, sys
sys.exit(0 if all(isinstance(json.loads(l)["score"], float) for l in open("out/clips.jsonl")) else 1)'
mv out workers-out
orch run clip_quality.orch --in-process --quiet 2>/dev/null || true
for file in clips videos; do
  check "4 worker processes and --in-process score $file identically" \
    test "$(sort workers-out/$file.jsonl)" = "$(sort out/$file.jsonl)"
done
rm -rf out workers-out

# --- clip_features: motion per clip and a hash per frame, GPU Calls on the CPU ---------------
status=0; orch run clip_features.orch --workers 3 --quiet 2>features.log || status=$?
check "clip_features completes with the corrupt video failed (exit 2)" test "$status" = 2
if [ ! -e /dev/nvidia0 ]; then
  check "without a GPU, one line names the three GPU Calls that run on the CPU" \
    test "$(grep -c "calls 'small', 'hash' and 'motion' ask for a GPU" features.log)" = 1
fi
check "every clip has a motion score and its four frames' hashes" $python - <<'PY'
import json, sys
rows = [json.loads(line) for line in open("out/clip_features.jsonl")]
ok = len(rows) == 5 and all(isinstance(r["motion"], float) and r["motion"] > 0 and
                            len(r["hashes"]) == 4 and
                            all(isinstance(h, str) and len(h) == 16 and int(h, 16) >= 0
                                for h in r["hashes"])
                            for r in rows)
ok = ok and sorted(r["video"] for r in rows) == ["bars", "bars", "circles", "circles", "circles"]
sys.exit(0 if ok else print(rows) or 1)
PY
mv out workers-out
orch run clip_features.orch --in-process --quiet 2>/dev/null || true
check "worker processes and --in-process give identical features" \
  test "$(sort workers-out/clip_features.jsonl)" = "$(sort out/clip_features.jsonl)"
rm -rf out workers-out

# --- quality_score: a Python model scores every page -----------------------------------------
status=0; orch run quality_score.orch --workers 2 --quiet 2>quality.log || status=$?
check "quality_score completes with the corrupt PDF failed (exit 2)" test "$status" = 2
check "every page of every good PDF is scored, as the model scores it directly" $python - <<'PY'
import json, subprocess, sys
sys.path.insert(0, "models")
from quality import Scorer
scorer = Scorer(min_words=10)
rows = {r["path"]: r for r in map(json.loads, open("out/quality.jsonl"))}
ok = sorted(len(r["scores"]) for r in rows.values()) == [1, 2, 3, 12, 30]
for path, row in rows.items():
    for number, score in enumerate(row["scores"], 1):
        # pdf.text and pdftotext agree on a page's words (the pdf_text check); the score
        # depends on nothing else.
        text = subprocess.run(["pdftotext", "-f", str(number), "-l", str(number), path, "-"],
                              capture_output=True, text=True).stdout
        ok = ok and score == scorer.score(text)
        ok = ok and row["kept"][number - 1] == (1 if score >= 0.5 else 0)
ok = ok and rows["samples/pdfs/scanned.pdf"]["scores"] == [0.0, 0.0]
ok = ok and all(s > 0.5 for s in rows["samples/pdfs/report.pdf"]["scores"])
sys.exit(0 if ok else print(rows) or 1)
PY
mv out workers-out
orch run quality_score.orch --in-process --quiet 2>/dev/null || true
check "... 2 worker processes and --in-process score identically" \
  test "$(sort workers-out/quality.jsonl)" = "$(sort out/quality.jsonl)"
rm -rf out workers-out

# --- page_embeddings: a PyTorch network embeds every page -------------------------------------
if $python -c 'import torch, numpy' 2>/dev/null; then
  # The same pipeline, also keeping each page's 64 x 64 thumbnail (its pixels, by a second
  # Python operator), which the check feeds to the model directly.
  printf 'class Pixels:\n    def __call__(self, images):\n        return [image.tobytes() for image in images]\n' >pixels.py
  sed 's|^sink jsonl|operator image.pixels(image: Image) -> Bytes = python("pixels.py", class: "Pixels");\nsink files(dir: "out/thumbnails", name: format("{}-{}", broadcast(docs.stem, pages), ordinal(pages)), ext: ".rgb", content: image.pixels(thumbnail));\nsink jsonl|' \
    page_embeddings.orch >embeddings_check.orch
  status=0; orch run embeddings_check.orch --workers 2 --quiet 2>embeddings.log || status=$?
  check "page_embeddings completes with the corrupt PDF failed (exit 2)" test "$status" = 2
  check "every page's embedding equals the model run directly in Python on its thumbnail" $python - <<'PY'
import json, os, sys
import numpy
sys.path.insert(0, "models")
from embedder import Embedder
model = Embedder(dims=16)
rows = list(map(json.loads, open("out/embeddings.jsonl")))
images, expected = [], []
for row in rows:
    stem = os.path.splitext(os.path.basename(row["path"]))[0]
    for ordinal, embedding in enumerate(row["pages"]):
        pixels = open("out/thumbnails/%s-%d.rgb" % (stem, ordinal), "rb").read()
        images.append(numpy.frombuffer(pixels, dtype=numpy.uint8).reshape(64, 64, 3))
        expected.append(embedding)
direct = model(images).tolist()  # one batch of every page
ok = len(direct) == 48 and all(len(e) == 16 for e in expected)
ok = ok and direct == expected  # exactly: the network computes each image on its own
# ... whatever the batch: Orch may hand the model a batch of one when a replica is idle.
ok = ok and [model([image]).tolist()[0] for image in images] == expected
sys.exit(0 if ok else 1)
PY
  mv out workers-out
  orch run page_embeddings.orch --in-process --quiet 2>/dev/null || true
  check "... 2 worker processes and --in-process embed identically" \
    test "$(sort workers-out/embeddings.jsonl)" = "$(sort out/embeddings.jsonl)"
  rm -rf out workers-out
else
  echo "note: page_embeddings not run: $python has no torch or numpy (python3-torch, python3-numpy)"
fi

# --- OCR batches that mix documents -------------------------------------------------------
cat >ocr_mix.orch <<'ORCH'
pipeline ocr_mix;
source docs = files("samples/pdfs/*.pdf") as Doc;
pages = expand(pdf.pages(docs)) as Page;
images = pdf.render(pages, dpi: 100) { batch: 4, replicas: 2 };
texts = ocr.tesseract(images) { batch: 8 };
sink files(dir: "out/mix", name: docs.stem, ext: ".txt", content: text.join(reduce(texts)));
ORCH
orch run ocr_mix.orch --in-process --threads 2 2>mix.log || true
check "OCR batches hold pages of more than one document" \
  grep -qE "call 'texts': .* [1-9][0-9]* mixing source rows" mix.log
check "... and each document's text is still in page order" markers_in_order out/mix/report.txt report 12

# --- vlm_ocr: pages to a model server's vision model (the test server reads them with tesseract) -
$python "$ORCH_SOURCE_DIR/tests/e2e/lib/model_server.py" --port-file "$workdir/vlm.port" \
  --slots 4 >vlm-server.log 2>&1 &
for _ in $(seq 100); do [ -s "$workdir/vlm.port" ] && break; sleep 0.1; done
status=0
orch run vlm_ocr.orch --set endpoint="http://127.0.0.1:$(cat "$workdir/vlm.port")/v1" \
  --set out=out/vlm --set 'input=samples/pdfs/[lsb]*.pdf' --quiet --metrics vlm.json \
  2>vlm.log || status=$?
check "vlm_ocr completes with the corrupt PDF failed (exit 2)" test "$status" = 2
check "letter.md has every page in order" markers_in_order out/vlm/letter.md letter 3
orch run pdf_to_markdown.orch --set out=out/ocr --set 'input=samples/pdfs/[ls]*.pdf' --quiet \
  2>/dev/null
check "each document's Markdown is the flagship's OCR text, word for word" $python -c '
import sys
for doc in ("letter", "scanned"):
    vlm, ocr = (open(d + "/" + doc + ".md").read().split() for d in ("out/vlm", "out/ocr"))
    assert vlm == ocr, (doc, vlm[:20], ocr[:20])'
check "one request per page (3 + 2), counted in the metrics" test "$($python -c '
import json
print(next(c for c in json.load(open("vlm.json"))["calls"] if c["op"] == "llm.vision")["service"]["requests"])')" = 5
pkill -f "$workdir/vlm.port" || true

# --- names from data stay inside the sink's directory -----------------------------------------
printf '%s\n' '../../escape' '..' '/etc/orch-escape' '.hidden' >names.txt
cat >names.orch <<'ORCH'
pipeline names;
source names = lines("names.txt");
sink files(dir: "out/deep/files", name: names, ext: ".txt", content: names);
ORCH
orch run names.orch --quiet 2>/dev/null || true
check "every row became a file inside the directory" test "$(ls -A out/deep/files | wc -l)" = 4
check "nothing was written outside it" test -z "$(find . -name '*escape*' -not -path './out/deep/files/*')"
check "nothing was written to /etc" test ! -e /etc/orch-escape.txt

finish_checks
