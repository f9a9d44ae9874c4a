"""Near-duplicate detection (bench/dedup/run.sh): Orch's `dedup.near` against reference.py, the
same MinHash + LSH in Python/NumPy, on the pages of texlive-pictures-doc and synthetic near
duplicates of them (corpus.py, cached in ${ORCH_BENCH_CACHE:-~/.cache/orch-bench}).

  1. The corpus, and the exact ground truth (score.py; cached beside it).
  2. reference.py: pages/s (signatures in 2 processes, one index), its drops at 0.8 with full
     32-bit values and with Orch's low-4-bit rule, and a curve over thresholds 0.5..0.95.
  3. Orch: near.orch on the same pages.jsonl (the dropped ids are those not in kept.jsonl; the
     errors journal's "duplicate" lines are counted), pages/s; its drops against the reference's
     with the same low-4-bit rule; with `dedup.minhash` in the catalog, its signatures of the first
     pages against the reference's, byte for byte.
  4. Makespan: pdf.text of every page of the PDFs, with and without dedup.near of the page texts.

Prints one Markdown table and notes; writes $ORCH_BENCH_RESULTS/dedup.json (default build/bench).
Without dedup.near in `orch operators`, steps 3 and 4 are skipped and the table says so.

usage: run.py ORCH WORK [--quick]   (--quick: every 12th PDF, one round; else 3 rounds, median)"""
import datetime, glob, hashlib, json, os, platform, statistics, subprocess, sys, time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "real"))
import score  # noqa: E402
from texlive import texlive_pdfs  # noqa: E402

ORCH, WORK = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
QUICK = "--quick" in sys.argv
REPO = os.path.dirname(os.path.dirname(HERE))
CACHE = os.environ.get("ORCH_BENCH_CACHE", os.path.expanduser("~/.cache/orch-bench"))
RESULTS = os.environ.get("ORCH_BENCH_RESULTS", os.path.join(REPO, "build", "bench"))
PYTHON = "/usr/bin/python3"
ROUNDS = 1 if QUICK else 3
THRESHOLD = 0.8
CURVE = [t / 100 for t in range(50, 100, 5)]
SIGNATURE_SAMPLE = 500
timings = {}


def timed(label, command, **options):
    """Runs `command`; its wall seconds (also kept in `timings` under `label`)."""
    start = time.monotonic()
    subprocess.run(command, check=True, **options)
    seconds = time.monotonic() - start
    timings.setdefault(label, []).append(seconds)
    print(f"  {seconds:7.2f} s  {label}", file=sys.stderr, flush=True)
    return seconds


def digest(*names):
    """A short digest of these scripts: a cached corpus or truth is remade when they change."""
    return hashlib.sha1(b"".join(open(os.path.join(HERE, n), "rb").read() for n in names)).hexdigest()[:8]


def machine():
    model = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                  if line.startswith("model name")), platform.machine())
    return f"{os.cpu_count()} cores ({model})"


def orch_run(program, name, *flags):
    """Runs `program` (a path) in WORK/name; wall seconds and the run's directory."""
    folder = os.path.join(WORK, name)
    os.makedirs(folder, exist_ok=True)
    wall = timed(f"orch {name}", [ORCH, "run", program, "--quiet", "--no-journal", "--errors",
                                  os.path.join(folder, "errors.jsonl"), *flags], cwd=folder,
                 stderr=subprocess.DEVNULL)
    return wall, folder


def jsonl(path):
    with open(path) as lines:
        return [json.loads(line) for line in lines if line.strip()]


os.makedirs(WORK, exist_ok=True)
catalog = subprocess.run([ORCH, "operators"], capture_output=True, text=True).stdout
HAS_NEAR, HAS_MINHASH = "`dedup.near`" in catalog, "`dedup.minhash`" in catalog
results = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "machine": machine(), "quick": QUICK, "rounds": ROUNDS, "orch_binary": ORCH, "orch_has_dedup": HAS_NEAR}

# --- 1. Corpus and ground truth -----------------------------------------------------------------
corpus_dir = os.path.join(CACHE, f"dedup-{'quick' if QUICK else 'full'}-{digest('corpus.py')}")
pages = os.path.join(corpus_dir, "pages.jsonl")
if not os.path.exists(pages):
    timed("corpus", [PYTHON, os.path.join(HERE, "corpus.py"), corpus_dir] + (["--quick"] if QUICK else []))
rows = jsonl(pages)
ids = [row["id"] for row in rows]
synthetic = sum(row["made_from"] is not None for row in rows)
results["corpus"] = {"path": pages, "pages": len(rows), "originals": len(rows) - synthetic,
                     "near_duplicates": synthetic, "pdfs": len({r["origin"].split("#")[0] for r in rows if r["origin"]})}
del rows
start = time.monotonic()
pairs = score.load_pairs(pages, os.path.join(corpus_dir, f"pairs-{digest('score.py', 'reference.py')}.npz"))
timings["ground truth"] = [time.monotonic() - start]
truths = {t: score.truth(pairs, t) for t in sorted(set(CURVE) | {THRESHOLD})}

# --- 2. The reference ---------------------------------------------------------------------------
ref_dir = os.path.join(WORK, "reference")
timed("reference.py (timed run and curve)", [PYTHON, os.path.join(HERE, "reference.py"), pages, ref_dir,
                                             "--threshold", str(THRESHOLD),
                                             "--curve", ",".join(f"{t:.2f}" for t in CURVE)])
reference = json.load(open(os.path.join(ref_dir, "reference.json")))
ref_drops = {(rule, t): score.read_ids(os.path.join(ref_dir, f"drops-{rule}-{t:.2f}.jsonl"))
             for rule in ("full", "low4") for t in truths}
results["reference"] = {"pages_per_s": reference["pages_per_s"], "seconds": reference["seconds"],
                        "scores": {rule: {f"{t:.2f}": score.score(ref_drops[rule, t], truths[t]) for t in truths}
                                   for rule in ("full", "low4")}}

# --- 3. Orch ------------------------------------------------------------------------------------
if HAS_NEAR:
    walls = []
    for _ in range(ROUNDS):
        wall, folder = orch_run(os.path.join(HERE, "near.orch"), "near", "--set", f"input={pages}",
                                "--set", f"threshold={THRESHOLD}", "--metrics", "metrics.json")
        walls.append(wall)
    kept = {row["id"] for row in jsonl(os.path.join(folder, "kept.jsonl"))}
    orch_drops = set(ids) - kept
    journal = [e for e in jsonl(os.path.join(folder, "errors.jsonl")) if e.get("kind") == "duplicate"]
    same_rule = ref_drops["low4", THRESHOLD]
    results["orch"] = {"pages_per_s": len(ids) / statistics.median(walls), "walls": walls,
                       "score": score.score(orch_drops, truths[THRESHOLD]),
                       "journal_duplicates": len(journal),
                       # The index's memory per survivor (runtime.md, "Deduplication").
                       "index": json.load(open(os.path.join(folder, "metrics.json")))["dedup"][0],
                       "agreement_with_reference_low4": {"both": len(orch_drops & same_rule),
                                                            "orch_only": sorted(orch_drops - same_rule),
                                                            "reference_only": sorted(same_rule - orch_drops)}}
    if HAS_MINHASH:  # signatures byte for byte, on the first pages
        sample = os.path.join(WORK, "sample.jsonl")
        with open(pages) as src, open(sample, "w") as dst:
            dst.writelines(line for _, line in zip(range(SIGNATURE_SAMPLE), src))
        program = os.path.join(WORK, "signatures.orch")
        with open(program, "w") as f:
            f.write(f'pipeline dedup_signatures;\nsource rows = jsonl("{sample}") as Row;\n'
                    'sink files(dir: "sigs", name: string(rows.id), ext: ".bin",\n'
                    '           content: dedup.minhash(rows.text as String, ngram: 5, permutations: 128, seed: 1));\n')
        try:
            _, folder = orch_run(program, "signatures")
            expected = np.load(os.path.join(ref_dir, "signatures.npy"))
            paths = glob.glob(os.path.join(folder, "sigs", "*.bin"))
            equal = sum(open(p, "rb").read() == expected[int(os.path.basename(p)[:-4])].astype("<u4").tobytes()
                        for p in paths)
            results["orch"]["signatures_equal"] = f"{equal} of {SIGNATURE_SAMPLE}"
        except (subprocess.CalledProcessError, ValueError) as error:
            results["orch"]["signatures_equal"] = f"not checked: {error}"

# --- 4. Makespan of pdf.text with and without dedup.near ----------------------------------------
if HAS_NEAR:
    pdfs = texlive_pdfs(CACHE)[::12] if QUICK else texlive_pdfs(CACHE)
    manifest = os.path.join(WORK, "pdfs.jsonl")
    with open(manifest, "w") as f:
        f.writelines(json.dumps({"path": p}) + "\n" for p in pdfs)
    cores = os.cpu_count()

    def pdf_text(name, order):
        """pdf.text of every page, its texts deduplicated in `order` ("source", "arrival"), or
        not (None)."""
        path = os.path.join(WORK, name + ".orch")
        texts = f'dedup.near(texts, threshold: 0.8, order: "{order}")' if order else "texts"
        with open(path, "w") as f:
            f.write(f'pipeline {name};\nsource docs = jsonl("{manifest}") as Doc;\n'
                    'pages = expand(pdf.pages(file(docs.path as String))) as Page;\n'
                    f'texts = pdf.text(pages) {{ batch: 32, replicas: {cores} }};\n'
                    f'sink jsonl(path: "text.jsonl", record: {{ path: docs.path, pages: reduce({texts}) }});\n')
        return path

    def latency(folder):
        """A source row's mean seconds from admission to finish: what rows behind a long
        document wait for the sequencer."""
        rows = json.load(open(os.path.join(folder, "metrics.json")))["source_rows"]
        return statistics.mean(r["finished"] - r["admitted"] for r in rows)

    runs = {"without": [], "with": [], "arrival": []}
    latencies = {"without": [], "with": [], "arrival": []}
    for _ in range(ROUNDS):  # alternating
        for key, order in (("without", None), ("with", "source"), ("arrival", "arrival")):
            name = "pdf_text" + ("_" + order if order else "")
            wall, folder = orch_run(pdf_text(name, order), name, "--workers", str(cores),
                                    "--metrics", "metrics.json")
            runs[key].append(wall)
            latencies[key].append(latency(folder))
    without, with_dedup = statistics.median(runs["without"]), statistics.median(runs["with"])
    results["makespan"] = {"pdfs": len(pdfs), "without_s": runs["without"], "with_s": runs["with"],
                           "arrival_s": runs["arrival"], "ratio": with_dedup / without,
                           "row_latency_s": {key: statistics.median(value)
                                             for key, value in latencies.items()}}

# --- Table --------------------------------------------------------------------------------------
def cells(s):
    return [f"{s['precision']:.3f}", f"{s['recall']:.3f}", str(s["dropped"]), str(s["true"])]


table = ["| system | threshold | precision | recall | dropped | true duplicates | pages/s |", "|---|---|---|---|---|---|---|"]
if HAS_NEAR:
    table.append("| Orch `dedup.near` | 0.80 | " + " | ".join(cells(results["orch"]["score"])) +
                 f" | {results['orch']['pages_per_s']:.0f} |")
else:
    table.append(f"| Orch `dedup.near` | 0.80 | not run: `{ORCH} operators` has no dedup.near | | | | |")
table.append("| reference, full 32-bit values | 0.80 | " + " | ".join(cells(results["reference"]["scores"]["full"]["0.80"]))
             + f" | {reference['pages_per_s']:.0f} |")
table.append("| reference, Orch's low-4-bit rule | 0.80 | " +
             " | ".join(cells(results["reference"]["scores"]["low4"]["0.80"])) + " | |")
for t in CURVE:
    table.append(f"| reference curve, full | {t:.2f} | " +
                 " | ".join(cells(results["reference"]["scores"]["full"][f"{t:.2f}"])) + " | |")
c = results["corpus"]
notes = [f"{c['pages']} pages: {c['originals']} pages of {c['pdfs']} texlive-pictures-doc PDFs and "
         f"{c['near_duplicates']} synthetic near duplicates (bench/dedup/corpus.py). MinHash of 5-word "
         "shingles, 128 permutations, LSH 16 bands x 8 rows; truth: exact Jaccard of the shingle sets, "
         "greedy in source order (bench/dedup/score.py). The curve keeps 16 bands: below about 0.7 LSH "
         "misses candidates by design."]
if HAS_NEAR:
    o = results["orch"]
    agree = o["agreement_with_reference_low4"]
    index = o["index"]
    notes.append(f"Orch's index: {index['indexed']} survivors in {index['index_bytes']} bytes, "
                 f"{index['bytes_per_survivor']} B each.")
    notes.append(f"Orch against the reference with its own low-4-bit rule at 0.80: {agree['both']} dropped by "
                 f"both, {len(agree['orch_only'])} only by Orch, {len(agree['reference_only'])} only by the "
                 f"reference (ids in dedup.json); the errors journal has {o['journal_duplicates']} duplicate "
                 f"lines for {o['score']['dropped']} rows missing from kept.jsonl.")
    if "signatures_equal" in o:
        notes.append(f"dedup.minhash signatures of the first pages equal to the reference's: {o['signatures_equal']}.")
    m = results["makespan"]
    notes.append(f"Makespan, pdf.text of {m['pdfs']} PDFs: {statistics.median(m['without_s']):.2f} s without, "
                 f"{statistics.median(m['with_s']):.2f} s with dedup.near of the page texts: "
                 f"{m['ratio']:.2f}x; with order: \"arrival\" {statistics.median(m['arrival_s']):.2f} s. "
                 "A source row's mean seconds from admission to finish: "
                 f"{m['row_latency_s']['without']:.2f} without dedup, {m['row_latency_s']['with']:.2f} in "
                 f"source order, {m['row_latency_s']['arrival']:.2f} by arrival.")
results["timings"] = timings
results["markdown"] = "\n".join(table) + "\n\n" + "\n\n".join(notes) + "\n"
print(f"### Near-duplicate detection{' (--quick)' if QUICK else ''}\n\nMachine: {machine()}. "
      f"Date: {datetime.date.today().isoformat()}. Command: `bench/dedup/run.sh{' --quick' if QUICK else ''}`\n")
print(results["markdown"])
os.makedirs(RESULTS, exist_ok=True)
with open(os.path.join(RESULTS, "dedup.json"), "w") as f:
    json.dump(results, f, indent=1)
