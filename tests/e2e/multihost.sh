#!/usr/bin/env bash
# Multi-host run over TCP: the coordinator and two workers in three network namespaces joined
# by veth pairs, as on three machines; then values kept on the workers and fetched between them. Needs root and network namespaces; skipped (exit 77)
# with the reason where they are not permitted.
set -euo pipefail
: "${ORCH_BIN:?set by ctest}" "${ORCH_SOURCE_DIR:?set by ctest}"
# shellcheck source=lib/checks.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib/checks.bash"

skip() { echo "SKIP: $1"; exit 77; }
command -v ip >/dev/null || skip "the ip tool (iproute2) is not installed"
[ "$(id -u)" = 0 ] || skip "creating network namespaces needs root"

tag="orch$$"
head="$tag-head"; w1="$tag-w1"; w2="$tag-w2"
workdir=$(mktemp -d)
cleanup() {
  for ns in "$head" "$w1" "$w2"; do ip netns pids "$ns" 2>/dev/null | xargs -r kill -9; done
  for ns in "$head" "$w1" "$w2"; do ip netns del "$ns" 2>/dev/null || true; done
  rm -rf "$workdir"
}
trap cleanup EXIT
ip netns add "$head" 2>/dev/null || skip "network namespaces are not permitted here"
ip netns add "$w1"
ip netns add "$w2"
# head 10.77.1.1 <-> w1 10.77.1.2, head 10.77.2.1 <-> w2 10.77.2.2
for i in 1 2; do
  ns="$tag-w$i"
  ip link add "${tag}h$i" type veth peer name "${tag}w$i"
  ip link set "${tag}h$i" netns "$head"
  ip link set "${tag}w$i" netns "$ns"
  ip -n "$head" addr add "10.77.$i.1/24" dev "${tag}h$i"
  ip -n "$ns" addr add "10.77.$i.2/24" dev "${tag}w$i"
  ip -n "$head" link set "${tag}h$i" up
  ip -n "$ns" link set "${tag}w$i" up
  ip -n "$ns" link set lo up
done
ip -n "$head" link set lo up

cd "$workdir"
for i in $(seq 0 19); do echo "{\"id\": $i, \"n\": $((i % 5))}"; done >rows.jsonl
cat >pages.orch <<'ORCH'
pipeline pages;
source rows = jsonl("rows.jsonl") as Doc;
pages = expand(test.split(rows, field: "n")) as Page;
work = test.sleep(pages, ms: 2) { batch: 4, replicas: 2 };
sink jsonl(path: "out/docs.jsonl", record: { id: rows.id, pages: reduce(work) });
ORCH
"$ORCH_BIN/orch" run pages.orch --in-process --quiet 2>/dev/null
expected=$(sort out/docs.jsonl)
rm -rf out
# Keys, as on a cluster: the coordinator admits w1 and w2 and nobody else (docs/cluster.md).
for name in coordinator w1 w2; do "$ORCH_BIN/orch" keygen "$name" >/dev/null; done
cat w1.pub w2.pub >workers.pub
keys=(--key coordinator.key --authorized-keys workers.pub)

ip netns exec "$head" "$ORCH_BIN/orch" run pages.orch --listen tcp://0.0.0.0:7700 "${keys[@]}" >head.log 2>&1 &
run=$!
ip netns exec "$w1" "$ORCH_BIN/orch" worker --connect tcp://10.77.1.1:7700 --name w1 \
  --key w1.key --server-key coordinator.pub >w1.log 2>&1 &
first=$!
ip netns exec "$w2" "$ORCH_BIN/orch-worker" --connect tcp://10.77.2.1:7700 --name w2 \
  --key w2.key --server-key coordinator.pub >w2.log 2>&1 &
second=$!
status=0; timeout 60 tail --pid="$run" -f /dev/null || status=$?
wait "$run" || status=$?
check "the coordinator in its own namespace completes the run" test "$status" = 0
check "both workers joined over TCP" grep -q "2 worker(s) joined at tcp://0.0.0.0:7700" head.log
check "each with its own key" grep -q "CURVE keys: w1 w2" head.log
check "the rows are the in-process rows" test "$(sort out/docs.jsonl)" = "$expected"
# Workers outlive a run: the same two serve the next coordinator on the endpoint.
rm -rf out
ip netns exec "$head" "$ORCH_BIN/orch" run pages.orch --listen tcp://0.0.0.0:7700 "${keys[@]}" >head2.log 2>&1 &
run=$!
status=0; timeout 60 tail --pid="$run" -f /dev/null || status=$?
wait "$run" || status=$?
check "the workers serve a second run" test "$status" = 0
check "both workers joined the second run" grep -q "2 worker(s) joined at tcp://0.0.0.0:7700" head2.log
check "the second run's rows are the in-process rows" test "$(sort out/docs.jsonl)" = "$expected"
# Value locality between hosts: 128 KiB values stay on the worker that made them, and the
# worker that reads them fetches from the other's peer socket (CURVE, the run's keys only),
# routed through the head's namespace: a consumer with one replica reads both workers' values.
ip netns exec "$head" sysctl -qw net.ipv4.ip_forward=1
ip -n "$w1" route add 10.77.2.0/24 via 10.77.1.1
ip -n "$w2" route add 10.77.1.0/24 via 10.77.2.1
cat >kept.orch <<'ORCH'
pipeline kept;
source rows = jsonl("rows.jsonl") as Doc;
pages = expand(test.split(rows, field: "n")) as Page;
images = test.blob(pages, bytes: 131072) { batch: 2, replicas: 2 };
sums = test.checksum(images) { batch: 4 };
sink jsonl(path: "out/kept.jsonl", record: { id: rows.id, sums: reduce(sums) });
ORCH
"$ORCH_BIN/orch" run kept.orch --in-process --quiet 2>/dev/null
expected=$(sort out/kept.jsonl)
rm -rf out
ip netns exec "$head" "$ORCH_BIN/orch" run kept.orch --listen tcp://0.0.0.0:7700 "${keys[@]}" \
  --metrics kept.json >head3.log 2>&1 &
run=$!
status=0; timeout 60 tail --pid="$run" -f /dev/null || status=$?
wait "$run" || status=$?
check "a run whose values stay on the workers completes" test "$status" = 0
check "... with the in-process rows" test "$(sort out/kept.jsonl)" = "$expected"
check "... its values kept on the workers, some fetched by the other worker across hosts" \
  /usr/bin/python3 -c '
import json, sys
c = json.load(open("kept.json"))["executor_counters"]
print(c)
sys.exit(0 if c["values_kept_on_workers"] == 40 and c["values_fetched_between_workers"] > 0
         and c["values_recomputed"] == 0 else 1)'
kill -TERM "$first" "$second"
status=0; wait "$first" || status=$?
check "worker 1 stops with status 0 on SIGTERM" test "$status" = 0
status=0; wait "$second" || status=$?
check "worker 2 stops with status 0 on SIGTERM" test "$status" = 0
[ "$failures" -eq 0 ] || cat head.log head2.log head3.log w1.log w2.log
finish_checks
