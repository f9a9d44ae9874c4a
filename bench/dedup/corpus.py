"""The near-duplicate benchmark's data set (bench/dedup/run.sh): the text of every page of Debian's
texlive-pictures-doc PDFs (bench/real/texlive.py; `pdftotext PDF -`, as Orch's pdf.text does by
default, split at the form feed that ends each page), and synthetic near duplicates of randomly
chosen pages (seeded), a quarter as many as there are pages, one of three kinds in equal shares:

  edit      1-20 % of the words replaced, inserted (words from other pages) or deleted
  shuffle   1-3 windows of 5-10 % of the words (at least 3) shuffled in place
  truncate  the first 80-95 % of the words kept

Each near duplicate is placed at a random position after its original. Writes OUT_DIR/pages.jsonl
in that order, one line per page: {"id": position from 0, "text", "origin": "doc.pdf#page" (from
1) for an original or null, "made_from": the original's id or null, "edit": what was done or
null}. --quick takes every 12th PDF (41 of 491). The directory is written whole or not at all.

usage: corpus.py OUT_DIR [--quick]"""
import json, multiprocessing, os, random, re, shutil, subprocess, sys, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "real"))
from texlive import texlive_pdfs  # noqa: E402

SEED, SYNTHETIC_SHARE, MIN_WORDS = 7, 0.25, 20


def page_texts(pdf):
    """The text of each of the PDF's pages."""
    out = subprocess.run(["pdftotext", pdf, "-"], capture_output=True).stdout
    return out.decode("utf-8", errors="replace").split("\f")[:-1]


def tokens(text):
    """(leading whitespace, [[word, whitespace after], ...]): edits keep the layout."""
    lead = re.match(r"\s*", text).group()
    return lead, [[m.group(1), m.group(2)] for m in re.finditer(r"(\S+)(\s*)", text)]


def near_duplicate(text, kind, vocabulary, rng):
    """A near duplicate of `text` and a description of the change."""
    lead, parts = tokens(text)
    n = len(parts)
    if kind == "edit":
        share = rng.uniform(0.01, 0.20)
        for _ in range(max(1, round(share * n))):
            op, at = rng.choice(("replace", "insert", "delete")), rng.randrange(len(parts))
            if op == "replace":
                parts[at][0] = rng.choice(vocabulary)
            elif op == "insert":
                parts.insert(at, [rng.choice(vocabulary), " "])
            elif len(parts) > 1:
                del parts[at]
        change = f"edit {share:.0%}"
    elif kind == "shuffle":
        windows, size = rng.randint(1, 3), max(3, round(rng.uniform(0.05, 0.10) * n))
        for _ in range(windows):
            at = rng.randrange(max(1, n - size))
            shuffled = [p[0] for p in parts[at:at + size]]
            rng.shuffle(shuffled)
            for p, word in zip(parts[at:at + size], shuffled):
                p[0] = word
        change = f"shuffle {windows}x{size}"
    else:
        share = rng.uniform(0.80, 0.95)
        parts = parts[:max(1, round(share * n))]
        change = f"truncate {share:.0%}"
    return lead + "".join(w + s for w, s in parts), change


def main():
    out, quick = sys.argv[1], "--quick" in sys.argv
    cache = os.environ.get("ORCH_BENCH_CACHE", os.path.expanduser("~/.cache/orch-bench"))
    pdfs = texlive_pdfs(cache)
    if quick:
        pdfs = pdfs[::12]
    start = time.monotonic()
    with multiprocessing.Pool(2) as pool:
        texts = pool.map(page_texts, pdfs, chunksize=1)
    originals = [(f"{os.path.basename(pdf)}#{i + 1}", text)
                 for pdf, pages in zip(pdfs, texts) for i, text in enumerate(pages)]

    rng = random.Random(SEED)
    wordy = [i for i, (_, text) in enumerate(originals) if len(text.split()) >= MIN_WORDS]
    vocabulary = [w for i in rng.sample(wordy, min(500, len(wordy))) for w in originals[i][1].split()]
    rows = [(i, {"text": text, "origin": origin, "made_from": None, "edit": None})
            for i, (origin, text) in enumerate(originals)]
    n = len(originals)
    for k in range(round(SYNTHETIC_SHARE * n)):
        source = rng.choice(wordy)
        text, change = near_duplicate(originals[source][1], ("edit", "shuffle", "truncate")[k % 3],
                                      vocabulary, rng)
        # Sorting on the key puts it after its original (key `source`), anywhere up to the end.
        rows.append((source + rng.random() * (n - source),
                     {"text": text, "origin": None, "made_from": source, "edit": change}))
    rows.sort(key=lambda row: row[0])
    new_id = {key: position for position, (key, row) in enumerate(rows) if row["origin"]}

    partial = out.rstrip("/") + ".partial"
    shutil.rmtree(partial, ignore_errors=True)
    os.makedirs(partial)
    with open(os.path.join(partial, "pages.jsonl"), "w") as f:
        for position, (_, row) in enumerate(rows):
            if row["made_from"] is not None:
                row["made_from"] = new_id[row["made_from"]]
            f.write(json.dumps({"id": position, **row}, ensure_ascii=False) + "\n")
    shutil.rmtree(out, ignore_errors=True)
    os.rename(partial, out)
    print(f"corpus: {len(pdfs)} PDFs, {n} pages and {len(rows) - n} near duplicates "
          f"in {time.monotonic() - start:.1f} s -> {out}/pages.jsonl", file=sys.stderr)


if __name__ == "__main__":
    main()
