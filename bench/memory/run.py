"""What the byte budget (`orch run --value-budget`, docs/runtime.md) holds on real data, with the
peak memory of all the processes of the run (the coordinator and its workers, from /proc): the
sum of their resident sets (RSS, which counts the pages of shared libraries once per process;
sampled every 20 ms) and of their proportional sets (PSS, which shares them out; every 100 ms):

  1. pdf.render at 300 dpi -> an OCR-like consumer (test.checksum sleeping per page, slower than
     the render) over the longest real PDF at hand, pgfmanual.pdf (1,321 pages, from Debian's
     texlive-pictures-doc): with --value-budget 2GiB and without a limit, with value locality
     (the pages stay on the worker that rendered them) and without (--keep-values-over off:
     every page goes through the coordinator); the bytes through the coordinator per page.
  2. 1 parent -> 1,000,000 and 10,000,000 children through one Call, in process and with 2
     worker processes (an expansion made a step at a time; its list crosses between processes
     in chunks).

usage: run.py ORCH OUT_DIR   (environment: ORCH_BENCH_CACHE, default ~/.cache/orch-bench;
ORCH_MEMORY_PARTS: "render,children" (the default), or either one)"""
import datetime, json, os, subprocess, sys, threading, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "real"))
from texlive import texlive_pdfs  # noqa: E402

ORCH, OUT = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
CACHE = os.environ.get("ORCH_BENCH_CACHE", os.path.expanduser("~/.cache/orch-bench"))
os.makedirs(OUT, exist_ok=True)
MiB = 1 << 20


def tree_memory(root, proportional):
    """(RSS, PSS) bytes of `root` and its descendants now; PSS only when `proportional` (reading
    it walks every page table, too costly to do every 20 ms on 2 cores), else 0."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = open(f"/proc/{entry}/stat").read().rsplit(")", 1)[1].split()
                children.setdefault(int(fields[1]), []).append(int(entry))
            except OSError:
                pass
    rss, pss, pending = 0, 0, [root]
    while pending:
        pid = pending.pop()
        pending += children.get(pid, [])
        try:
            for line in open(f"/proc/{pid}/smaps_rollup" if proportional else f"/proc/{pid}/status"):
                if line.startswith("Rss:") or line.startswith("VmRSS:"):
                    rss += int(line.split()[1]) * 1024
                elif line.startswith("Pss:"):
                    pss += int(line.split()[1]) * 1024
        except OSError:
            pass
    return rss, pss


def run(name, program, flags):
    """Runs a pipeline; returns (wall seconds, peak RSS and peak PSS of its process tree, metrics)."""
    path = os.path.join(OUT, name + ".orch")
    with open(path, "w") as f:
        f.write(program)
    metrics = os.path.join(OUT, name + ".metrics.json")
    start = time.monotonic()
    process = subprocess.Popen([ORCH, "run", path, "--quiet", "--no-journal", "--metrics", metrics] + flags,
                               cwd=OUT, stderr=subprocess.DEVNULL)
    peak = [0, 0]

    def sample():
        tick = 0
        while process.poll() is None:
            rss, pss = tree_memory(process.pid, proportional=tick % 5 == 0)
            peak[0], peak[1] = max(peak[0], rss), max(peak[1], pss)
            tick += 1
            time.sleep(0.02)

    sampler = threading.Thread(target=sample)
    sampler.start()
    process.wait()
    sampler.join()
    wall = time.monotonic() - start
    print(f"  {name}: {wall:.1f} s, peak RSS {peak[0] / MiB:.0f} MiB, PSS {peak[1] / MiB:.0f} MiB",
          file=sys.stderr, flush=True)
    return wall, peak[0], peak[1], json.load(open(metrics))


report = [f"Machine: {os.cpu_count()} cores, {os.sysconf('SC_PHYS_PAGES') * os.sysconf('SC_PAGE_SIZE') / 2**30:.0f} GiB. "
          f"Date: {datetime.date.today().isoformat()}. Command: `bench/memory/run.sh`.\n"]
results = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "experiments": {}, "headers": {}}

PARTS = os.environ.get("ORCH_MEMORY_PARTS", "render,children").split(",")
same = True

# --- 1. Render at 300 dpi, an OCR-like consumer ----------------------------------------------
if "render" in PARTS:
    manual = next(p for p in texlive_pdfs(CACHE) if p.endswith("_pgf_pgfmanual.pdf"))
    RENDER = f"""pipeline render_ocr;
    source docs = files("{manual}") as Doc;
    pages = expand(pdf.pages(docs)) as Page;
    images = pdf.render(pages, dpi: 300) {{ replicas: 2 }};
    texts = test.checksum(images, ms: 250) {{ replicas: 2 }};
    sink jsonl(path: "OUTPUT", record: {{ path: docs.path, pages: reduce(texts) }});
    """
    header = ["run", "makespan (s)", "peak RSS, all processes", "peak PSS, all processes", "peak bytes held",
              "render held back (s)", "pages", "through the coordinator per page"]
    rows, outputs, through = [], {}, {}
    for label, name, flags in [("--value-budget 2GiB", "render_budget", ["--value-budget", "2GiB"]),
                               ("no limit", "render_unbounded", ["--value-budget", "0"]),
                               ("--value-budget 2GiB --keep-values-over off", "render_budget_inline",
                                ["--value-budget", "2GiB", "--keep-values-over", "off"])]:
        wall, rss, pss, m = run(name, RENDER.replace("OUTPUT", os.path.join(OUT, name + ".jsonl")),
                                ["--workers", "2"] + flags)
        render = next(c for c in m["calls"] if c["name"] == "images")
        outputs[name] = open(os.path.join(OUT, name + ".jsonl")).read()
        counters = m.get("executor_counters", {})
        through[name] = (counters.get("batch_bytes_sent", 0) + counters.get("result_bytes_received", 0)) / render["grains"]
        rows.append([label, f"{wall:.1f}", f"{rss / MiB:,.0f} MiB", f"{pss / MiB:,.0f} MiB",
                     f"{m['values_held']['peak_bytes'] / MiB:,.0f} MiB",
                     f"{render.get('held_back_seconds', 0):.1f}", render["grains"],
                     f"{through[name] / 1024:,.1f} KiB"])
    same = outputs["render_budget"] == outputs["render_unbounded"] == outputs["render_budget_inline"]
    ratio = float(rows[0][1]) / float(rows[1][1])
    locality = through["render_budget_inline"] / max(through["render_budget"], 1)
    results["locality_bytes_ratio"] = locality
    results["experiments"]["render_ocr"] = rows
    results["headers"]["render_ocr"] = header
    results["render_ocr_same_outputs"] = same
    report.append("### 1. Render at 300 dpi, an OCR-like consumer\n\n"
                  f"pgfmanual.pdf, {rows[0][6]} pages rendered at 300 dpi (2 replicas; about 25 MB per page) and "
                  "read by an OCR-like consumer (test.checksum sleeping 250 ms per page, 2 replicas: "
                  "slower than the render); 2 worker processes. Same outputs: "
                  f"{'yes' if same else 'NO'}; makespan with the budget / without: {ratio:.2f}; bytes through "
                  f"the coordinator per page without value locality / with: {locality:,.0f}x.\n\n"
                  "| " + " | ".join(header) + " |\n|" + "---|" * len(header) + "\n" +
                  "\n".join("| " + " | ".join(str(c) for c in r) + " |" for r in rows) + "\n")

# --- 2. One parent, millions of children -----------------------------------------------------
CHILDREN = """pipeline million;
source docs = jsonl("{input}") as Doc;
pages = expand(test.split(docs, field: "n")) as Page;
done = test.identity(pages) {{ batch: 256 }};
sink jsonl(path: "{output}", record: {{ id: docs.id, pages: len(reduce(done)) }});
"""
header = ["children", "executor", "wall (s)", "peak RSS, all processes", "peak PSS, all processes",
          "children written"]
rows = []
for count in ([1_000_000, 10_000_000] if "children" in PARTS else []):
    source = os.path.join(OUT, f"children_{count}.jsonl")
    with open(source, "w") as f:
        f.write(f'{{"id": 1, "n": {count}}}\n')
    for label, name, flags in [("in process", "in_process", ["--in-process", "--threads", "2"]),
                               ("2 worker processes", "workers", ["--workers", "2"])]:
        output = os.path.join(OUT, f"children_{count}_{name}.jsonl")
        wall, rss, pss, m = run(f"children_{count}_{name}",
                                CHILDREN.format(input=source, output=output), flags)
        written = json.loads(open(output).read())["pages"]
        same = same and written == count
        rows.append([f"{count:,}", label, f"{wall:.2f}", f"{rss / MiB:,.0f} MiB",
                     f"{pss / MiB:,.0f} MiB", f"{written:,}"])
if rows:
    results["experiments"]["million_children"] = rows
    results["headers"]["million_children"] = header
    report.append("### 2. One parent, millions of children\n\n"
                  "test.split into 1,000,000 and 10,000,000 children, test.identity in batches of "
                  "256, reduce, list length (targets: at most 300 MB = 286 MiB for a million, "
                  "2.5 GiB for ten million, all processes).\n\n"
                  "| " + " | ".join(header) + " |\n|" + "---|" * len(header) + "\n" +
                  "\n".join("| " + " | ".join(str(c) for c in r) + " |" for r in rows) + "\n")

text = "\n".join(report)
print(text)
with open(os.path.join(OUT, "results.md"), "w") as f:
    f.write(text)
with open(os.path.join(OUT, "results.json"), "w") as f:
    json.dump(results, f, indent=1)
sys.exit(0 if same else 1)
