"""Ground truth and scores for the near-duplicate benchmark (bench/dedup/run.sh).

Ground truth is exact: the Jaccard similarity of the pages' shingle sets (the normalisation and
5-word shingles of reference.py, each shingle identified by its full 64-bit xxh3), for every pair
of a page and an earlier one with similarity >= 0.5, found by prefix filtering (tokens ordered
rarest first; two sets with J >= t share a token among the first |S| - ceil(t|S|) + 1 of each)
and verified by intersecting. Two pages without words are identical (J = 1), as their MinHash
signatures are. A page is truly a duplicate at threshold t when its similarity to some earlier
page that is itself kept is >= t, the same greedy streaming rule as dedup.near's with exact
similarity. Precision and recall compare a predictions file's dropped ids with those.

usage: score.py PAGES.jsonl PAIRS.npz [PREDICTIONS.jsonl[@THRESHOLD] ...]
PAIRS.npz caches the pairs (made when missing). Each predictions file holds one JSON line with
an "id" per dropped row; THRESHOLD defaults to 0.8. Prints one line per file; a file named
drops-RULE-T.jsonl (reference.py's) is scored at T."""
import json, math, os, re, sys, time

import numpy as np
import xxhash

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference import shingles  # noqa: E402

LOWEST = 0.5


def shingle_sets(pages):
    """Each page's id and its shingles as a sorted array of 64-bit hashes, in file order."""
    ids, sets = [], []
    with open(pages, encoding="utf-8") as lines:
        for line in lines:
            row = json.loads(line)
            ids.append(row["id"])
            sets.append(np.unique(np.fromiter((xxhash.xxh3_64_intdigest(s) for s in shingles(row["text"])),
                                              dtype=np.uint64)))
    return ids, sets


def similar_pairs(sets, lowest=LOWEST):
    """(later, earlier, exact Jaccard) for every pair of positions with J >= lowest."""
    sizes = np.array([len(s) for s in sets])
    # Rank tokens by frequency, rarest first: short prefixes with short posting lists.
    tokens, inverse, counts = np.unique(np.concatenate(sets), return_inverse=True, return_counts=True)
    rank = np.empty(len(tokens), dtype=np.int64)
    rank[np.lexsort((tokens, counts))] = np.arange(len(tokens))
    ranked = np.split(rank[inverse], np.cumsum(sizes)[:-1])
    index, pairs, first_empty = {}, [], None
    for i, ranks in enumerate(ranked):
        size = len(ranks)
        if size == 0:
            if first_empty is None:
                first_empty = i
            else:
                pairs.append((i, first_empty, 1.0))  # later empty pages: J = 1 with all earlier ones
            continue
        ranks = np.sort(ranks)
        prefix = ranks[:size - math.ceil(lowest * size) + 1].tolist()
        candidates = {j for token in prefix for j in index.get(token, ())}
        for j in sorted(candidates):
            if lowest * size <= sizes[j] <= size / lowest:
                common = len(np.intersect1d(ranks, ranked[j], assume_unique=True))
                jaccard = common / (size + sizes[j] - common)
                if jaccard >= lowest:
                    pairs.append((i, j, jaccard))
        ranked[i] = ranks
        for token in prefix:
            index.setdefault(token, []).append(i)
    return pairs


def load_pairs(pages, path):
    """(ids, later, earlier, jaccard) arrays, from the cache at `path` or computed and cached."""
    if not os.path.exists(path):
        start = time.monotonic()
        ids, sets = shingle_sets(pages)
        pairs = similar_pairs(sets)
        later, earlier, jaccard = (np.array(c) for c in zip(*pairs)) if pairs else ([], [], [])
        np.savez(path + ".partial.npz", ids=np.array(ids), later=later, earlier=earlier, jaccard=jaccard)
        os.rename(path + ".partial.npz", path)
        print(f"ground truth: {len(pairs)} pairs with J >= {LOWEST} among {len(ids)} pages "
              f"in {time.monotonic() - start:.1f} s -> {path}", file=sys.stderr)
    data = np.load(path)
    return data["ids"], data["later"], data["earlier"], data["jaccard"]


def truth(pairs, threshold):
    """The ids that are truly duplicates at `threshold` (greedy: similar to an earlier kept page)."""
    ids, later, earlier, jaccard = pairs
    dropped = np.zeros(len(ids), dtype=bool)
    take = jaccard >= threshold
    # Pairs are sorted by the later page: by the time a page is decided, its earlier ones are.
    for i, j in zip(later[take].tolist(), earlier[take].tolist()):
        if not dropped[i] and not dropped[j]:
            dropped[i] = True
    return set(ids[dropped].tolist())


def score(predicted, true):
    """{precision, recall, dropped, true, hits}: dropped ids against the true duplicates."""
    hits = len(predicted & true)
    return {"precision": hits / len(predicted) if predicted else 1.0,
            "recall": hits / len(true) if true else 1.0,
            "dropped": len(predicted), "true": len(true), "hits": hits}


def read_ids(path):
    with open(path) as lines:
        return {json.loads(line)["id"] for line in lines if line.strip()}


def main():
    pages, cache = sys.argv[1], sys.argv[2]
    pairs = load_pairs(pages, cache)
    for spec in sys.argv[3:]:
        path, _, threshold = spec.partition("@")
        named = re.search(r"drops-\w+-([0-9.]+)\.jsonl$", path)
        threshold = float(threshold or (named.group(1) if named else 0.8))
        s = score(read_ids(path), truth(pairs, threshold))
        print(f"{path} @ {threshold:.2f}: precision {s['precision']:.4f}, recall {s['recall']:.4f} "
              f"({s['hits']} of {s['dropped']} dropped are among the {s['true']} true duplicates)")


if __name__ == "__main__":
    main()
