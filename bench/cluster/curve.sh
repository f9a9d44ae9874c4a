#!/usr/bin/env bash
# What CURVE costs on the cluster port: the engine-overhead workload (split -> identity, batch
# 64 -> reduce; zero-cost operators, so the time is the runtime's and the transport's) over
# tcp://127.0.0.1 with 2 orch-worker processes that connect there, with keys (--key and
# --authorized-keys; the workers --key and --server-key) and without (--insecure on both
# sides: the endpoint then takes messages of at most 64 KiB, larger ones in pieces),
# alternating, five runs each, in one invocation. Prints each run, the median grains/s and
# their ratio, and checks that both wrote the same rows.
#   bench/cluster/curve.sh [ORCH] [PARENTS]   (default build/bin/orch, 8000 parents)
set -euo pipefail
cd "$(dirname "$0")/../.."
orch=$(realpath "${1:-build/bin/orch}")
parents=${2:-8000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
"$orch" keygen coordinator >/dev/null
"$orch" keygen worker >/dev/null
cp worker.pub workers.pub
/usr/bin/python3 -c "
import random
random.seed(7)
with open('rows.jsonl', 'w') as out:
    for i in range($parents):
        out.write('{\"id\": %d, \"n\": %d}\n' % (i, random.randint(1, 94)))
"
cat >overhead.orch <<'ORCH'
pipeline overhead;
source rows = jsonl("rows.jsonl") as Doc;
pages = expand(test.split(rows, field: "n")) as Page;
same = test.identity(pages) { batch: 64, replicas: 2 };
sink jsonl(path: "out/docs.jsonl", record: { id: rows.id, pages: list.len(reduce(same)) });
ORCH
exec /usr/bin/python3 - "$orch" <<'PY'
import json, socket, statistics, subprocess, sys
orch = sys.argv[1]
def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
    return port
rates = {"curve": [], "plain": []}
outputs = {}
for round in range(1, 6):
    for variant in ("curve", "plain"):
        endpoint = "tcp://127.0.0.1:%d" % free_port()
        security = (["--key", "coordinator.key", "--authorized-keys", "workers.pub"]
                    if variant == "curve" else ["--insecure"])
        run = subprocess.Popen([orch, "run", "overhead.orch", "--quiet", "--no-journal",
                                "--listen", endpoint, "--metrics", "m.json"] + security,
                               stderr=subprocess.DEVNULL)
        trust = (["--key", "worker.key", "--server-key", "coordinator.pub"]
                 if variant == "curve" else ["--insecure"])
        workers = [subprocess.Popen([orch + "-worker", "--connect", endpoint, "--once", "--quiet",
                                     "--name", "w%d" % w] + trust, stderr=subprocess.DEVNULL)
                   for w in range(2)]
        if run.wait() != 0:
            sys.exit("the %s run failed" % variant)
        for worker in workers:
            worker.wait()
        metrics = json.load(open("m.json"))
        grains = metrics["engine"]["grains_run"]
        rates[variant].append(grains / metrics["wall_seconds"])
        outputs[variant] = sorted(open("out/docs.jsonl"))
        print("%-5s run %d: %d grains in %.2f s, %.0f grains/s"
              % (variant, round, grains, metrics["wall_seconds"], rates[variant][-1]))
if outputs["curve"] != outputs["plain"]:
    sys.exit("the two variants wrote different rows")
curve, plain = statistics.median(rates["curve"]), statistics.median(rates["plain"])
print("median: CURVE %.0f grains/s, plain %.0f grains/s, CURVE / plain = %.3f"
      % (curve, plain, curve / plain))
PY
