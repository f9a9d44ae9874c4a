#!/usr/bin/env bash
# The cost of the Python operator bridge (docs/python.md), against calling the same class
# directly in Python:
#  1. per batch and per item, for batches of short strings: each Call's time inside its operator
#     (from --metrics) at three batch sizes, fitted as a + b * items, next to the same fit of
#     the class called directly;
#  2. the rate at which 640 x 480 RGB frames reach a model as NumPy arrays, and come back.
#   bench/python/bridge.sh [ORCH]   (default build/bin/orch)
set -euo pipefail
cd "$(dirname "$0")/../.."
orch=$(realpath "${1:-build/bin/orch}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
exec /usr/bin/python3 - "$orch" "$work" <<'PY'
import json, os, subprocess, sys, time

orch, work = sys.argv[1], sys.argv[2]
os.chdir(work)
with open("models.py", "w") as out:
    out.write('''
import numpy

class Lengths:
    def __call__(self, texts):
        return [len(t) for t in texts]

class MakeFrames:
    def __call__(self, seeds):
        return [numpy.full((480, 640, 3), int(s) % 256, dtype=numpy.uint8) for s in seeds]

class Checksum:
    def __call__(self, images):
        return [int(image[::61, ::67].sum()) for image in images]
''')
sys.path.insert(0, work)
import models

ITEMS = 64000
with open("texts.txt", "w") as out:
    for i in range(ITEMS):
        out.write("text number %d\n" % i)

def fit(points):
    """Least squares a + b * x over (x, y) points."""
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    b = sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x, _ in points)
    return my - b * mx, b

def run(program, name):
    open(name + ".orch", "w").write(program)
    subprocess.run([orch, "run", name + ".orch", "--in-process", "--threads", "2", "--quiet",
                    "--metrics", name + ".json"], check=True, stderr=subprocess.DEVNULL)
    return json.load(open(name + ".json"))

# --- 1. short strings -------------------------------------------------------------------
bridge, direct = [], []
texts = [line.rstrip("\n") for line in open("texts.txt")]
lengths = models.Lengths()
for batch in (16, 64, 256):
    metrics = run('''pipeline strings;
operator lengths(text: String) -> Int = python("models.py", class: "Lengths");
source rows = lines("texts.txt");
sink jsonl(path: "out.jsonl", record: { n: lengths(rows) { batch: %d } });
''' % batch, "strings%d" % batch)
    call = next(c for c in metrics["calls"] if c["op"] == "lengths")
    items = call["grains"] / call["batches"]
    bridge.append((items, call["busy_seconds"] / call["batches"]))
    start = time.perf_counter()
    for begin in range(0, ITEMS, batch):
        lengths(texts[begin:begin + batch])
    seconds = time.perf_counter() - start
    direct.append((batch, seconds / ((ITEMS + batch - 1) // batch)))
    print("batch %3d: %6.1f items per batch (mean fill), %7.1f us per batch through the bridge, "
          "%5.1f us directly" % (batch, items, bridge[-1][1] * 1e6, direct[-1][1] * 1e6))
a, b = fit(bridge)
da, db = fit(direct)
print("through the bridge: %.3f ms per batch + %.2f us per item" % (a * 1e3, b * 1e6))
print("directly in Python: %.3f ms per batch + %.2f us per item" % (da * 1e3, db * 1e6))
print("bridge overhead:    %.3f ms per batch + %.2f us per item (targets: 0.2 ms, 3 us)"
      % ((a - da) * 1e3, (b - db) * 1e6))
per64 = next(y for x, y in bridge if abs(x - 64) < 8) if any(abs(x - 64) < 8 for x, _ in bridge) else a + 64 * b
print("a batch of 64 strings: %.3f ms through the bridge, %.3f ms directly"
      % (per64 * 1e3, (da + 64 * db) * 1e3))

# --- 2. frames ----------------------------------------------------------------------------
FRAMES = 400
with open("seeds.txt", "w") as out:
    for i in range(FRAMES):
        out.write("%d\n" % i)
metrics = run('''pipeline frames;
operator frames.make(seed: String) -> Image = python("models.py", class: "MakeFrames");
operator frames.checksum(image: Image) -> Int = python("models.py", class: "Checksum");
source seeds = lines("seeds.txt");
call make = frames.make() { batch: 16 };
call checksum = frames.checksum() { batch: 16 };
sink jsonl(path: "frames.jsonl", record: { sum: checksum(make(seeds)) });
''', "frames")
frame_bytes = 480 * 640 * 3
calls = {c["name"]: c for c in metrics["calls"]}
frames = [numpy_frame for numpy_frame in models.MakeFrames()(list(range(64)))]
start = time.perf_counter()
for _ in range(FRAMES // 64 + 1):
    models.Checksum()(frames)
direct_checksum = (time.perf_counter() - start) / ((FRAMES // 64 + 1) * 64)
start = time.perf_counter()
for _ in range(FRAMES // 64 + 1):
    models.MakeFrames()(list(range(64)))
direct_make = (time.perf_counter() - start) / ((FRAMES // 64 + 1) * 64)
for name, direct_seconds, what in (("checksum", direct_checksum, "to Python (Image -> NumPy array)"),
                                   ("make", direct_make, "from Python (NumPy array -> Image)")):
    call = calls[name]
    per_frame = call["busy_seconds"] / call["grains"]
    transfer = max(per_frame - direct_seconds, 1e-9)
    print("640x480 RGB frames %s: %.2f ms per frame through the bridge, %.3f ms directly; "
          "the bridge moves %.2f GB/s" % (what, per_frame * 1e3, direct_seconds * 1e3,
                                          frame_bytes / transfer / 1e9))
PY
