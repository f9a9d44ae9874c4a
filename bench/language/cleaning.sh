#!/usr/bin/env bash
# A text-cleaning pipeline over 100,000 JSON lines written plainly (no options: helper fusion
# and the row-wise operators' default batch do the work) against the same pipeline hand-tuned
# with { batch: 1024 } on every Call. Prints each run's wall time, the medians and their ratio.
#   bench/language/cleaning.sh [ORCH]   (default build/bin/orch)
set -euo pipefail
cd "$(dirname "$0")/../.."
orch=${1:-build/bin/orch}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 - "$work" <<'PY'
import random, sys
work = sys.argv[1]
random.seed(7)
words = ["alpha", "beta", "gamma", "delta", "  ", "Straße", "naïve", "x"]
with open(f"{work}/rows.jsonl", "w") as out:
    for i in range(100000):
        text = " ".join(random.choice(words) for _ in range(random.randint(0, 12)))
        out.write('{"id": %d, "text": "%s"}\n' % (i, text))
plain = f'''pipeline clean;
source rows = jsonl("{work}/rows.jsonl") as Row;
t = text.normalize(rows.text as String);
keep = filter(t, text.len(t) >= 20 and text.nonempty(t));
sink jsonl(path: "{work}/OUT.jsonl", record: {{ id: rows.id, text: keep }});
'''
open(f"{work}/plain.orch", "w").write(plain.replace("OUT", "plain"))
tuned = (plain.replace("OUT", "tuned")
         .replace("text.normalize(rows.text as String)",
                  "text.normalize(rows.text as String) { batch: 1024 }")
         .replace("text.len(t)", "text.len(t) { batch: 1024 }")
         .replace("text.nonempty(t)", "text.nonempty(t) { batch: 1024 }"))
open(f"{work}/tuned.orch", "w").write(tuned)
PY
/usr/bin/python3 - "$orch" "$work" <<'PY'
import statistics, subprocess, sys, time
orch, work = sys.argv[1], sys.argv[2]
times = {"plain": [], "tuned": []}
for round in range(1, 4):
    for variant in ("plain", "tuned"):
        start = time.monotonic()
        subprocess.run([orch, "run", f"{work}/{variant}.orch", "--quiet"], check=True,
                       stderr=subprocess.DEVNULL)
        times[variant].append(time.monotonic() - start)
        print(f"{variant} run {round}: {times[variant][-1]:.2f} s")
outputs = [sorted(open(f"{work}/{variant}.jsonl")) for variant in ("plain", "tuned")]
if outputs[0] != outputs[1]:
    sys.exit("the two variants wrote different rows")
plain, tuned = statistics.median(times["plain"]), statistics.median(times["tuned"])
print(f"median: plain {plain:.2f} s, hand-tuned {tuned:.2f} s, plain / hand-tuned = {plain / tuned:.2f}")
PY
