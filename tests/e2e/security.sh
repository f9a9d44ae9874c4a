#!/usr/bin/env bash
# The cluster port against hostile peers, on loopback TCP: keys made by `orch keygen`, a
# coordinator that refuses to listen on a network address without them, peers without keys,
# with a wrong or an unlisted key that receive nothing, and floods (idle connections, 100 MB of
# junk, 100 MB messages) that leave the outputs identical and the real workers connected.
set -euo pipefail
: "${ORCH_BIN:?set by ctest}" "${ORCH_SOURCE_DIR:?set by ctest}"
# shellcheck source=lib/checks.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib/checks.bash"
python=${ORCH_PYTHON3:-/usr/bin/python3}
peer() { "$python" "$ORCH_SOURCE_DIR/tests/e2e/lib/hostile_peer.py" "$@"; }
"$python" -c 'import zmq, msgpack' 2>/dev/null || { echo "SKIP: $python lacks zmq or msgpack"; exit 77; }

workdir=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
  rm -rf "$workdir"
}
trap cleanup EXIT
cd "$workdir"
free_port() { "$python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
json_field() { "$python" -c "import json, sys; print(json.load(sys.stdin)$1)"; }
json_true() { "$python" -c "import json, sys; d = json.load(open(sys.argv[1])); sys.exit(0 if ($2) else 1)" "$1"; }
# Waits (up to 10 s) until something listens on the port.
await_port() { for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; return 1; }

# --- keygen ---
"$ORCH_BIN/orch" keygen coordinator >keygen.out
for name in w1 w2 stranger; do "$ORCH_BIN/orch" keygen "$name" >/dev/null; done
check "keygen writes the secret key with mode 0600" test "$(stat -c %a coordinator.key)" = 600
check "keygen writes the public key as one 'curve KEY NAME' line" \
  grep -Eq '^curve .{40} coordinator$' coordinator.pub
check "keygen prints the public key it wrote" \
  grep -qF -e "$(cut -d' ' -f2 coordinator.pub)" keygen.out
before=$(cat w1.key)
status=$(exit_code "$ORCH_BIN/orch" keygen w1)
check "keygen refuses to replace a key (exit 1)" test "$status" = 1
check "the refused keygen left the old key" test "$(cat w1.key)" = "$before"
cat w1.pub w2.pub >workers.pub
cp coordinator.key loose.key && chmod 644 loose.key

for i in $(seq 0 199); do echo "{\"id\": $i, \"name\": \"doc-$i\", \"n\": $((i % 4 + 1))}"; done >rows.jsonl
cat >pages.orch <<'ORCH'
pipeline pages;
source rows = jsonl("rows.jsonl") as Doc;
pages = expand(test.split(rows, field: "n")) as Page;
work = test.sleep(pages, ms: 4) { batch: 4, replicas: 2 };
sink files(dir: "out/files", name: rows.name as String, ext: ".json", content: { id: rows.id, pages: reduce(work) });
ORCH
"$ORCH_BIN/orch" run pages.orch --in-process --quiet --no-journal 2>/dev/null
mv out expected

# --- no keys on a network address: refused before anything listens ---
port=$(free_port)
status=0
"$ORCH_BIN/orch" run pages.orch --listen "tcp://0.0.0.0:$port" --no-journal >refused.log 2>&1 || status=$?
check "listening on 0.0.0.0 without keys is refused (exit 1)" test "$status" = 1
check "the refusal explains orch keygen and --insecure" \
  grep -q "refusing to listen on tcp://0.0.0.0:$port without keys.*orch keygen.*--insecure" refused.log
check "the refused run wrote nothing" test ! -e out
status=0
"$ORCH_BIN/orch" run pages.orch --listen "tcp://127.0.0.1:$port" --key loose.key \
  --authorized-keys workers.pub >loose.log 2>&1 || status=$?
check "a secret key other users can read is refused (exit 1)" test "$status" = 1
check "the refusal says chmod 600" grep -q "chmod 600 loose.key" loose.log
status=$(exit_code "$ORCH_BIN/orch-worker" --connect "tcp://127.0.0.1:$port" --key w1.key)
check "a worker with --key but no --server-key is refused (exit 2)" test "$status" = 2

# Loopback without keys runs (local workers here), with a note on who may join.
port=$(free_port)
status=0
"$ORCH_BIN/orch" run pages.orch --listen "tcp://127.0.0.1:$port" --workers 2 --no-journal \
  --quiet >loopback.log 2>&1 || status=$?
check "loopback without keys runs (status 0)" test "$status" = 0
check "with a note that any local process may join" \
  grep -q "note: tcp://127.0.0.1:$port admits any process on this machine" loopback.log
check "its outputs are the in-process outputs" diff -r expected out
rm -rf out

# --- --insecure: the documented protocol lets a stranger in (what keys prevent) ---
port=$(free_port)
"$ORCH_BIN/orch" run pages.orch --listen "tcp://127.0.0.1:$port" --insecure --no-journal \
  --quiet >insecure.log 2>&1 &
run=$!; pids+=("$run")
await_port "$port"
peer join "tcp://127.0.0.1:$port" --seconds 1 >insecure-peer.json
kill -TERM "$run"; wait "$run" || true; rm -rf out
check "--insecure warns that any peer may join" grep -q "warning: --insecure" insecure.log
check "without keys, a stranger receives the plan (the control for the checks below)" \
  grep -q '"welcome"' insecure-peer.json

# --- CURVE: strangers receive nothing; a listed worker runs the pipeline ---
port=$(free_port)
"$ORCH_BIN/orch" run pages.orch --listen "tcp://127.0.0.1:$port" --key coordinator.key \
  --authorized-keys workers.pub --no-journal --metrics metrics.json >curve.log 2>&1 &
run=$!; pids+=("$run")
await_port "$port"
peer join "tcp://127.0.0.1:$port" --seconds 1 >no-key.json &
a=$!
peer join "tcp://127.0.0.1:$port" --seconds 1 --key stranger.key --server-key coordinator.pub >unlisted.json &
b=$!
peer join "tcp://127.0.0.1:$port" --seconds 1 --key w1.key --server-key stranger.pub >wrong-server.json &
c=$!
wait "$a" "$b" "$c"
for attempt in no-key unlisted wrong-server; do
  check "a peer with $attempt received no message and no byte (no plan, no input)" \
    test "$(json_field '["messages"]' <"$attempt.json") $(json_field '["bytes"]' <"$attempt.json")" = "0 0"
done
"$ORCH_BIN/orch-worker" --connect "tcp://127.0.0.1:$port" --key w1.key --server-key coordinator.pub \
  --name w1 --once --quiet >w1.log 2>&1 &
pids+=("$!")
status=0; wait "$run" || status=$?
check "the run with keys completes" test "$status" = 0
check "the keyed run's outputs are the in-process outputs" diff -r expected out
check "the coordinator names the refused key" \
  grep -qF -e "refused a peer at 127.0.0.1: its key $(cut -d' ' -f2 stranger.pub) is not in the authorized keys" curve.log
check "the coordinator logs the worker's key" grep -q "worker w1 joined (key w1," curve.log
check "the summary names the keys" grep -q "CURVE keys: w1" curve.log
check "the metrics name each worker's key" \
  test "$(json_field '["workers"][0]["key"]' <metrics.json)" = w1
[ "$failures" -eq 0 ] || cat curve.log
rm -rf out

# --- floods: 1,000 idle connections, 6 x 100 MB of junk, 100 MB ZMTP messages ---
flood_run() { # flood_run NAME COORDINATOR-FLAGS... : slow.orch under a flood, 2 real workers
  local name=$1; shift
  local port; port=$(free_port)
  # 512 descriptors: 1,000 connections would take them all if peers were not bounded.
  (ulimit -n 512; exec timeout 120 "$ORCH_BIN/orch" run slow.orch --listen "tcp://127.0.0.1:$port" \
    "$@" --no-journal --heartbeat-ms 200 >"$name.log" 2>&1) &
  local run=$!; pids+=("$run")
  await_port "$port"
  local keys=()
  for w in w1 w2; do
    [ "$name" = curve-flood ] && keys=(--key "$w.key" --server-key coordinator.pub)
    "$ORCH_BIN/orch-worker" --connect "tcp://127.0.0.1:$port" --name "$w" --once --quiet \
      ${keys[@]+"${keys[@]}"} >"$name-$w.log" 2>&1 &
    pids+=("$!")
  done
  # The flood comes while rows are being written (the files sink opens a file per row).
  for _ in $(seq 100); do [ "$(grep -c "joined" "$name.log")" = 2 ] && break; sleep 0.1; done
  peer idle 127.0.0.1 "$port" --count 1000 --seconds 3 >"$name-idle.json" &
  peer junk 127.0.0.1 "$port" --count 6 --megabytes 100 >/dev/null &
  peer zmtp-junk "tcp://127.0.0.1:$port" --count 6 --megabytes 100 --seconds 1 >/dev/null &
  local status=0; wait "$run" || status=$?
  wait
  check "$name: the run completes (status 0)" test "$status" = 0
  check "$name: every row was written, as in-process" diff -r expected out
  check "$name: both workers joined and none was lost" grep -q "2 worker(s) joined at .*, 0 lost" "$name.log"
  check "$name: the flood's connections were closed" grep -q "connection(s) closed" "$name.log"
  [ "$failures" -eq 0 ] || cat "$name.log"
  rm -rf out
}
# About 4 s of work (ms per page, 500 pages on 2 replicas): the flood arrives in the middle.
sed 's/ms: 4)/ms: 16)/; s/pipeline pages/pipeline slow/' pages.orch >slow.orch
flood_run curve-flood --key coordinator.key --authorized-keys workers.pub
flood_run insecure-flood --insecure

finish_checks
