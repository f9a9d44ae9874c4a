#!/usr/bin/env bash
# pdf.text's three modes against pdftotext's matching flags, page by page: a generated
# two-column page whose content stream interleaves the columns (so that the modes differ) and
# the bundled sample PDFs.
set -euo pipefail
: "${ORCH_BIN:?set by ctest}" "${ORCH_SOURCE_DIR:?set by ctest}"
# shellcheck source=lib/checks.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib/checks.bash"
python=/usr/bin/python3
command -v pdftotext >/dev/null || { echo "SKIP: pdftotext (poppler-utils) is not installed"; exit 77; }

workdir=$(mktemp -d)
trap 'rm -rf "$workdir"' EXIT
cd "$workdir"
mkdir pdfs
$python "$ORCH_SOURCE_DIR/tests/e2e/lib/two_column_pdf.py" pdfs/two-columns.pdf
for pdf in letter manual memo report; do cp "$ORCH_SOURCE_DIR/examples/samples/pdfs/$pdf.pdf" pdfs/; done
cat >modes.orch <<'ORCH'
pipeline modes;
source docs = files("pdfs/*.pdf") as Pdf;
pages = expand(pdf.pages(docs)) as Page;
sink jsonl(
    path: "out/pages.jsonl",
    record: {
        path: broadcast(docs.path, pages),
        page: ordinal(pages),
        default: pdf.text(pages),
        layout: pdf.text(pages, mode: "layout"),
        raw: pdf.text(pages, mode: "raw"),
        physical: pdf.text(pages, mode: "physical")
    }
);
ORCH
"$ORCH_BIN/orch" run modes.orch --in-process --quiet --no-journal 2>run.log
check "every mode equals pdftotext with the matching flag, on every page" $python - <<'PY'
import json, subprocess, sys
flags = {"layout": [], "raw": ["-raw"], "physical": ["-layout"]}
rows = [json.loads(line) for line in open("out/pages.jsonl")]
problems = []
for r in rows:
    n = str(r["page"] + 1)
    for mode, flag in flags.items():
        expected = subprocess.run(["pdftotext", "-q", "-enc", "UTF-8", *flag, "-f", n, "-l", n,
                                   r["path"], "-"], capture_output=True, text=True,
                                  check=True).stdout.rstrip("\f")
        if r[mode] != expected:
            problems.append("%s page %s, %s: %r != %r" % (r["path"], n, mode, r[mode][:80], expected[:80]))
print("\n".join(problems[:5]))
sys.exit(1 if problems or len(rows) < 40 else 0)
PY
check "the default is the reading order (layout)" $python -c '
import json, sys
rows = [json.loads(line) for line in open("out/pages.jsonl")]
sys.exit(0 if all(r["default"] == r["layout"] for r in rows) else 1)'
check "on two columns the modes differ: columns in turn, stream order, padded lines" $python -c '
import json, sys
r = next(json.loads(l) for l in open("out/pages.jsonl") if "two-columns" in l)
layout, raw, physical = r["layout"], r["raw"], r["physical"]
ok = layout.index("Left column line 6") < layout.index("Right column line 1")
ok = ok and raw.index("Right column line 1") < raw.index("Left column line 1")
ok = ok and "Left column line 1   Right column line 1" in physical
ok = ok and "   " not in layout and not layout.endswith("\f")
sys.exit(0 if ok else 1)'
sed 's/mode: "raw"/mode: "columns"/' modes.orch >bad.orch
status=0
"$ORCH_BIN/orch" run bad.orch --in-process --quiet --no-journal --errors bad.errors.jsonl \
  >bad.log 2>&1 || status=$?
check "an unknown mode fails the rows with the modes it accepts" \
  grep -qF 'pdf.text: mode must be \"layout\", \"raw\" or \"physical\", not \"columns\"' bad.errors.jsonl
finish_checks
