#!/usr/bin/env bash
# "The text layer where it is long enough, else OCR", spelled two ways over the bundled PDFs:
# with `if` and with `filter` + `coalesce`. Demand (docs/runtime.md) makes both render and OCR
# only the pages whose text layer is short; this prints each run's wall time, the grains each
# spelling's render and OCR ran and left out, the medians and their ratio, and checks that both
# wrote the same rows.
#   bench/language/text_or_ocr.sh [ORCH] [MIN_CHARS]   (default build/bin/orch, 20)
set -euo pipefail
cd "$(dirname "$0")/../.."
orch=$(realpath "${1:-build/bin/orch}")
min_chars=${2:-20}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pdfs=$(realpath examples/samples/pdfs)
cat >"$work/if.orch" <<ORCH
pipeline text_if;
source docs = files("$pdfs/*.pdf") as Doc;
pages = expand(pdf.pages(docs)) as Page;
layer = pdf.text(pages) { batch: 32 };
long = len(layer) >= $min_chars;
text = if long then layer else ocr.tesseract(pdf.render(pages)) { batch: 8 };
sink jsonl(path: "$work/OUT.jsonl", record: { path: docs.path, pages: reduce(text) });
ORCH
cat >"$work/coalesce.orch" <<ORCH
pipeline text_coalesce;
source docs = files("$pdfs/*.pdf") as Doc;
pages = expand(pdf.pages(docs)) as Page;
layer = pdf.text(pages) { batch: 32 };
long = len(layer) >= $min_chars;
ocred = ocr.tesseract(pdf.render(filter(pages, not long))) { batch: 8 };
text = coalesce(filter(layer, long), ocred);
sink jsonl(path: "$work/OUT.jsonl", record: { path: docs.path, pages: reduce(text) });
ORCH
sed -i "s|OUT|if|" "$work/if.orch"
sed -i "s|OUT|coalesce|" "$work/coalesce.orch"
/usr/bin/python3 - "$orch" "$work" <<'PY'
import json, statistics, subprocess, sys, time
orch, work = sys.argv[1], sys.argv[2]
times = {"if": [], "coalesce": []}
for round in range(1, 4):
    for variant in ("if", "coalesce"):
        start = time.monotonic()
        subprocess.run([orch, "run", f"{work}/{variant}.orch", "--quiet", "--no-journal",
                        "--errors", f"{work}/{variant}.errors.jsonl",
                        "--metrics", f"{work}/{variant}.json"], stderr=subprocess.DEVNULL)
        times[variant].append(time.monotonic() - start)
        calls = json.load(open(f"{work}/{variant}.json"))["calls"]
        work_done = ", ".join(f"{c['name']}: {c['grains']} run, {c['not_needed']} not needed"
                              for c in calls if "render" in c["name"] or "tesseract" in c["name"]
                              or c["name"] == "ocred")
        print(f"{variant} run {round}: {times[variant][-1]:.2f} s ({work_done})")
outputs = [sorted(open(f"{work}/{variant}.jsonl")) for variant in ("if", "coalesce")]
if outputs[0] != outputs[1]:
    sys.exit("the two spellings wrote different rows")
a, b = statistics.median(times["if"]), statistics.median(times["coalesce"])
print(f"median: if {a:.2f} s, filter + coalesce {b:.2f} s, if / coalesce = {a / b:.2f}")
PY
