"""The flat-record way on Dask (Debian's python3-dask and python3-distributed): flat-map each
parent into its pages, run the simulated kernel on batches of 64 pages (one sleep per batch),
then regroup the pages by parent with a groupby. Prints {"wall_seconds": ...} and writes
{parent: [page ordinals in order]}.

usage: dask_peer.py CORPUS.jsonl WORKERS PER_BATCH_MS PER_PAGE_MS OUT.json"""
import json, sys, time

import dask.bag as db
from distributed import Client, LocalCluster

corpus, workers, per_batch_ms, per_page_ms, out = sys.argv[1:6]
workers, per_batch_ms, per_page_ms = int(workers), float(per_batch_ms), float(per_page_ms)


def kernel(pages):
    pages = list(pages)
    time.sleep((per_batch_ms + per_page_ms * len(pages)) / 1000)
    return pages


if __name__ == "__main__":
    rows = [json.loads(line) for line in open(corpus)]
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster):
        started = time.time()
        pages = db.from_sequence(rows, npartitions=workers * 4).map(
            lambda r: [(r["id"], i) for i in range(r["n"])]).flatten()
        total = sum(r["n"] for r in rows)
        batched = pages.repartition(npartitions=max(1, -(-total // 64))).map_partitions(kernel)
        grouped = batched.groupby(lambda page: page[0]).map(
            lambda kv: (kv[0], sorted(ordinal for _, ordinal in kv[1])))
        result = dict(grouped.compute())
        wall = time.time() - started
    with open(out, "w") as f:
        json.dump({str(k): v for k, v in result.items()}, f)
    print(json.dumps({"wall_seconds": wall}))
