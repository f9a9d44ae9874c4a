#!/usr/bin/env bash
# Resume down to the child (docs/outputs.md): examples/pdf_to_markdown.orch (OCR with
# tesseract) over one long PDF (the bundled sample PDFs joined with pdfunite until it has
# PAGES pages; default 1,321), run to the end once, then run again, SIGKILLed once half the
# pages are OCR'd (as the journal's value store shows), and resumed. Prints how much of the OCR work the resumed run did (the pages
# it OCR'd over the document's pages: at most about 0.55 when values are kept), the journal's
# value store per page, and checks that the resumed run wrote what the undisturbed one did.
#   bench/outputs/resume_child.sh [ORCH]   (default build/bin/orch; PAGES=200 for a short run)
set -euo pipefail
cd "$(dirname "$0")/../.."
orch=$(realpath "${1:-build/bin/orch}")
pages=${PAGES:-1321}
source_dir=$PWD
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
# One PDF of at least $pages pages, cut to exactly $pages.
parts=()
count=0
while [ "$count" -lt "$pages" ]; do
  for pdf in letter manual memo report scanned; do
    parts+=("$source_dir/examples/samples/pdfs/$pdf.pdf")
    count=$((count + $(pdfinfo "$source_dir/examples/samples/pdfs/$pdf.pdf" | awk '/^Pages:/ {print $2}')))
  done
done
mkdir -p in
pdfunite "${parts[@]}" joined.pdf
pdfseparate -l "$pages" joined.pdf "page-%d.pdf"
pdfunite $(for i in $(seq 1 "$pages"); do echo "page-$i.pdf"; done) in/long.pdf
rm -f page-*.pdf joined.pdf
exec /usr/bin/python3 - "$orch" "$source_dir/examples/pdf_to_markdown.orch" "$pages" <<'PY'
import os, re, subprocess, sys, time
orch, program, pages = sys.argv[1], sys.argv[2], int(sys.argv[3])
common = ["--set", "input=in/long.pdf", "--set", "out=out"]
start = time.monotonic()
subprocess.run([orch, "run", program, "--quiet", "--no-journal"] + common, check=True,
               stderr=subprocess.DEVNULL)
full = time.monotonic() - start
clean = open("out/long.md").read()
os.remove("out/long.md")
run = subprocess.Popen([orch, "run", program, "--quiet", "--restart"] + common,
                       stderr=subprocess.DEVNULL)

def kept_records():
    """Whole records in the journal's value store: the split's, then one per OCR'd page (its
    text; rendered images are too big to keep)."""
    try:
        data = open("pdf_to_markdown.run/values", "rb").read()
    except FileNotFoundError:
        return 0
    count, at = 0, 0
    while at + 8 <= len(data):
        length = int.from_bytes(data[at:at + 4], "little")
        if at + 8 + length > len(data):
            break
        count, at = count + 1, at + 8 + length
    return count

# Killed once half the pages are OCR'd (as the store shows them), or at half the time.
started = time.monotonic()
while kept_records() < 1 + pages // 2 and time.monotonic() - started < full:
    time.sleep(0.05)
killed_at = time.monotonic() - started
# The coordinator and its local workers, all at once (as a machine that goes down).
workers = subprocess.run(["pgrep", "-P", str(run.pid)], capture_output=True, text=True).stdout
run.kill()
for pid in workers.split():
    subprocess.run(["kill", "-9", pid], check=False)
run.wait()
store = os.path.getsize("pdf_to_markdown.run/values")
start = time.monotonic()
resumed = subprocess.run([orch, "run", program] + common, stderr=subprocess.PIPE, text=True)
again = time.monotonic() - start
ocr = int(re.search(r"call 'ocr': (\d+) grains", resumed.stderr).group(1))
# Renders whose OCR is reused are not needed (demand): the resumed run renders what it OCRs.
render = re.search(r"call 'pdf.render[^']*': (\d+) grains", resumed.stderr)
reused = re.search(r"(\d+) finished grains of the others were reused", resumed.stderr)
print("pages: %d; undisturbed run %.1f s; killed at %.1f s (half the pages OCR'd); resumed run %.1f s"
      % (pages, full, killed_at, again))
print("resumed run: OCR of %d pages = %.2f of the document's OCR work; %s grains reused"
      % (ocr, ocr / pages, reused.group(1) if reused else "no"))
print("resumed run: %s pages rendered" % (render.group(1) if render else "no"))
print("value store when killed: %d bytes, %.0f bytes per page" % (store, store / pages))
if resumed.returncode != 0 or open("out/long.md").read() != clean:
    sys.exit("the resumed run did not write what the undisturbed run wrote")
PY
