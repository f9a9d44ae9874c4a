"""Reproduces the paper's experiments in simulation (issue: benchmarks). Operators that sleep
use no CPU, so dozens of simulated GPU workers fit on 2 cores and the makespan measures
scheduling quality and engine overhead. Every result sits next to the ideal lower bound for the
same run: max(total work / workers per stage, the longest parent's critical path).

usage: run.py ORCH_BINARY OUT_DIR [--quick]"""
import json, os, statistics, subprocess, sys, time

sys.path.insert(0, os.path.dirname(__file__))
import corpus as corpus_shape  # noqa: E402

ORCH, OUT = sys.argv[1], os.path.abspath(sys.argv[2])
QUICK = "--quick" in sys.argv
SCALE = 0.125 if QUICK else 1.0
os.makedirs(OUT, exist_ok=True)
results = {"quick": QUICK, "scale": SCALE, "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "experiments": {}, "headers": {}}


def write_corpus():
    rows = corpus_shape.corpus(SCALE)
    path = os.path.join(OUT, "corpus.jsonl")
    with open(path, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    return path, rows


CORPUS, ROWS = write_corpus()
PARENTS, CHILDREN = len(ROWS), sum(r["n"] for r in ROWS)


def run(name, program, flags):
    """Runs a pipeline; returns its metrics (and the wall time measured outside)."""
    path = os.path.join(OUT, name + ".orch")
    with open(path, "w") as f:
        f.write(program.replace("CORPUS", CORPUS).replace("OUTPUT", os.path.join(OUT, name + ".jsonl")))
    metrics = os.path.join(OUT, name + ".metrics.json")
    started = time.time()
    subprocess.run([ORCH, "run", path, "--quiet", "--metrics", metrics,
                    "--errors", os.path.join(OUT, name + ".errors.jsonl")] + flags,
                   cwd=OUT, check=False, stderr=subprocess.DEVNULL)
    m = json.load(open(metrics))
    m["outside_wall"] = time.time() - started
    return m


def latencies(m):
    rows = [r for r in m["source_rows"] if r["finished"] >= 0]
    return sorted(r["finished"] - r["admitted"] for r in rows)


def call(m, name):
    return next(c for c in m["calls"] if c["name"] == name)


def table(key, title, header, rows, note):
    """Prints a table and keeps it (rows and header) in results.json under `key`."""
    results["experiments"][key] = rows
    results["headers"][key] = header
    lines = [f"### {title}", "", note, "", "| " + " | ".join(header) + " |",
             "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    text = "\n".join(lines) + "\n"
    print(text, flush=True)
    return text


def batch_work(counts, per_batch, per_row, size):
    """Sleep of a stage with `size`-grain batches mixing parents: full batches except the last."""
    total = sum(counts)
    batches = -(-total // size)
    return batches * per_batch + total * per_row


MACHINE = (f"{os.cpu_count()} cores, "
           f"{os.sysconf('SC_PHYS_PAGES') * os.sysconf('SC_PAGE_SIZE') / 2**30:.0f} GiB")
results["machine"] = MACHINE
report = [f"Machine: {MACHINE}. Date: {results['date'][:10]}. Command: `bench/experiments/run.py "
          f"build/bin/orch OUT_DIR{' --quick' if QUICK else ''}` (`make bench`).\n",
          f"Workload: {PARENTS} parents, {CHILDREN} children"
          + (" (--quick: 1/8 of the corpus)" if QUICK else " (the full MinerU corpus shape)") + ".\n"]

# --- 1. Engine overhead -------------------------------------------------------------------
ENGINE = """pipeline engine_overhead;
source rows = jsonl("CORPUS") as Doc;
pages = expand(test.split(rows, field: "n") { batch: 64 }) as Page;
done = test.identity(pages) { batch: 64, replicas: 2 };
sink jsonl(path: "OUTPUT", record: { id: rows.id, pages: list.len(reduce(done)) });
"""
rows = []
for label, flags in [("in-process, 2 threads", ["--in-process", "--threads", "2"]),
                     ("ZeroMQ, 2 worker processes", ["--workers", "2"])]:
    # A run takes a fraction of a second, which this machine moves by 20 % from one run to
    # the next: the median of 5.
    runs = sorted((run("engine_" + flags[0].strip("-"), ENGINE, flags) for _ in range(5)),
                  key=lambda m: m["wall_seconds"])
    m = runs[len(runs) // 2]
    grains = sum(c["grains"] for c in m["calls"])
    rows.append([label, grains, f"{m['wall_seconds']:.2f}", f"{grains / m['wall_seconds']:,.0f}",
                 f"{1e6 * m['wall_seconds'] / grains:.2f}"])
report.append(table("engine_overhead", "1. Engine overhead", ["executor", "grains", "wall (s)", "grains/s", "µs per grain"],
                    rows, "split → identity (batch 64) → reduce → list.len per parent; zero-cost "
                    "operators, so the time is the runtime's own (the ideal is 0); the median of 5 runs."))

# --- 2. The reference's weak spot ---------------------------------------------------------
# Exactly the paper's shape: a 10 ms per-page kernel, batches of 64, 32 workers, every page of
# the corpus (the reference took 431.8 s where the ideal is about 54.6 s).
KERNEL_MS, WORKERS = 10.0, 32
WEAK = f"""pipeline weak_spot;
source rows = jsonl("CORPUS") as Doc;
pages = expand(test.split(rows, field: "n") {{ batch: 64 }}) as Page;
done = test.sleep(pages, ms: {KERNEL_MS}) {{ batch: 64, replicas: {WORKERS} }};
sink jsonl(path: "OUTPUT", record: {{ id: rows.id, pages: list.len(reduce(done)) }});
"""
work = CHILDREN * KERNEL_MS / 1000
ideal = work / WORKERS
# Whole batches cannot be split between workers: the last round of batches may run part-full.
batches = -(-CHILDREN // 64)
whole_batch_bound = -(-batches // WORKERS) * 64 * KERNEL_MS / 1000
rows = []
for label, name, flags in [("in-process, 32 replica threads", "weak_spot",
                            ["--in-process", "--threads", str(WORKERS + 2)]),
                           ("ZeroMQ, 32 worker processes", "weak_spot_workers",
                            ["--workers", str(WORKERS)])]:
    m = run(name, WEAK, flags)
    rows.append([label, f"{work:.1f}", f"{ideal:.2f}", f"{whole_batch_bound:.2f}", f"{m['wall_seconds']:.2f}",
                 f"{m['wall_seconds'] / ideal:.3f}", f"{100 * call(m, 'done')['mean_fill']:.0f}%"])
report.append(table("weak_spot", "2. The reference's weak spot", ["executor", "kernel work (s)", "ideal (s)",
                    "whole-batch bound (s)", "makespan (s)", "makespan / ideal", "batch fill"], rows,
                    f"The paper's shape: a {KERNEL_MS:.0f} ms per-page kernel in batches of 64 on "
                    f"{WORKERS} workers over every page (the reference took 431.8 s against an ideal "
                    f"of about 54.6 s, 7.9×; Ray Data 106.3 s). Ideal = pages × {KERNEL_MS:.0f} ms / "
                    f"{WORKERS}; the whole-batch bound counts the last round of batches as full."))

# --- 3/4/5. MinerU-shaped pipeline --------------------------------------------------------
RENDER_MS, OCR_BATCH_MS, OCR_MS, ASSEMBLE_MS, UPLOAD_MS = 2.0, 20.0, 2.0, 5.0, 5.0


def mineru(render_workers, ocr_workers, render_ms=RENDER_MS, post_workers=4):
    return f"""pipeline mineru;
source rows = jsonl("CORPUS") as Doc;
pages = expand(test.split(rows, field: "n") {{ batch: 16 }}) as Page;
images = test.sleep(pages, ms: {render_ms}) {{ batch: 4, replicas: {render_workers} }};
texts = test.sleep(images, ms: {OCR_MS}, per_batch_ms: {OCR_BATCH_MS}) {{ batch: 64, replicas: {ocr_workers} }};
markdown = test.sleep(reduce(texts), ms: {ASSEMBLE_MS}) {{ replicas: {post_workers} }};
uploaded = test.sleep(markdown, ms: {UPLOAD_MS}) {{ replicas: {post_workers} }};
sink jsonl(path: "OUTPUT", record: {{ id: rows.id, pages: list.len(uploaded) }});
"""


def mineru_ideal(render_workers, ocr_workers, render_ms=RENDER_MS, post_workers=4):
    counts = [r["n"] for r in ROWS]
    stages = [sum(counts) * render_ms / render_workers,
              batch_work(counts, OCR_BATCH_MS, OCR_MS, 64) / ocr_workers,
              PARENTS * ASSEMBLE_MS / post_workers, PARENTS * UPLOAD_MS / post_workers]
    critical = render_ms * 4 + OCR_BATCH_MS + 64 * OCR_MS + ASSEMBLE_MS + UPLOAD_MS
    return max(max(stages), critical) / 1000


def mineru_row(label, m, ideal):
    lat = latencies(m)
    return [label, f"{m['wall_seconds']:.2f}", f"{ideal:.2f}", f"{m['wall_seconds'] / ideal:.2f}",
            f"{m['row_finish_seconds']['first']:.2f}", f"{statistics.median(lat):.2f}",
            f"{100 * call(m, 'texts')['mean_fill']:.0f}%"]


HEADER = ["policy", "makespan (s)", "ideal (s)", "/ ideal", "first parent done (s)",
          "median parent latency (s)", "OCR batch fill"]
ideal = mineru_ideal(8, 16)
policies = [("lineage, FIFO, cross-parent (default)", []),
            ("global barrier (flat-record baseline)", ["--gather", "barrier"]),
            ("parent-bound batching", ["--batching", "parent-bound"])]
rows, by_policy = [], {}
for label, flags in policies:
    m = run("mineru_" + (flags[1] if flags else "default").replace("-", "_"), mineru(8, 16),
            ["--in-process", "--threads", "40"] + flags)
    by_policy[label] = m
    rows.append(mineru_row(label, m, ideal))
report.append(table("policies", "3. Lineage vs flat barrier vs parent-bound", HEADER, rows,
                    f"render {RENDER_MS} ms/page (8 workers, batch 4) → OCR {OCR_BATCH_MS} ms + "
                    f"{OCR_MS} ms/page (16 workers, batch 64) → reduce → assemble {ASSEMBLE_MS} ms "
                    f"→ upload {UPLOAD_MS} ms (4 workers each). Paper: cross-parent batching 1.40× "
                    f"over parent-bound; flat baselines show a regroup tail."))

# --- 3a. Cross-parent vs parent-bound batching where OCR is the bottleneck ------------------
# Many small documents (the MinerU 160-PDF subset: {9,12,14,16,19,27,34,53} pages x 16 PDFs and
# 20 pages x 32; mean 22.4), a cheap render and an OCR stage whose batch has a fixed cost, as a
# VLM's forward pass does: a parent-bound batch holds at most one document's pages.
SMALL_PAGES = [p for p in (9, 12, 14, 16, 19, 27, 34, 53) for _ in range(16)] + [20] * 32
SMALL_COPIES = max(2, round(10 * SCALE))
SMALL_OCR_BATCH_MS, SMALL_OCR_MS = 40.0, 2.0
small_path = os.path.join(OUT, "small_documents.jsonl")
with open(small_path, "w") as f:
    for i, n in enumerate(SMALL_PAGES * SMALL_COPIES):
        f.write(json.dumps({"id": i, "n": n}) + "\n")
SMALL = f"""pipeline ocr_bound;
source rows = jsonl("{small_path}") as Doc;
pages = expand(test.split(rows, field: "n") {{ batch: 16 }}) as Page;
images = test.sleep(pages, ms: 0.5) {{ batch: 4, replicas: 8 }};
texts = test.sleep(images, ms: {SMALL_OCR_MS}, per_batch_ms: {SMALL_OCR_BATCH_MS}) {{ batch: 64, replicas: 16 }};
markdown = test.sleep(reduce(texts), ms: {ASSEMBLE_MS}) {{ replicas: 4 }};
sink jsonl(path: "OUTPUT", record: {{ id: rows.id, pages: list.len(markdown) }});
"""
small_counts = SMALL_PAGES * SMALL_COPIES
small_ideals = {"cross-parent": batch_work(small_counts, SMALL_OCR_BATCH_MS, SMALL_OCR_MS, 64) / 16000,
                "parent-bound": sum(batch_work([n], SMALL_OCR_BATCH_MS, SMALL_OCR_MS, 64)
                                    for n in small_counts) / 16000}
rows, walls = [], {}
for policy in ["cross-parent", "parent-bound"]:
    m = run("ocr_bound_" + policy.replace("-", "_"), SMALL,
            ["--in-process", "--threads", "32", "--batching", policy])
    walls[policy] = m["wall_seconds"]
    ocr = call(m, "texts")
    rows.append([policy, f"{m['wall_seconds']:.2f}", f"{small_ideals[policy]:.2f}",
                 f"{m['wall_seconds'] / small_ideals['cross-parent']:.2f}", ocr["batches"],
                 f"{100 * ocr['mean_fill']:.0f}%"])
speedup = walls["parent-bound"] / walls["cross-parent"]
results["ocr_bound_speedup"] = round(speedup, 3)
report.append(table("ocr_bound_batching", "3a. Cross-parent vs parent-bound batching, OCR-bound", [
    "batching", "makespan (s)", "OCR-stage ideal of this policy (s)", "/ cross-parent ideal",
    "OCR batches", "OCR batch fill"], rows,
    f"{len(small_counts)} documents, {sum(small_counts)} pages (the MinerU 160-PDF subset's page "
    f"counts, {SMALL_COPIES} copies); render 0.5 ms/page (8 workers) → OCR {SMALL_OCR_BATCH_MS:.0f} ms "
    f"per batch + {SMALL_OCR_MS:.0f} ms/page (16 workers, batch 64) → reduce → assemble "
    f"{ASSEMBLE_MS:.0f} ms. **Cross-parent batching is {speedup:.2f}× faster** (paper: 1.40×, "
    f"batch fill 91 % vs 30 %). The ratio follows from the batch cost: (a/fill_pb + b) / "
    f"(a/fill_cp + b) pages' time for a per-batch cost a and per-page cost b."))

# --- 3b. Lineage vs flat barrier at the paper's scale (64 OCR workers) ---------------------
rows, walls = [], {}
for label, flags in [("lineage (default)", []), ("global barrier (flat-record baseline)",
                                                 ["--gather", "barrier"])]:
    m = run("paper_scale_" + ("barrier" if flags else "lineage"),
            mineru(32, 64, render_ms=0.5, post_workers=16), ["--in-process", "--threads", "124"] + flags)
    names = [c["name"] for c in m["calls"]]
    finished = [b["finished"] for b in m["batches"] if b["call"] == names.index("texts")]
    assembled = [b["dispatched"] for b in m["batches"] if b["call"] == names.index("markdown")]
    walls[label] = m["wall_seconds"]
    rows.append([label, f"{m['wall_seconds']:.2f}", f"{max(finished):.2f}",
                 f"{min(assembled) - max(finished):+.2f}", f"{m['wall_seconds'] - max(finished):.2f}",
                 f"{m['row_finish_seconds']['first']:.2f}"])
cut = 1 - walls["lineage (default)"] / walls["global barrier (flat-record baseline)"]
results["paper_scale_barrier_cut"] = round(cut, 4)
report.append(table("paper_scale_barrier", "3b. Lineage vs flat barrier at 64 OCR workers", [
    "gather", "makespan (s)", "last OCR batch done (s)", "first assemble after last OCR (s)",
    "tail after OCR (s)", "first parent done (s)"], rows,
    f"The paper's configuration for its end-to-end comparison: MinerU at 64 GPUs (OCR workers), "
    f"render 0.5 ms/page (32 workers), assemble and upload {ASSEMBLE_MS:.0f} ms each (16 workers "
    f"each). **Lineage cuts the makespan by {100 * cut:.1f} %** (paper: 13.1 % vs Ray Data, "
    f"29.0 % vs Daft; Daft's first assemble came 34.7 s after the last OCR, a 119 s regroup tail)."))

m = run("mineru_unordered", mineru(8, 16), ["--in-process", "--threads", "40", "--ready-order", "unordered"])
rows = [mineru_row("FIFO ready queues", by_policy[policies[0][0]], ideal),
        mineru_row("unordered ready set", m, ideal)]
report.append(table("fifo_vs_unordered", "4. FIFO vs unordered ready queues", HEADER, rows,
                    "The same workload; the paper measured 634.1 s → 579.3 s (−8.6 %) for FIFO."))

rows, base = [], None
for workers in [4, 8, 16, 32, 64]:
    m = run(f"scaling_{workers}", mineru(max(2, workers // 2), workers, render_ms=0.5),
            ["--in-process", "--threads", str(workers + workers // 2 + 12)])
    base = base or (workers, m["wall_seconds"])
    speedup = base[1] / m["wall_seconds"]
    ideal_w = mineru_ideal(max(2, workers // 2), workers, render_ms=0.5)
    rows.append([workers, f"{m['wall_seconds']:.2f}", f"{ideal_w:.2f}", f"{speedup:.2f}×",
                 f"{100 * speedup / (workers / base[0]):.0f}%"])
report.append(table("scaling", "5. Strong scaling", ["OCR workers", "makespan (s)", "ideal (s)", "speedup vs 4",
                    "efficiency"], rows,
                    "OCR workers from 4 to 64 (render workers = half, render 0.5 ms/page). Paper: "
                    "15.14× from 4 to 64 GPUs (94.6 % of linear) on MinerU."))

# --- 6. Failure containment ---------------------------------------------------------------
FAIL = f"""pipeline containment;
source rows = jsonl("CORPUS") as Doc;
pages = expand(test.split(rows, field: "n") {{ batch: 16 }}) as Page;
images = test.sleep(pages, ms: {RENDER_MS}) {{ batch: 4, replicas: 8 }};
texts = test.fail({{ page: images, poison: broadcast(rows.poison, pages) }}, kind: "group", ordinals: "0", when: "WHEN", ms: {OCR_MS}, per_batch_ms: {OCR_BATCH_MS}) {{ batch: 64, replicas: 16 }};
sink jsonl(path: "OUTPUT", record: {{ id: rows.id, pages: list.len(reduce(texts)) }});
"""
poisoned = [r for r in ROWS if r["poison"]]
siblings = sum(r["n"] - 1 for r in poisoned)
rows = []
largest = f"{len(poisoned)} largest poisoned"
counts = [r["n"] for r in ROWS]
containment_ideal = max(sum(counts) * RENDER_MS / 8,
                        batch_work(counts, OCR_BATCH_MS, OCR_MS, 64) / 16) / 1000
for name, label, when, flags in [("clean", "failure-free", "never", []),
                                 ("poisoned", largest + " (FIFO)", "poison", []),
                                 ("poisoned_probe", largest + ", --probe-first", "poison", ["--probe-first"]),
                                 ("clean_probe", "failure-free, --probe-first", "never", ["--probe-first"])]:
    m = run("containment_" + name,
            FAIL.replace("WHEN", when), ["--in-process", "--threads", "40"] + flags)
    ocr = call(m, "texts")
    never_ran = CHILDREN - ocr["grains"] if when == "poison" else 0
    # Siblings sealed by the barrier or cancelled when their parent finished early, less those
    # that never ran: the ones whose reports came back and were thrown away.
    discarded = ocr["suppressed_by_barrier"] + ocr["cancelled"] - never_ran if when == "poison" else 0
    rows.append([label, f"{m['wall_seconds']:.2f}", f"{containment_ideal:.2f}",
                 f"{never_ran} ({100 * never_ran / siblings:.1f}%)" if when == "poison" else "-",
                 max(0, discarded) if when == "poison" else "-", m["rows"]["failed"]])
report.append(table("containment", "6. Failure containment", ["run", "makespan (s)", "ideal without failures (s)",
                    "poisoned siblings never run",
                    "in-flight reports discarded", "failed parents"], rows,
                    f"Child 0 of each of the {len(poisoned)} largest parents fails with a GroupFailure "
                    f"in the OCR stage ({siblings} siblings). Reference: 26.5 % never ran, −14.93 % "
                    f"wall time; Ray Data and Daft suppress 0."))

# --- 7. A real peer: Dask -----------------------------------------------------------------
DASK_WORKERS = 4
peer = subprocess.run(["/usr/bin/python3", os.path.join(os.path.dirname(__file__), "dask_peer.py"),
                       CORPUS, str(DASK_WORKERS), str(OCR_BATCH_MS), str(OCR_MS),
                       os.path.join(OUT, "dask.jsonl")], capture_output=True, text=True)
dask = json.loads(peer.stdout.strip().splitlines()[-1]) if peer.returncode == 0 else None
PEER = f"""pipeline peer;
source rows = jsonl("CORPUS") as Doc;
pages = expand(test.split(rows, field: "n") {{ batch: 64 }}) as Page;
texts = test.sleep(pages, ms: {OCR_MS}, per_batch_ms: {OCR_BATCH_MS}) {{ batch: 64, replicas: {DASK_WORKERS} }};
sink jsonl(path: "OUTPUT", record: {{ id: rows.id, pages: reduce(texts) }});
"""
m = run("peer_orch", PEER, ["--workers", str(DASK_WORKERS)])
orch_rows = {r["id"]: r["pages"] for r in map(json.loads, open(os.path.join(OUT, "peer_orch.jsonl")))}
same = dask is not None and {int(k): v for k, v in json.load(open(os.path.join(OUT, "dask.jsonl"))).items()} == orch_rows
ideal = batch_work([r["n"] for r in ROWS], OCR_BATCH_MS, OCR_MS, 64) / 1000 / DASK_WORKERS
rows = [["Orch (4 worker processes)", f"{m['wall_seconds']:.2f}", f"{ideal:.2f}",
         f"{m['row_finish_seconds']['first']:.2f}", "yes" if same else "NO"],
        ["Dask (4 worker processes: bag flat-map, batched map, groupby)",
         f"{dask['wall_seconds']:.2f}" if dask else "failed: " + peer.stderr[-200:], f"{ideal:.2f}",
         f"{dask['wall_seconds']:.2f}" if dask else "-", "yes" if same else "NO"]]
results["dask_outputs_match"] = same
report.append(table("dask_peer", "7. A real peer on this machine: Dask", ["system", "makespan (s)", "ideal (s)",
                    "first parent done (s)", "same outputs"], rows,
                    f"Per-page kernel {OCR_MS} ms + {OCR_BATCH_MS} ms per batch of 64, {DASK_WORKERS} "
                    f"workers each; every parent's page list compared. Dask writes nothing before its "
                    f"groupby, so its first parent is done at the end."))

with open(os.path.join(OUT, "results.json"), "w") as f:
    json.dump(results, f, indent=1)
with open(os.path.join(OUT, "results.md"), "w") as f:
    f.write("\n".join(report))
sys.exit(0 if same else 1)
