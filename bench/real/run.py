"""Real operators on real data, side by side with the command lines a user would otherwise run,
in one invocation. Not part of `make test`: the first run downloads Debian's
texlive-pictures-doc (233 MB, kept in the cache directory).

  1. Text layer of every page of the package's PDFs: Orch (pdf.pages -> pdf.text, local worker
     processes) against `pdftotext` one file after another and under `xargs -P$(nproc)`.
  2. OCR of rendered pages (150 dpi): Orch (pdf.render -> ocr.tesseract) against
     `pdftoppm | tesseract` per page under `xargs -P$(nproc)`, both with OMP_THREAD_LIMIT=1.
  3. Video frames: bench/video/frames.sh (clips -> frames -> sharpness against ffmpeg).

Each table records the machine, the command and the date; every system's outputs are compared.
Systems alternate round by round and the median is reported.

usage: run.py ORCH OUT_DIR   (environment: ORCH_BENCH_CACHE, default ~/.cache/orch-bench;
                              ORCH_BENCH_ROUNDS, default 3; ORCH_BENCH_ONLY, some of
                              pdf_text,ocr,video_frames: only those)"""
import datetime, difflib, glob, json, os, platform, shutil, statistics, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from texlive import texlive_pdfs  # noqa: E402

ORCH, OUT = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CACHE = os.environ.get("ORCH_BENCH_CACHE", os.path.expanduser("~/.cache/orch-bench"))
ROUNDS = int(os.environ.get("ORCH_BENCH_ROUNDS", "3"))
CORES = os.cpu_count()
OCR_DOCUMENTS, OCR_PAGES_EACH = 30, 2
ONLY = set(filter(None, os.environ.get("ORCH_BENCH_ONLY", "").split(",")))


def wanted(name):
    return not ONLY or name in ONLY
os.makedirs(OUT, exist_ok=True)


def machine():
    model = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                  if line.startswith("model name")), platform.machine())
    memory = next(int(line.split()[1]) for line in open("/proc/meminfo") if line.startswith("MemTotal"))
    debian = open("/etc/debian_version").read().strip() if os.path.exists("/etc/debian_version") else "?"
    return f"{CORES} cores ({model}), {memory / 2**20:.0f} GiB, Debian {debian}"


def commit():
    found = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return found.stdout.strip() or "?"


def timed(command, **options):
    start = time.monotonic()
    subprocess.run(command, check=True, **options)
    wall = time.monotonic() - start
    print(f"  {wall:7.2f} s  {command if isinstance(command, str) else ' '.join(command)}"[:160],
          file=sys.stderr, flush=True)
    return wall


def write_listing(name, paths):
    """One path per line in OUT/name, for xargs; its path."""
    listing = os.path.join(OUT, name)
    with open(listing, "w") as f:
        f.write("\n".join(paths) + "\n")
    return listing


def orch_run(program, name, flags, env=None):
    path = os.path.join(OUT, name + ".orch")
    with open(path, "w") as f:
        f.write(program)
    metrics = os.path.join(OUT, name + ".metrics.json")
    wall = timed([ORCH, "run", path, "--quiet", "--no-journal", "--metrics", metrics] + flags,
                 cwd=OUT, stderr=subprocess.DEVNULL, env=env)
    return wall, json.load(open(metrics))


SPEED_HEADER = ["system", "median wall (s)", "rounds (s)", "pages/s", "speed vs xargs"]


def speed_rows(runs, baseline, pages, rate_format):
    """One row per system: its median and rounds, pages/s and its speed against `baseline`."""
    reference = statistics.median(runs[baseline])
    rows = []
    for label, walls in runs.items():
        median = statistics.median(walls)
        rows.append([label, f"{median:.2f}", " ".join(f"{w:.2f}" for w in walls),
                     rate_format.format(pages / median), f"{reference / median:.2f}×"])
    return rows


def table(key, title, header, rows, note):
    """Prints a table with the machine, the date and the command, and keeps its rows, header
    and Markdown in results.json under `key`."""
    lines = [f"### {title}", "", note, "",
             f"Machine: {machine()}. Date: {datetime.date.today().isoformat()}. Orch {commit()}.",
             f"Command: `{COMMAND}`", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    text = "\n".join(lines) + "\n"
    print(text, flush=True)
    results["experiments"][key] = rows
    results["headers"][key] = header
    results["markdown"][key] = text


results = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "machine": machine(), "commit": commit(), "rounds": ROUNDS, "experiments": {}, "headers": {}}
results["markdown"] = {}
# With ORCH_BENCH_ONLY the other benchmarks' figures of the last run are kept.
previous = os.path.join(OUT, "results.json")
if ONLY and os.path.exists(previous):
    kept = json.load(open(previous))
    for key in ("experiments", "headers", "markdown"):
        results[key].update({k: v for k, v in kept.get(key, {}).items() if not wanted(k)})
COMMAND = "bench/real/run.sh"

# --- 1. The text layer of every page ------------------------------------------------------
def pdf_text(pdfs):
    listing = write_listing("pdfs.txt", pdfs)
    texts = os.path.join(OUT, "pdftotext")
    PDF_TEXT = f"""pipeline pdf_text;
    source docs = files("{os.path.dirname(pdfs[0])}/*.pdf") as Doc;
    pages = expand(pdf.pages(docs)) as Page;
    texts = pdf.text(pages) {{ batch: 32, replicas: {CORES} }};
    sink jsonl(path: "{OUT}/orch_text.jsonl", record: {{ path: docs.path, pages: reduce(texts) }});
    """
    # pdftotext writes one file per PDF, as a user's loop would; its pages end with a form feed.
    ONE_FILE = 'pdftotext "$1" "%s/$(basename "$1").txt" 2>/dev/null' % texts
    runs = {"pdftotext, one file after another": [], f"pdftotext, xargs -P{CORES}": [],
            f"Orch, {CORES} local workers": []}
    for round in range(ROUNDS):
        for label in runs:
            if label.startswith("Orch"):
                wall, _ = orch_run(PDF_TEXT, "pdf_text", ["--workers", str(CORES)])
                runs[label].append(wall)
                continue
            if round > 0 and "xargs" not in label:
                continue  # the sequential loop is slow and steady: one round
            shutil.rmtree(texts, ignore_errors=True)
            os.makedirs(texts)
            if "xargs" in label:
                wall = timed(f"xargs -d '\\n' -P{CORES} -n1 sh -c '{ONE_FILE}' _ < {listing}", shell=True)
            else:
                wall = timed(f"while IFS= read -r f; do sh -c '{ONE_FILE}' _ \"$f\"; done < {listing}", shell=True)
            runs[label].append(wall)
    orch_pages = {json.loads(line)["path"]: json.loads(line)["pages"] for line in open(f"{OUT}/orch_text.jsonl")}
    pages = sum(len(p) for p in orch_pages.values())
    same = sum(1 for path, p in orch_pages.items()
               if open(os.path.join(texts, os.path.basename(path) + ".txt"), errors="replace").read()
               .split("\f")[:-1] == p)
    rows = speed_rows(runs, f"pdftotext, xargs -P{CORES}", pages, "{:.0f}")
    results["pdf_text_same_documents"] = [same, len(orch_pages)]
    table("pdf_text", "1. Text layer of every page", SPEED_HEADER, rows,
                        f"{len(pdfs)} PDFs, {pages} pages (Debian's texlive-pictures-doc: median 9 pages, "
                        f"the longest 1,321). Orch: pdf.pages → pdf.text (batch 32, {CORES} replicas) → "
                        f"reduce → JSON Lines. pdftotext writes one text file per PDF. The same text "
                        f"page by page for {same} of {len(orch_pages)} documents.")
    return same == len(orch_pages)


# --- 2. OCR of rendered pages -------------------------------------------------------------
def ocr(pdfs):
    ocr_dir = os.path.join(CACHE, "ocr-pages")
    if not os.path.isdir(ocr_dir):
        staging = ocr_dir + ".partial"
        shutil.rmtree(staging, ignore_errors=True)
        os.makedirs(staging)
        taken = 0
        for pdf in pdfs:
            if taken == OCR_DOCUMENTS:
                break
            stem = os.path.splitext(os.path.basename(pdf))[0]
            # pdfseparate fails on a document shorter than the pages asked for: the next one goes.
            split = subprocess.run(["pdfseparate", "-f", "1", "-l", str(OCR_PAGES_EACH), pdf,
                                    os.path.join(staging, stem + "-p%d.pdf")], stderr=subprocess.DEVNULL)
            if split.returncode == 0:
                taken += 1
            else:
                for partial in glob.glob(os.path.join(staging, glob.escape(stem) + "-p*.pdf")):
                    os.remove(partial)
        os.rename(staging, ocr_dir)
    ocr_pages = sorted(glob.glob(os.path.join(ocr_dir, "*.pdf")))
    ocr_listing = write_listing("ocr_pages.txt", ocr_pages)
    ocr_texts = os.path.join(OUT, "tesseract")
    OCR = f"""pipeline ocr;
    source docs = files("{ocr_dir}/*.pdf") as Doc;
    pages = expand(pdf.pages(docs)) as Page;
    texts = ocr.tesseract(pdf.render(pages, dpi: 150) {{ replicas: {CORES} }}) {{ replicas: {CORES} }};
    sink jsonl(path: "{OUT}/orch_ocr.jsonl", record: {{ path: docs.path, text: text.join(reduce(texts)) }});
    """
    ONE_PAGE = 'pdftoppm -r 150 -png "$1" | tesseract stdin "%s/$(basename "$1")" 2>/dev/null' % ocr_texts
    single_thread = dict(os.environ, OMP_THREAD_LIMIT="1")
    runs = {f"pdftoppm + tesseract, xargs -P{CORES}": [], f"Orch, {CORES} local workers": []}
    for round in range(ROUNDS):
        for label in runs:
            if label.startswith("Orch"):
                wall, _ = orch_run(OCR, "ocr", ["--workers", str(CORES)], env=single_thread)
            else:
                shutil.rmtree(ocr_texts, ignore_errors=True)
                os.makedirs(ocr_texts)
                wall = timed(f"xargs -d '\\n' -P{CORES} -n1 sh -c '{ONE_PAGE}' _ < {ocr_listing}",
                             shell=True, env=single_thread)
            runs[label].append(wall)


    orch_ocr = {os.path.basename(json.loads(line)["path"]): json.loads(line)["text"]
                for line in open(f"{OUT}/orch_ocr.jsonl")}
    same_ocr = matching = total = 0
    for name, text in orch_ocr.items():
        ours, theirs = text.split(), open(os.path.join(ocr_texts, name + ".txt")).read().split()
        same_ocr += ours == theirs
        matcher = difflib.SequenceMatcher(None, ours, theirs, autojunk=False)
        matching += sum(block.size for block in matcher.get_matching_blocks())
        total += max(len(ours), len(theirs))
    rows = speed_rows(runs, f"pdftoppm + tesseract, xargs -P{CORES}", len(ocr_pages), "{:.2f}")
    results["ocr_same_pages"] = [same_ocr, len(orch_ocr)]
    table("ocr", "2. OCR of rendered pages", SPEED_HEADER, rows,
                        f"{len(ocr_pages)} pages (the first {OCR_PAGES_EACH} of {OCR_DOCUMENTS} of the PDFs "
                        f"above, one PDF per page), rendered at 150 dpi and read by tesseract 5 (English, "
                        f"LSTM), OMP_THREAD_LIMIT=1. Orch: pdf.render ({CORES} replicas) → ocr.tesseract "
                        f"({CORES} replicas, one engine each, loaded once). The command line renders "
                        f"with pdftoppm and starts tesseract per page. The same words on {same_ocr} of "
                        f"{len(orch_ocr)} pages ({100 * matching / max(1, total):.2f} % of all words).")
    return len(orch_ocr) == len(ocr_pages)


# --- 3. Video frames ----------------------------------------------------------------------
def video_frames():
    frames = subprocess.run([os.path.join(REPO, "bench", "video", "frames.sh"), ORCH], capture_output=True,
                            text=True, check=True).stdout
    rows = []
    for line in frames.splitlines():
        if "median:" in line:
            video, rest = line.split("median:")
            figures = rest.replace(",", "").split()
            rows.append([video.strip(), figures[1], figures[4], figures[-1] + "×"])
    table("video_frames", "3. Video frames",
          ["video", "Orch frames/s", "ffmpeg frames/s", "Orch time / ffmpeg time"], rows,
                        "bench/video/frames.sh: two 60 s 640x360 H.264 videos (libx264 defaults, and a "
                        "750-frame GOP), 2 s clips, 4 frames each (120 frames). Orch: video.clips → "
                        "video.frames → video.decode (batch 16, 2 replicas) → image.sharpness; ffmpeg: one "
                        "`-vf select` pass decoding the same frames to raw RGB. Below 1× Orch is faster.",)
    return bool(rows)


ok = True
if wanted("pdf_text") or wanted("ocr"):
    pdfs = texlive_pdfs(CACHE)
    ok = (not wanted("pdf_text") or pdf_text(pdfs)) and ok
    ok = (not wanted("ocr") or ocr(pdfs)) and ok
if wanted("video_frames"):
    ok = video_frames() and ok

with open(os.path.join(OUT, "results.json"), "w") as f:
    json.dump(results, f, indent=1)
with open(os.path.join(OUT, "results.md"), "w") as f:
    f.write("\n".join(results["markdown"][k] for k in ("pdf_text", "ocr", "video_frames")
                       if k in results["markdown"]))
sys.exit(0 if ok else 1)
