"""Plain programs, side by side in one run (bench/plain/run.sh): what a Call gets without options
(automatic replicas, docs/runtime.md) against hand-tuned options and against the tools a user
would reach for without Orch. Each comparison checks that the outputs are the same.

1. render -> PyTorch scorer over the bundled PDFs (copied to make a corpus): no options, hand
   tuned (`replicas`, `batch`), and `xargs -P2 pdftoppm` then a plain Python loop over the pages.
2. examples/pdf_to_markdown.orch as written, and with every `{ ... }` option block removed.
3. Two workers (`orch worker`, a cluster on this host) joined 8 s apart, and both from the start
   (with a consumer cheaper than the render, the issue's shape, and with a dearer one): batches
   per worker after the join, and the page images fetched from another worker.
4. Stragglers: a simulated corpus with the page counts of Debian's texlive-pictures-doc (each page
   a 10 ms test.sleep, no CPU) on 16 and 64 simulated workers: Orch's page-level schedule against
   a file-level one (what `xargs -P` does: one file per worker), in list order and worst-case
   order (the longest file last), computed by list scheduling the same page times.

Usage: run.py ORCH WORK [--quick] [--only=render_score|markdown|late_join|stragglers]"""
import glob, json, os, re, shutil, statistics, subprocess, sys, time

ORCH, WORK = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
QUICK = "--quick" in sys.argv
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYTHON = "/usr/bin/python3"
SAMPLES = os.path.join(REPO, "examples", "samples", "pdfs")
SCORER = os.path.join(REPO, "bench", "plain", "scorer.py")
ROUNDS = 1 if QUICK else 3
DPI = 150


def corpus(copies):
    """The bundled good PDFs, `copies` times: a directory of PDFs."""
    folder = os.path.join(WORK, f"corpus-{copies}")
    if not os.path.isdir(folder):
        os.makedirs(folder)
        for copy in range(copies):
            for pdf in sorted(glob.glob(os.path.join(SAMPLES, "*.pdf"))):
                name = os.path.basename(pdf)
                if name != "broken.pdf":
                    shutil.copy(pdf, os.path.join(folder, f"c{copy:02d}-{name}"))
    return folder


def run_orch(program, name, *flags):
    """Runs `program` (text) as NAME.orch in WORK; wall seconds and its metrics."""
    path = os.path.join(WORK, name + ".orch")
    with open(path, "w") as out:
        out.write(program)
    shutil.rmtree(os.path.join(WORK, "out", name), ignore_errors=True)
    start = time.monotonic()
    subprocess.run([ORCH, "run", path, "--quiet", "--no-journal", "--metrics",
                    os.path.join(WORK, name + ".json"), *flags], check=True, cwd=WORK,
                   stderr=subprocess.DEVNULL)
    seconds = time.monotonic() - start
    return seconds, json.load(open(os.path.join(WORK, name + ".json")))


def score_program(name, folder, render_options="", score_options=""):
    return f"""pipeline {name};
operator page.score(image: Image, const seed: Int = 0) -> Float
    = python("{SCORER}", class: "PageScorer");
source docs = files("{folder}/*.pdf") as Doc;
pages = expand(pdf.pages(docs)) as Page;
scores = page.score(pdf.render(pages, dpi: {DPI}) {render_options}) {score_options};
sink jsonl(path: "out/{name}/scores.jsonl", record: {{ path: docs.path, scores: reduce(scores) }});
"""


def rows(name):
    with open(os.path.join(WORK, "out", name, "scores.jsonl")) as lines:
        return {row["path"]: row["scores"] for row in map(json.loads, lines)}


def baseline(folder):
    """xargs -P2 pdftoppm, then the scorer in a plain Python loop; wall seconds and the rows."""
    images = os.path.join(WORK, "ppm")
    shutil.rmtree(images, ignore_errors=True)
    os.makedirs(images)
    pdfs = sorted(glob.glob(os.path.join(folder, "*.pdf")))
    start = time.monotonic()
    subprocess.run(["xargs", "-P2", "-I{}", "sh", "-c",
                    f'pdftoppm -r {DPI} "$1" "{images}/$(basename "$1" .pdf)"', "_", "{}"],
                   input="\n".join(pdfs).encode(), check=True)
    loop = subprocess.run([PYTHON, "-c", f"""
import glob, json, os, sys, numpy
sys.path.insert(0, {os.path.dirname(SCORER)!r})
from scorer import PageScorer
scorer = PageScorer()
def ppm(path):
    data = open(path, "rb").read()
    fields, at = [], 0
    while len(fields) < 4:
        while data[at:at + 1].isspace():
            at += 1
        end = at
        while not data[end:end + 1].isspace():
            end += 1
        fields.append(data[at:end]); at = end
    width, height = int(fields[1]), int(fields[2])
    return numpy.frombuffer(data, numpy.uint8, width * height * 3, at + 1).reshape(height, width, 3)
out = {{}}
for pdf in json.loads(sys.argv[1]):
    stem = os.path.basename(pdf)[:-4]
    pages = sorted(glob.glob(os.path.join({images!r}, stem + "-*.ppm")),
                   key=lambda p: int(p.rsplit("-", 1)[1][:-4]))
    out[pdf] = scorer([ppm(page) for page in pages])
print(json.dumps(out))
""", json.dumps(pdfs)], check=True, capture_output=True, text=True)
    return time.monotonic() - start, json.loads(loop.stdout)


def median_runs(variants):
    """variants: name -> callable returning seconds; ROUNDS rounds, interleaved; the medians."""
    times = {name: [] for name in variants}
    for _ in range(ROUNDS):
        for name, run in variants.items():
            times[name].append(run())
    return {name: statistics.median(values) for name, values in times.items()}


def render_and_score():
    print("## 1. render -> PyTorch scorer")
    folder = corpus(2 if QUICK else 4)
    plain = score_program("plain", folder)
    tuned = score_program("tuned", folder, "{ replicas: 2 }", "{ batch: 16, replicas: 1 }")
    details = {}

    def orch(name, program):
        def go():
            seconds, metrics = run_orch(program, name)
            details[name] = metrics
            return seconds
        return go

    baseline_rows = {}

    def loop():
        seconds, result = baseline(folder)
        baseline_rows.update(result)
        return seconds

    medians = median_runs({"plain": orch("plain", plain), "tuned": orch("tuned", tuned),
                           "pdftoppm + loop": loop})
    if rows("plain") != rows("tuned") or rows("plain") != baseline_rows:
        sys.exit("render -> scorer: plain, tuned and the baseline wrote different scores")
    pages = sum(len(scores) for scores in baseline_rows.values())
    for name, seconds in medians.items():
        print(f"{name}: {seconds:.2f} s")
    for call in details["plain"]["calls"]:
        changes = "; ".join(f"{c['at']:.1f} s -> {c['replicas']}" for c in call["replica_changes"])
        print(f"  plain {call['name']}: {call['replicas']} replica(s) at most"
              f"{' (' + changes + ')' if changes else ''}, busy {100 * call['busy_share']:.0f} %")
    print(f"{pages} pages; plain / tuned = {medians['plain'] / medians['tuned']:.2f}, "
          f"plain / (pdftoppm -P2 + loop) = {medians['plain'] / medians['pdftoppm + loop']:.2f}")
    return {"pages": pages, "seconds": medians}


def markdown_without_options():
    print("## 2. pdf_to_markdown: as written, and with its options removed")
    source = open(os.path.join(REPO, "examples", "pdf_to_markdown.orch")).read()
    bare = re.sub(r"\s*\{[^{}]*\b(batch|replicas|retries|recovery|timeout|cpus)\b[^{}]*\}", "",
                  source)
    folder = os.path.join(WORK, "markdown")
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(os.path.join(REPO, "examples"), folder)
    outputs = {}

    def go(name, program):
        def run():
            path = os.path.join(folder, name + ".orch")
            open(path, "w").write(program)
            shutil.rmtree(os.path.join(folder, "out"), ignore_errors=True)
            start = time.monotonic()
            subprocess.run([ORCH, "run", path, "--quiet", "--no-journal"], cwd=folder,
                           stderr=subprocess.DEVNULL)
            seconds = time.monotonic() - start
            # (docs.jsonl's lines come in the order documents finish.)
            outputs[name] = {p: sorted(open(os.path.join(folder, "out", p)).read().split("\n"))
                             for p in sorted(os.listdir(os.path.join(folder, "out")))}
            return seconds
        return run

    medians = median_runs({"as written": go("written", source), "no options": go("bare", bare)})
    if outputs["written"] != outputs["bare"]:
        sys.exit("pdf_to_markdown: the program without options wrote different outputs")
    for name, seconds in medians.items():
        print(f"{name}: {seconds:.2f} s")
    print(f"no options / as written = {medians['no options'] / medians['as written']:.2f}")
    return {"seconds": medians}


def cluster(join_gap, consumer_ms=40):
    """Two workers on ipc, the second `join_gap` s after the first, a consumer of `consumer_ms`
    a page after the render: the metrics."""
    folder = corpus(4 if QUICK else 8)
    program = f"""pipeline joined;
source docs = files("{folder}/*.pdf") as Doc;
pages = expand(pdf.pages(docs)) as Page;
image = pdf.render(pages, dpi: {DPI});
sums = test.checksum(image, ms: {consumer_ms});
sink jsonl(path: "out/joined/sums.jsonl", record: {{ path: docs.path, sums: reduce(sums) }});
"""
    path = os.path.join(WORK, "joined.orch")
    open(path, "w").write(program)
    endpoint = f"ipc://{WORK}/cluster.sock"
    metrics = os.path.join(WORK, "joined.json")
    coordinator = subprocess.Popen([ORCH, "run", path, "--quiet", "--no-journal", "--listen",
                                    endpoint, "--metrics", metrics], cwd=WORK,
                                   stderr=subprocess.DEVNULL)
    workers = [subprocess.Popen([ORCH, "worker", "--connect", endpoint, "--name", "first"],
                                stderr=subprocess.DEVNULL)]
    time.sleep(join_gap)
    joined = time.monotonic()
    workers.append(subprocess.Popen([ORCH, "worker", "--connect", endpoint, "--name", "second"],
                                    stderr=subprocess.DEVNULL))
    coordinator.wait(timeout=600)
    for worker in workers:
        worker.terminate()
        worker.wait()
    data = json.load(open(metrics))
    second_joined = next(w["joined"] for w in data["workers"] if w["name"] == "second")
    after = {}
    for batch in data["batches"]:
        if batch["dispatched"] >= second_joined and batch["place"]:
            worker = batch["place"].split("/")[0]
            after[worker] = after.get(worker, 0) + 1
    pages = sum(c["grains"] for c in data["calls"] if c["op"] == "pdf.render")
    fetched = dict(data.get("executor_counters", {})).get("values_fetched_between_workers", 0)
    return after, pages, fetched, data, time.monotonic() - joined


def late_join():
    print("## 3. two workers on one host: joined 8 s apart, and both from the start")
    after, pages, fetched, data, _ = cluster(8)
    ratio = max(after.values()) / max(1, min(after.values())) if len(after) == 2 else float("inf")
    print(f"joined 8 s apart: batches per worker after the join {after} (ratio {ratio:.2f}); "
          f"{fetched} of {pages} page images fetched by another worker ({100 * fetched / pages:.0f} %)")
    for call in data["calls"]:
        for change in call["replica_changes"]:
            print(f"  {call['name']}: {change['at']:.1f} s -> {change['replicas']}: {change['why']}")
    # The shape: the render is the bottleneck (a cheap consumer); and the other one.
    fetched_together = {}
    for consumer_ms, shape in ((5, "render-bound"), (40, "consumer-bound")):
        _, pages0, fetched0, data0, _ = cluster(0, consumer_ms)
        fetched_together[shape] = fetched0 / pages0
        print(f"both from the start, {shape} ({consumer_ms} ms a page after the render): "
              f"{fetched0} of {pages0} page images fetched by another worker "
              f"({100 * fetched0 / pages0:.0f} %)")
        for call in data0["calls"]:
            for change in call["replica_changes"]:
                print(f"  {call['name']}: {change['at']:.1f} s -> {change['replicas']}: "
                      f"{change['why']}")
    return {"after_join": after, "ratio": ratio, "fetched_late": fetched / pages,
            "fetched_together": fetched_together}


def page_counts():
    """Pages per PDF of texlive-pictures-doc (downloaded once, counted once, cached)."""
    cache = os.environ.get("ORCH_BENCH_CACHE", os.path.expanduser("~/.cache/orch-bench"))
    counts = os.path.join(cache, "texlive-pictures-doc-pages.json")
    if not os.path.exists(counts):
        sys.path.insert(0, os.path.join(REPO, "bench", "real"))
        from texlive import texlive_pdfs
        pages = []
        for pdf in texlive_pdfs(cache):
            info = subprocess.run(["pdfinfo", pdf], capture_output=True, text=True).stdout
            found = re.search(r"^Pages:\s+(\d+)", info, re.M)
            if found:
                pages.append(int(found.group(1)))
        json.dump(pages, open(counts, "w"))
    return json.load(open(counts))


def file_level(pages, workers, ms):
    """List scheduling one file per worker in the given order: the makespan in seconds."""
    free = [0.0] * workers
    for count in pages:
        at = free.index(min(free))
        free[at] += count * ms / 1000
    return max(free)


def stragglers():
    print("## 4. stragglers: texlive-pictures-doc's page counts, 10 ms a page (test.sleep)")
    pages = page_counts()
    ms = 10
    rows_path = os.path.join(WORK, "docs.jsonl")
    with open(rows_path, "w") as out:
        for i, count in enumerate(pages):
            out.write(json.dumps({"id": i, "n": count}) + "\n")
    total = sum(pages)
    print(f"{len(pages)} files, {total} pages, the longest {max(pages)} "
          f"({max(pages) * ms / 1000:.1f} s alone)")
    result = {}
    for workers in (16, 64):
        timed = {}
        for variant, options in (("pinned", f"{{ replicas: {workers} }}"), ("automatic", "")):
            program = f"""pipeline tail;
source rows = jsonl("{rows_path}") as Doc;
pages = expand(test.split(rows, field: "n")) as Page;
slept = test.sleep(pages, ms: {ms}) {options};
sink jsonl(path: "out/tail/{variant}.jsonl", record: {{ id: rows.id, n: len(reduce(slept)) }});
"""
            timed[variant], _ = run_orch(program, f"tail-{variant}-{workers}", "--in-process",
                                         "--threads", str(workers))
        in_order = file_level(pages, workers, ms)
        worst = file_level(sorted(pages), workers, ms)
        ideal = total * ms / 1000 / workers
        print(f"{workers} workers: Orch page-level {timed['pinned']:.2f} s (replicas pinned), "
              f"{timed['automatic']:.2f} s (automatic); file-level {in_order:.2f} s in list "
              f"order, {worst:.2f} s longest last; ideal {ideal:.2f} s; file-level / Orch = "
              f"{in_order / timed['pinned']:.2f} (list order), {worst / timed['pinned']:.2f} "
              f"(worst case)")
        result[workers] = {"orch_pinned": timed["pinned"], "orch_automatic": timed["automatic"],
                           "file_level": in_order, "file_level_worst": worst, "ideal": ideal}
    return result


if __name__ == "__main__":
    os.makedirs(WORK, exist_ok=True)
    sections = {"render_score": render_and_score, "markdown": markdown_without_options,
                "late_join": late_join, "stragglers": stragglers}
    only = [a[len("--only="):] for a in sys.argv if a.startswith("--only=")]
    results = {name: run() for name, run in sections.items() if not only or name in only}
    json.dump(results, open(os.path.join(WORK, "results.json"), "w"), indent=1)
