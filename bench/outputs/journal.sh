#!/usr/bin/env bash
# What the run journal (docs/outputs.md) costs: examples/pdf_text.orch over 1,000 PDFs (the
# bundled sample PDFs, 200 copies each, about 9,600 pages), with the journal and with
# --no-journal, alternating, five runs each, in one invocation. Prints each run, the medians
# and their ratio, the journal's store of kept values per page, and checks that both wrote the
# same rows.
#   bench/outputs/journal.sh [ORCH]   (default build/bin/orch)
set -euo pipefail
cd "$(dirname "$0")/../.."
orch=$(realpath "${1:-build/bin/orch}")
source_dir=$PWD
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/pdfs"
for copy in $(seq 1 200); do
  for pdf in letter manual memo report scanned; do
    cp "examples/samples/pdfs/$pdf.pdf" "$work/pdfs/$pdf-$copy.pdf"
  done
done
cd "$work"
exec /usr/bin/python3 - "$orch" "$source_dir/examples/pdf_text.orch" <<'PY'
import statistics, subprocess, sys, time
orch, program = sys.argv[1], sys.argv[2]
times = {"journal": [], "no journal": []}
for round in range(1, 6):
    for variant in ("journal", "no journal"):
        out = "out/%s.jsonl" % variant.replace(" ", "-")
        command = [orch, "run", program, "--quiet", "--set", "input=pdfs/*.pdf", "--set",
                   "out=" + out, "--restart"]
        if variant == "no journal":
            command.append("--no-journal")
        start = time.monotonic()
        subprocess.run(command, check=True, stderr=subprocess.DEVNULL)
        times[variant].append(time.monotonic() - start)
        print("%-10s run %d: %.2f s" % (variant, round, times[variant][-1]))
rows = [sorted(open("out/%s.jsonl" % v)) for v in ("journal", "no-journal")]
if rows[0] != rows[1] or len(rows[0]) != 1000:
    sys.exit("the two variants wrote different rows")
with_journal = statistics.median(times["journal"])
without = statistics.median(times["no journal"])
print("median: with the journal %.2f s, without %.2f s, journal / none = %.3f"
      % (with_journal, without, with_journal / without))
# The kept grain values (resume down to the child) of the last run with the journal.
import glob, json, os
store = sum(os.path.getsize(p) for p in glob.glob("*.run/values"))
pages = sum(len(json.loads(line).get("pages", [])) for line in rows[0])
print("journal value store: %d bytes, %.0f bytes per page (%d pages)"
      % (store, store / max(pages, 1), pages))
PY
