#!/usr/bin/env bash
# ocr.tesseract reads a page as tesseract's command line does (page layout analysis): a
# two-column page column after column, and every page word for word as
# `pdftoppm -r 150 | tesseract` reads it, on the generated two-column page and the scanned
# sample. The library's own default reads a page as one block and runs the columns together.
set -euo pipefail
: "${ORCH_BIN:?set by ctest}" "${ORCH_SOURCE_DIR:?set by ctest}"
# shellcheck source=lib/checks.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib/checks.bash"
python=/usr/bin/python3
command -v tesseract >/dev/null || { echo "SKIP: tesseract's command line is not installed"; exit 77; }
command -v pdftoppm >/dev/null || { echo "SKIP: pdftoppm (poppler-utils) is not installed"; exit 77; }

workdir=$(mktemp -d)
trap 'rm -rf "$workdir"' EXIT
cd "$workdir"
mkdir pdfs
$python "$ORCH_SOURCE_DIR/tests/e2e/lib/two_column_pdf.py" pdfs/two-columns.pdf
cp "$ORCH_SOURCE_DIR/examples/samples/pdfs/scanned.pdf" pdfs/
cat >ocr.orch <<'ORCH'
pipeline ocr;
source docs = files("pdfs/*.pdf") as Pdf;
pages = expand(pdf.pages(docs)) as Page;
sink jsonl(
    path: "out/pages.jsonl",
    record: {
        path: broadcast(docs.path, pages),
        page: ordinal(pages),
        text: ocr.tesseract(pdf.render(pages, dpi: 150))
    }
);
ORCH
export OMP_THREAD_LIMIT=1
"$ORCH_BIN/orch" run ocr.orch --in-process --quiet --no-journal 2>run.log
check "a two-column page is read column after column" $python -c '
import json, sys
text = next(json.loads(l)["text"] for l in open("out/pages.jsonl") if "two-columns" in l)
print(text)
left = [text.find("Left column line %d" % i) for i in range(1, 7)]
right = [text.find("Right column line %d" % i) for i in range(1, 7)]
sys.exit(0 if -1 not in left + right and max(left) < min(right) else 1)'
check "every page has the words tesseract's command line reads" $python - <<'PY'
import json, subprocess, sys
rows = [json.loads(line) for line in open("out/pages.jsonl")]
problems = []
for r in rows:
    n = str(r["page"] + 1)
    png = subprocess.run(["pdftoppm", "-r", "150", "-png", "-f", n, "-l", n, r["path"]],
                         capture_output=True, check=True).stdout
    expected = subprocess.run(["tesseract", "stdin", "stdout"], input=png, capture_output=True,
                              check=True).stdout.decode()
    if r["text"].split() != expected.split():
        problems.append("%s page %s: %r != %r" % (r["path"], n, r["text"][:80], expected[:80]))
print("\n".join(problems))
sys.exit(1 if problems or len(rows) != 3 else 0)
PY
finish_checks
