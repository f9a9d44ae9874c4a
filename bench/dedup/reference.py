"""The near-duplicate detection of Orch's `dedup.near` (MinHash + LSH) in Python/NumPy, to check
Orch's results and throughput against (bench/dedup/run.sh).

Signature (`dedup.minhash(text, ngram: 5, permutations: 128, seed: 1)`): ASCII-lowercased UTF-8
bytes, words split at ASCII whitespace and punctuation, the set of 5-word shingles (or one of all
the words when there are fewer), xxh3_64 & 0xFFFFFFFF of each, 128 datasketch-style
permutations ((a*h + b) mod 2^64 mod 2^61-1, low 32 bits; a, b from splitmix64(seed)), minimum
of each (0xFFFFFFFF without shingles). LSH: 16 bands of 8 rows; a candidate is confirmed when the
estimated Jaccard similarity >= threshold; streaming in file order, a row that matches an earlier
survivor is dropped and not indexed. Two rules: "full" (bands of the 32-bit values; J the
fraction of equal values) and "low4" (Orch's: only the low 4 bits of each value are kept, bands
of those, and J = (m/128 - 1/16) / (1 - 1/16) for m equal nibbles).

The timed run reads PAGES.jsonl, computes signatures in 2 processes (chunks, in order) while the
main process indexes them (full rule, --threshold), and writes the drops; then, untimed, the
curve: both rules at each --curve threshold on the same signatures.

usage: reference.py PAGES.jsonl OUT_DIR [--threshold 0.8] [--curve 0.5,0.55,...,0.95] [--bands 16]
writes OUT_DIR/drops-full-0.80.jsonl ({"id", "duplicate_of", "similarity"} per dropped row), the
same per rule and curve threshold, signatures.npy (uint32, one row per page, in file order, with
ids.npy) and reference.json (pages, seconds, pages/s)."""
import json, multiprocessing, os, string, sys, time

import numpy as np
import xxhash

NGRAM, PERMUTATIONS, SEED = 5, 128, 1
PRIME = (1 << 61) - 1
CHUNK = 128  # pages per signature task
# Uppercase ASCII to lowercase, punctuation to a space: bytes.split() then splits at runs of
# ASCII whitespace (space \t \n \v \f \r) and drops empty words; bytes >= 0x80 stay in words.
TABLE = bytes.maketrans(string.ascii_uppercase.encode() + string.punctuation.encode(),
                        string.ascii_lowercase.encode() + b" " * len(string.punctuation))


def words(text):
    return text.encode("utf-8").translate(TABLE).split()


def shingles(text, ngram=NGRAM):
    """The set of the text's shingles (bytes)."""
    w = words(text)
    if not w:
        return set()
    if len(w) < ngram:
        return {b" ".join(w)}
    return {b" ".join(w[i:i + ngram]) for i in range(len(w) - ngram + 1)}


def permutations(seed=SEED, n=PERMUTATIONS):
    """The permutations' a and b (uint64 arrays) from splitmix64(seed)."""
    state, mask = seed, (1 << 64) - 1

    def next_value():
        nonlocal state
        state = (state + 0x9E3779B97F4A7C15) & mask
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        return z ^ (z >> 31)

    a, b = [], []
    for _ in range(n):
        a.append(next_value() % (PRIME - 1) + 1)
        b.append(next_value() % PRIME)
    return np.array(a, dtype=np.uint64)[:, None], np.array(b, dtype=np.uint64)[:, None]


A, B = permutations()


def signature(text):
    """The MinHash signature: PERMUTATIONS uint32 values."""
    hashes = np.fromiter((xxhash.xxh3_64_intdigest(s) & 0xFFFFFFFF for s in shingles(text)),
                         dtype=np.uint64)
    values = np.full(PERMUTATIONS, 0xFFFFFFFF, dtype=np.uint64)
    for start in range(0, len(hashes), 4096):  # bounded memory on long pages
        h = hashes[None, start:start + 4096]
        # uint64 arrays wrap mod 2^64 before the % PRIME, as datasketch's do.
        permuted = ((A * h + B) % np.uint64(PRIME)) & np.uint64(0xFFFFFFFF)
        values = np.minimum(values, permuted.min(axis=1))
    return values.astype(np.uint32)


def signatures(lines):
    """(ids, signatures) of a chunk of JSON lines: a Pool task."""
    rows = [json.loads(line) for line in lines]
    return [row["id"] for row in rows], np.stack([signature(row["text"]) for row in rows])


class Index:
    """Streaming LSH: add() says whether a row duplicates an earlier survivor (and which, and
    how similar), and indexes it when it does not."""

    def __init__(self, threshold, rule="full", bands=16):
        self.threshold, self.rule, self.bands = threshold, rule, bands
        self.rows = PERMUTATIONS // bands
        self.tables = [{} for _ in range(bands)]
        self.survivors = {}  # id -> signature

    def similarity(self, sig, others):
        if self.rule == "full":
            return (others == sig).mean(axis=1)
        m = ((others & 0xF) == (sig & 0xF)).sum(axis=1)
        return (m / PERMUTATIONS - 1 / 16) / (1 - 1 / 16)

    def add(self, row_id, sig):
        if self.rule == "low4":
            sig = sig & 0xF
        keys = [sig[i * self.rows:(i + 1) * self.rows].tobytes() for i in range(self.bands)]
        candidates = sorted({c for table, key in zip(self.tables, keys) for c in table.get(key, ())})
        if candidates:
            similar = self.similarity(sig, np.stack([self.survivors[c] for c in candidates]))
            best = int(np.argmax(similar))  # the most similar, the earliest of equals
            if similar[best] >= self.threshold:
                return candidates[best], float(similar[best])
        self.survivors[row_id] = sig
        for table, key in zip(self.tables, keys):
            table.setdefault(key, []).append(row_id)
        return None


def write_drops(path, drops):
    with open(path, "w") as out:
        for row_id, (of, similarity) in drops:
            out.write(json.dumps({"id": row_id, "duplicate_of": of, "similarity": round(similarity, 4)}) + "\n")


def chunks(path):
    with open(path, encoding="utf-8") as lines:
        chunk = []
        for line in lines:
            chunk.append(line)
            if len(chunk) == CHUNK:
                yield chunk
                chunk = []
        if chunk:
            yield chunk


def main():
    args = sys.argv[1:]
    option = lambda name, default: args[args.index(name) + 1] if name in args else default
    pages, out = args[0], args[1]
    threshold, bands = float(option("--threshold", "0.8")), int(option("--bands", "16"))
    curve = [float(t) for t in option("--curve", ",".join(f"{t / 100:.2f}" for t in range(50, 100, 5))).split(",")]
    os.makedirs(out, exist_ok=True)

    start = time.monotonic()
    index, drops, ids, sigs = Index(threshold, "full", bands), [], [], []
    with multiprocessing.Pool(2) as pool:
        for chunk_ids, chunk_sigs in pool.imap(signatures, chunks(pages)):
            for row_id, sig in zip(chunk_ids, chunk_sigs):
                found = index.add(row_id, sig)
                if found:
                    drops.append((row_id, found))
            ids += chunk_ids
            sigs.append(chunk_sigs)
    write_drops(os.path.join(out, f"drops-full-{threshold:.2f}.jsonl"), drops)
    seconds = time.monotonic() - start
    print(f"reference: {len(ids)} pages in {seconds:.2f} s ({len(ids) / seconds:.0f} pages/s), "
          f"{len(drops)} dropped at {threshold} (full 32-bit values)", file=sys.stderr)

    sigs = np.concatenate(sigs)
    np.save(os.path.join(out, "signatures.npy"), sigs)
    np.save(os.path.join(out, "ids.npy"), np.array(ids, dtype=np.int64))
    curve_start = time.monotonic()
    for rule in ("full", "low4"):
        for t in sorted(set(curve) | {threshold}):
            if rule == "full" and t == threshold:
                continue  # the timed run's
            index, drops = Index(t, rule, bands), []
            for row_id, sig in zip(ids, sigs):
                found = index.add(row_id, sig)
                if found:
                    drops.append((row_id, found))
            write_drops(os.path.join(out, f"drops-{rule}-{t:.2f}.jsonl"), drops)
    with open(os.path.join(out, "reference.json"), "w") as f:
        json.dump({"pages": len(ids), "seconds": seconds, "pages_per_s": len(ids) / seconds,
                   "threshold": threshold, "bands": bands, "curve": curve,
                   "curve_seconds": time.monotonic() - curve_start}, f, indent=1)


if __name__ == "__main__":
    main()
