"""The MinerU corpus shape (../shared/notes/workloads.md): 3,689 parents, 174,744 children,
child counts following the published quantiles (min 1, p50 24, p90 125, p95 162, p99 236,
max 427). Writes one JSON line per parent: {"id", "n", "poison"}; the 99 largest parents are
marked poison (the failure-containment experiment fails their child 0).

usage: corpus.py OUT.jsonl [--scale S]   (S < 1 keeps that fraction of the parents)"""
import json, random, sys

QUANTILES = [(0.0, 1), (0.5, 24), (0.9, 125), (0.95, 162), (0.99, 236), (1.0, 427)]
PARENTS, CHILDREN = 3689, 174744


def inverse_cdf(q):
    for (q0, v0), (q1, v1) in zip(QUANTILES, QUANTILES[1:]):
        if q <= q1:
            return v0 + (v1 - v0) * (q - q0) / (q1 - q0)
    return QUANTILES[-1][1]


def corpus(scale=1.0):
    parents = max(8, round(PARENTS * scale))
    counts = [max(1, round(inverse_cdf((i + 0.5) / parents))) for i in range(parents)]
    # Scale the body to the published total, keeping the extremes.
    target = round(CHILDREN * parents / PARENTS)
    factor = (target - counts[0] - counts[-1]) / (sum(counts) - counts[0] - counts[-1])
    counts = [counts[0]] + [max(1, round(c * factor)) for c in counts[1:-1]] + [counts[-1]]
    # Settle the rounding difference one child at a time on the body, never below one child.
    step = 1 if target > sum(counts) else -1
    i = 1
    while sum(counts) != target:
        if counts[i] + step >= 1:
            counts[i] += step
        i = i % (parents - 2) + 1
    largest = set(sorted(range(parents), key=lambda i: -counts[i])[:max(1, round(99 * parents / PARENTS))])
    order = list(range(parents))
    random.Random(7).shuffle(order)
    return [{"id": i, "n": counts[i], "poison": i in largest} for i in order]


if __name__ == "__main__":
    scale = float(sys.argv[sys.argv.index("--scale") + 1]) if "--scale" in sys.argv else 1.0
    rows = corpus(scale)
    with open(sys.argv[1], "w") as out:
        for row in rows:
            out.write(json.dumps(row) + "\n")
    print(f"{len(rows)} parents, {sum(r['n'] for r in rows)} children, "
          f"max {max(r['n'] for r in rows)}", file=sys.stderr)
