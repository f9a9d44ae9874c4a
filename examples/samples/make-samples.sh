#!/usr/bin/env bash
# Regenerates the bundled sample data (committed, so a run needs none of these tools):
#   pdfs/    text PDFs of 1 to 30 pages whose pages say "<doc> page <n>", one scanned PDF whose
#            pages are images only (needs OCR), one corrupt PDF
#   videos/  short test-pattern videos and one corrupt video
# Needs enscript, ghostscript (ps2pdf, gs) and ffmpeg.
set -euo pipefail
cd "$(dirname "$0")"
rm -rf pdfs videos
mkdir -p pdfs videos
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

words=(alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike
       november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu)

# make_text DOC PAGES: one page per form feed; each page names its document and number and
# carries the page's own word.
make_text() {
  local doc=$1 pages=$2 page
  for page in $(seq 1 "$pages"); do
    [ "$page" -gt 1 ] && printf '\f'
    printf '%s page %d\n\n' "$doc" "$page"
    printf 'The word of this page is %s.\n' "${words[$(( (page - 1) % ${#words[@]} ))]}"
    printf 'Orch reassembles pages in order, batch after batch.\n'
  done
}

make_pdf() { # make_pdf DOC PAGES FONT
  make_text "$1" "$2" >"$work/$1.txt"
  enscript -q -B -f "$3" -p "$work/$1.ps" "$work/$1.txt"
  ps2pdf "$work/$1.ps" "pdfs/$1.pdf"
}

make_pdf memo 1 Courier12
make_pdf letter 3 Courier12
make_pdf report 12 Courier12
make_pdf manual 30 Courier12
# Scanned: rendered to images only, in a large font so that OCR reads it reliably.
make_pdf scanned 2 Courier24
gs -q -dNOPAUSE -dBATCH -sDEVICE=pdfimage24 -r150 -sOutputFile="$work/scanned-image.pdf" \
  pdfs/scanned.pdf
mv "$work/scanned-image.pdf" pdfs/scanned.pdf
# Corrupt: the first half of a real PDF.
head -c 600 pdfs/letter.pdf >pdfs/broken.pdf

for spec in "bars:testsrc:4" "circles:testsrc2:6"; do
  IFS=: read -r name source seconds <<<"$spec"
  ffmpeg -loglevel error -f lavfi -i "$source=duration=$seconds:size=320x240:rate=25" \
    -c:v libx264 -pix_fmt yuv420p -g 25 "videos/$name.mp4"
done
head -c 2000 videos/bars.mp4 >videos/broken.mp4
