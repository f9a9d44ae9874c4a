#!/usr/bin/python3
"""Lays out an HTML page in headless Chromium at given widths and fails when text overlaps.

usage: report_layout.py PAGE.html WIDTH [WIDTH...]

For each width, a copy of the page gets a script that measures every piece of text as the
browser laid it out (the line boxes of HTML text, the boxes of SVG <text>), then Chromium prints
the page (--dump-dom) with the measurements in it. Two texts overlap when their boxes share
more than a sliver (2 px each way); a text sticks out when it reaches past the page's right edge
(the page cannot be read without scrolling sideways), or a chart's label reaches past its
chart's edge (it is cut off). Prints each problem and exits 1 if any,
2 if Chromium could not lay the page out, 0 otherwise.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

MEASURE = r"""
<script>
(function () {
  // Folded text (a traceback under its last line) laid out open: the page must hold it too.
  document.querySelectorAll('details').forEach(d => { d.open = true; });
  const boxes = [];
  const measuredLabels = new Set();  // an SVG <text> is one box, whatever text nodes it holds
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  let textId = 0;
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const text = node.textContent.trim();
    if (!text || node.parentElement.closest('script,title,style')) continue;
    const inSvg = node.parentElement.closest('svg');
    if (inSvg && !node.parentElement.closest('text')) continue;  // <title> tooltips
    // Text that is not drawn (inside a closed <details>) takes no room.
    if (!inSvg && node.parentElement.checkVisibility &&
        !node.parentElement.checkVisibility({contentVisibilityAuto: true})) continue;
    if (inSvg) {
      const label = node.parentElement.closest('text');
      if (measuredLabels.has(label)) continue;
      measuredLabels.add(label);
    }
    const range = document.createRange();
    range.selectNodeContents(node);
    const rects = inSvg ? [node.parentElement.closest('text').getBoundingClientRect()]
                        : Array.from(range.getClientRects());
    textId++;
    // A chart's label must stay inside its chart: what sticks out is cut off.
    const chart = inSvg ? inSvg.getBoundingClientRect() : null;
    for (const r of rects)
      if (r.width > 0 && r.height > 0)
        boxes.push({id: textId, text: text.slice(0, 60), left: r.left + scrollX,
                    top: r.top + scrollY, right: r.right + scrollX, bottom: r.bottom + scrollY,
                    chart: chart && {left: chart.left + scrollX, right: chart.right + scrollX,
                                     top: chart.top + scrollY, bottom: chart.bottom + scrollY}});
  }
  const pre = document.createElement('pre');
  pre.id = 'orch-layout';
  pre.textContent = JSON.stringify({width: document.documentElement.clientWidth, boxes: boxes});
  document.body.appendChild(pre);
})();
</script>
"""

SLIVER = 2.0


def measure(page, width):
    html = open(page, encoding="utf-8").read()
    with tempfile.TemporaryDirectory() as scratch:
        copy = os.path.join(scratch, "page.html")
        with open(copy, "w", encoding="utf-8") as out:
            out.write(html.replace("</body>", MEASURE + "</body>"))
        result = subprocess.run(
            ["chromium", "--headless", "--disable-gpu", "--no-sandbox", "--hide-scrollbars",
             "--user-data-dir=" + os.path.join(scratch, "profile"),
             "--window-size=%d,1000" % width, "--dump-dom", "file://" + copy],
            capture_output=True, text=True, timeout=120)
    found = re.search(r"<pre id=\"orch-layout\">(.*?)</pre>", result.stdout, re.S)
    if not found:
        sys.stderr.write("chromium printed no layout (exit %d): %s\n"
                         % (result.returncode, result.stderr[-2000:]))
        return None
    text = found.group(1).replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"')
    return json.loads(text.replace("&amp;", "&"))


def problems(layout):
    boxes = sorted(layout["boxes"], key=lambda b: b["left"])
    found = []
    for i, a in enumerate(boxes):
        chart = a.get("chart")
        if chart and (a["left"] < chart["left"] - SLIVER or a["right"] > chart["right"] + SLIVER):
            found.append("is cut off by the edge of its chart: %r" % a["text"])
        if a["right"] > layout["width"] + SLIVER:
            found.append("sticks out past the page's right edge (%d px > %d): %r"
                         % (a["right"], layout["width"], a["text"]))
        for b in boxes[i + 1:]:
            if b["left"] >= a["right"] - SLIVER:
                break
            if a["id"] == b["id"]:
                continue
            across = min(a["right"], b["right"]) - max(a["left"], b["left"])
            down = min(a["bottom"], b["bottom"]) - max(a["top"], b["top"])
            if across > SLIVER and down > SLIVER:
                found.append("%r overlaps %r (%d x %d px at %d,%d)"
                             % (a["text"], b["text"], across, down, max(a["left"], b["left"]),
                                max(a["top"], b["top"])))
    return found


def main():
    if len(sys.argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    page = sys.argv[1]
    status = 0
    for width in map(int, sys.argv[2:]):
        layout = measure(page, width)
        if layout is None:
            return 2
        found = problems(layout)
        print("%s at %d px: %d texts measured, %d problem(s)"
              % (os.path.basename(page), width, len(layout["boxes"]), len(found)))
        for problem in found[:40]:
            print("  " + problem)
        if found:
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
