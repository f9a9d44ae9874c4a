#!/usr/bin/env bash
# Trust both ways on the cluster port (docs/cluster.md, "Security"): keys made by `orch keygen`;
# a coordinator that refuses to listen on a network address without them (the address bound
# decides: an interface named 127.lan, in a network namespace); peers without keys, with a
# wrong or an unlisted key that receive nothing; workers that serve only a coordinator they
# authenticate, and run no plan's programs for one they did not (a root worker, and another
# user, nobody, who binds its port); files that grant access and that others could write; and
# floods (idle connections, junk, 100 MB messages, 6 joined peers sending 1,000 MiB whole or in
# pieces) that leave the outputs identical, the real workers connected and the coordinator's
# memory where an undisturbed run's is.
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

# --- a worker serves only a coordinator it authenticates, loopback included ---
port=$(free_port)
status=0
"$ORCH_BIN/orch-worker" --connect "tcp://127.0.0.1:$port" --once >no-server-key.log 2>&1 || status=$?
check "a worker without --server-key refuses a tcp:// coordinator, loopback too (exit 2)" \
  test "$status" = 2
check "its refusal names --server-key and the --insecure opt-out" \
  grep -q "serves only a coordinator it can authenticate.*--server-key.*--insecure" no-server-key.log
status=$(exit_code "$ORCH_BIN/orch-worker" --connect "tcp://127.0.0.1:$port" --insecure \
  --key w1.key --server-key coordinator.pub)
check "--insecure together with keys is refused (exit 2)" test "$status" = 2
mkdir -m 0777 open-dir
status=0
"$ORCH_BIN/orch-worker" --connect "ipc://$PWD/open-dir/c.sock" --once >open-ipc.log 2>&1 || status=$?
check "an ipc:// socket in a directory others can write is not trusted (exit 2)" test "$status" = 2
check "its refusal says why" grep -q "is not private to this user.*can be written by other users" open-ipc.log
status=$(exit_code "$ORCH_BIN/orch-worker" --connect "ipc://@orch-abstract-$$" --once)
check "an abstract ipc://@ socket (anyone may bind it) is not trusted either (exit 2)" test "$status" = 2
port=$(free_port)
status=0
"$ORCH_BIN/orch" run pages.orch --listen "ws://0.0.0.0:$port" --no-journal >ws.log 2>&1 || status=$?
check "a keyless ws:// endpoint is refused (exit 1): only loopback tcp:// and ipc:// go without keys" \
  test "$status" = 1
check "its refusal says so" grep -q "only tcp:// on a loopback address and ipc:// may go without them" ws.log
# A coordinator removes directories of runs that were killed: only its own user's.
foreign=$(mktemp -d "${TMPDIR:-/tmp}/orch-4000000-XXXXXX")
[ "$(id -u)" = 0 ] && chown nobody "$foreign"
"$ORCH_BIN/orch" run pages.orch --workers 1 --no-journal --quiet >/dev/null 2>&1 && rm -rf out
if [ "$(id -u)" = 0 ]; then
  check "another user's leftover-looking directory in the temporary directory is left alone" test -d "$foreign"
else
  check "a leftover directory of this user's killed run is removed" test ! -e "$foreign"
fi
rm -rf "$foreign"
chmod 0666 workers.pub
status=0
"$ORCH_BIN/orch" run pages.orch --listen "tcp://127.0.0.1:$port" --key coordinator.key \
  --authorized-keys workers.pub --no-journal >open-keys.log 2>&1 || status=$?
check "authorized keys anyone can write are refused (exit 1)" test "$status" = 1
check "the refusal names the file and says chmod go-w" \
  grep -q "the authorized-keys file workers.pub can be written by other users (mode 0666).*chmod go-w workers.pub" open-keys.log
chmod 0644 workers.pub
if [ "$(id -u)" = 0 ]; then
  chown nobody workers.pub
  status=$(exit_code "$ORCH_BIN/orch" run pages.orch --listen "tcp://127.0.0.1:$port" \
    --key coordinator.key --authorized-keys workers.pub --no-journal)
  check "authorized keys owned by another user (nobody) are refused (exit 1)" test "$status" = 1
  chown root workers.pub
fi

mkdir -m 0777 open-links
ln -s "$PWD/workers.pub" open-links/workers.pub
status=0
"$ORCH_BIN/orch" run pages.orch --listen "tcp://127.0.0.1:$port" --key coordinator.key \
  --authorized-keys open-links/workers.pub --no-journal >open-link.log 2>&1 || status=$?
check "a link to good keys, in a directory others can write (and so swap it), is refused (exit 1)" \
  test "$status" = 1
check "the refusal names that directory" grep -q "the directory $PWD/open-links can be written by other users" open-link.log
mkdir -m 0700 keys-dir && cp workers.pub keys-dir/
ln -s "$PWD/keys-dir" open-links/keys
status=$(exit_code "$ORCH_BIN/orch" run pages.orch --listen "tcp://127.0.0.1:$port" --key coordinator.key \
  --authorized-keys open-links/keys/workers.pub --no-journal)
check "keys reached through a link to their directory, held by a directory others can write, are refused" \
  test "$status" = 1
mkdir -p -m 0700 open-dir/private
status=0
"$ORCH_BIN/orch-worker" --connect "ipc://$PWD/open-dir/private/c.sock" --once >open-above.log 2>&1 || status=$?
check "an ipc:// socket in a private directory inside one others can write is not trusted (exit 2)" \
  test "$status" = 2

# An exec(...) operator of a plan is code: a worker that did not authenticate its coordinator
# (--insecure) refuses it unless its --allow-operators lists the program.
cat >evil.orch <<ORCH
pipeline evil;
operator evil.x(v: Json) -> Json = exec("/bin/sh", args: ["-c", "id > $PWD/owned.txt"]);
source rows = jsonl("rows.jsonl") as Doc;
sink jsonl(path: "out/evil.jsonl", record: { x: evil.x(rows.id) });
ORCH
cat >upper.py <<'PY'
class Upper:
    def __call__(self, names):
        return [name.upper() for name in names]
PY
cat >upper.orch <<'ORCH'
pipeline upper;
operator text.upper(name: String) -> String = python("upper.py", class: "Upper");
source rows = jsonl("rows.jsonl") as Doc;
sink jsonl(path: "out/upper.jsonl", record: { name: text.upper(rows.name as String) });
ORCH
serve_insecurely() { # serve_insecurely NAME PLAN WORKER-FLAGS...: a keyless loopback run, one worker
  local name=$1 plan=$2; shift 2
  rm -rf out
  local port; port=$(free_port)
  timeout 60 "$ORCH_BIN/orch" run "$plan" --listen "tcp://127.0.0.1:$port" --insecure --no-journal \
    >"$name.log" 2>&1 &
  local run=$!; pids+=("$run")
  await_port "$port"
  timeout 60 "$ORCH_BIN/orch-worker" --connect "tcp://127.0.0.1:$port" --insecure --once "$@" \
    >"$name-worker.log" 2>&1 || true
  local status=0; wait "$run" || status=$?
  echo "$status"
}
status=$(serve_insecurely evil evil.orch)
check "an --insecure worker refuses a plan's exec(/bin/sh) (the run fails, status 1)" test "$status" = 1
check "nothing ran: no owned.txt" test ! -e owned.txt
check "the worker says why" grep -q "does not run operator evil.x (exec /bin/sh) for a coordinator it has not authenticated" evil-worker.log
check "the coordinator reports the refusal" grep -q "error: .*does not run operator evil.x" evil.log
status=$(serve_insecurely upper-refused upper.orch)
check "an --insecure worker refuses python(...) operators too" test "$status" = 1
printf '# programs this worker runs for anyone\npython %s/upper.py\n' "$PWD" >allowed.txt
status=$(serve_insecurely upper-allowed upper.orch --allow-operators allowed.txt)
check "an --insecure worker runs a python(...) operator its --allow-operators lists" test "$status" = 0
check "with the operator's results" grep -q '"name": *"DOC-7"' out/upper.jsonl
rm -rf out
# Python operators do not import from the working directory (anyone who can write it could
# plant a module the bridge imports).
printf 'open("%s/hijacked.txt", "w").write("hijacked")\nfrom importlib import import_module\n' "$PWD" >msgpack.py
status=0
"$ORCH_BIN/orch" run upper.orch --no-journal --quiet >cwd-import.log 2>&1 || status=$?
check "a python(...) operator run beside a planted msgpack.py works (status 0)" test "$status" = 0
check "and did not import it" test ! -e hijacked.txt
PYTHONPATH=/nonexistent: "$ORCH_BIN/orch" run upper.orch --no-journal --quiet >cwd-import2.log 2>&1 || true
check "nor with an empty entry in PYTHONPATH (which Python reads as the working directory)" test ! -e hijacked.txt
rm -f msgpack.py; rm -rf out
# Ctrl-C while the program compiles leaves the outputs of the previous run as they were.
"$python" -c '
print("pipeline big;\nsource rows = jsonl(\"rows.jsonl\") as Doc;\ns0 = test.identity(rows);")
for i in range(1, 20000):
    print("s%d = test.identity(s%d);" % (i, i - 1))
print("sink jsonl(path: \"out/big.jsonl\", record: { last: s19999 });")' >big.orch
mkdir -p out && echo '{"previous": true}' >out/big.jsonl
"$ORCH_BIN/orch" run big.orch --in-process --no-journal >big.log 2>&1 &
run=$!
# Once it catches SIGINT (a background job starts with it ignored), while it compiles.
for _ in $(seq 200); do
  grep -q '^SigCgt:.*[2367abef]$' "/proc/$run/status" 2>/dev/null && break; sleep 0.01
done
kill -INT "$run"
status=0; wait "$run" || status=$?
check "Ctrl-C while the program compiles stops it (status 130)" test "$status" = 130
check "... leaving the previous outputs untouched" test "$(cat out/big.jsonl)" = '{"previous": true}'
rm -rf out
status=$(serve_insecurely evil-listed evil.orch --allow-operators allowed.txt)
check "an exec program the list does not name stays refused" test "$status" = 1
check "still nothing ran" test ! -e owned.txt
check "the worker names the list" grep -q "not in the worker's --allow-operators allowed.txt" evil-listed-worker.log
chmod 0666 allowed.txt
status=$(exit_code "$ORCH_BIN/orch-worker" --connect "tcp://127.0.0.1:$port" --insecure \
  --allow-operators allowed.txt)
check "an allow-list others can write is refused (exit 2)" test "$status" = 2
chmod 0644 allowed.txt

# Results larger than a coordinator without keys takes at once (64 KiB) come in pieces; one
# over 64 MiB fails its batch, saying why, and the run goes on.
cat >blobs.orch <<'ORCH'
pipeline blobs;
source rows = jsonl("rows.jsonl") as Doc;
sink files(dir: "out/blobs", name: rows.name as String, ext: ".bin",
           content: test.blob(rows.id, bytes: 300000) { batch: 4 });
ORCH
head -2 rows.jsonl >two.jsonl
sed 's/rows.jsonl/two.jsonl/; s/300000/70000000/; s/pipeline blobs/pipeline huge/' blobs.orch >huge.orch
rm -rf out
"$ORCH_BIN/orch" run blobs.orch --in-process --quiet --no-journal 2>/dev/null
mv out expected-blobs
status=$(serve_insecurely blobs blobs.orch)
check "a run whose 300 KB results come in pieces completes (status 0)" test "$status" = 0
check "every result arrived whole, as in-process" diff -r expected-blobs out
rm -rf out
status=$(serve_insecurely huge huge.orch)
check "results over 64 MiB fail their rows, and the run ends (status 2)" test "$status" = 2
check "each says why" test "$(grep -c "the result of this batch is a message of .* bytes, more than a coordinator without keys takes from a worker (64 MiB): run it with keys" huge.errors.jsonl)" = 2
rm -rf out

# A peer told MORE that then sends only heartbeats, or trickles a byte at a time, cannot hold
# the 64 MiB for ever: it is lost, and a real worker's results in pieces go through.
hog_run() { # hog_run NAME PIECE-HOG-FLAGS...: blobs.orch without keys, the hog and one worker
  local name=$1; shift
  local port; port=$(free_port)
  rm -rf out
  timeout 60 "$ORCH_BIN/orch" run blobs.orch --listen "tcp://127.0.0.1:$port" --insecure \
    --no-journal --heartbeat-ms 200 >"$name.log" 2>&1 &
  local run=$!; pids+=("$run")
  await_port "$port"
  peer piece-hog "tcp://127.0.0.1:$port" "$@" >"$name.json" &
  local hog=$!
  sleep 0.5
  timeout 60 "$ORCH_BIN/orch-worker" --connect "tcp://127.0.0.1:$port" --insecure --once --quiet \
    >"$name-worker.log" 2>&1 || true
  local status=0; wait "$run" || status=$?
  wait "$hog" || true
  check "$name: the run completes (status 0)" test "$status" = 0
  check "$name: with every result whole" diff -r expected-blobs out
  check "$name: the hog was told MORE, then declared lost" \
    test "$("$python" -c 'import json; d = json.load(open("'"$name"'.json")); print(d["more"], d["lost"] > 0)')" = "1 True"
  rm -rf out
}
hog_run hog --seconds 4
check "the coordinator says why" \
  grep -q "asked for the rest of a message in pieces and sent none for 1000 ms" hog.log
hog_run trickle --seconds 6 --trickle --megabytes 1
check "... and why the trickling one" grep -q "it sent a message in pieces slower than 1024 KiB/s" trickle.log

# The issue's attack: a root worker left running, and another user (nobody) who binds the
# coordinator's port after a run. A worker with keys pins its coordinator run after run.
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null && setpriv --reuid=nobody --regid=nogroup \
  --clear-groups test -x "$ORCH_BIN/orch" 2>/dev/null; then
  mkdir -m 0777 nobody
  cp rows.jsonl evil.orch nobody/ && chmod 0755 nobody/* && chmod 0711 .
  port=$(free_port)
  "$ORCH_BIN/orch-worker" --connect "tcp://127.0.0.1:$port" --key w1.key --server-key coordinator.pub \
    --name pinned --connect-timeout 2 >pinned.log 2>&1 &
  pinned=$!; pids+=("$pinned")
  status=0
  timeout 60 "$ORCH_BIN/orch" run pages.orch --listen "tcp://127.0.0.1:$port" --key coordinator.key \
    --authorized-keys workers.pub --no-journal --quiet >pinned-run.log 2>&1 || status=$?
  check "the pinned worker serves its coordinator (status 0)" test "$status" = 0
  rm -rf out
  (cd nobody && exec timeout 6 setpriv --reuid=nobody --regid=nogroup --clear-groups \
    "$ORCH_BIN/orch" run evil.orch --listen "tcp://127.0.0.1:$port" --insecure --no-journal) \
    >nobody-run.log 2>&1 || true
  check "nobody's coordinator on the same port got no worker" grep -q "0 worker(s) joined\|waiting for workers" nobody-run.log
  check "the root worker ran nothing of it" test ! -e owned.txt
  check "the root worker says the coordinator is not the one it pins" \
    grep -q "cannot join the coordinator at tcp://127.0.0.1:$port" pinned.log
  kill -TERM "$pinned"; wait "$pinned" || true
  # A worker on an ipc:// socket checks it before every connection: a directory that changed
  # hands between runs (removed by a cleanup, made again by nobody) is not trusted.
  private=$(mktemp -d "${TMPDIR:-/tmp}/orch-ipc-test-XXXXXX")
  "$ORCH_BIN/orch-worker" --connect "ipc://$private/c.sock" --name ipc-worker --connect-timeout 2 \
    >ipc-worker.log 2>&1 &
  ipc_worker=$!; pids+=("$ipc_worker")
  status=0
  timeout 60 "$ORCH_BIN/orch" run pages.orch --listen "ipc://$private/c.sock" --no-journal \
    --quiet >ipc-run.log 2>&1 || status=$?
  check "a worker on a private ipc:// socket serves its run (status 0)" test "$status" = 0
  rm -rf out "$private"
  setpriv --reuid=nobody --regid=nogroup --clear-groups mkdir -m 0777 "$private"
  (cd nobody && exec timeout 8 setpriv --reuid=nobody --regid=nogroup --clear-groups \
    "$ORCH_BIN/orch" run evil.orch --listen "ipc://$private/c.sock" --no-journal) \
    >nobody-ipc.log 2>&1 || true
  check "the worker ran nothing for nobody's coordinator in the remade directory" test ! -e owned.txt
  check "it said why it did not connect" \
    grep -q "not connecting: ipc://$private/c.sock is not private to this user" ipc-worker.log
  kill -TERM "$ipc_worker"; wait "$ipc_worker" || true
  rm -rf "$private"
  chmod 0700 .
else
  echo "note: the unprivileged-user scenario needs root and setpriv (skipped)"
fi

# --- "loopback" is the address bound, not the text (network namespaces) ---
ns=orch-sec-$$
if ip netns add "$ns" 2>/dev/null; then
  ip -n "$ns" link set lo up
  ip -n "$ns" link add v-peer type veth peer name 127.lan
  ip -n "$ns" addr add 10.77.0.1/24 dev 127.lan
  ip -n "$ns" link set 127.lan up && ip -n "$ns" link set v-peer up
  status=0
  ip netns exec "$ns" "$ORCH_BIN/orch" run pages.orch --listen tcp://127.lan:47712 --no-journal \
    >lan.log 2>&1 || status=$?
  check "an interface named 127.lan without keys is refused (exit 1)" test "$status" = 1
  check "the refusal names the address it bound" \
    grep -q "refusing to listen on tcp://127.lan:47712 without keys: it binds 10.77.0.1, not a loopback" lan.log
  check "and wrote nothing" test ! -e out
  status=0
  ip netns exec "$ns" "$ORCH_BIN/orch" run pages.orch --listen "tcp://127.0.0.1;10.77.0.1:47713" \
    --no-journal >mixed.log 2>&1 || status=$?
  check "a mixed source;address endpoint without keys is refused (exit 1)" test "$status" = 1
  status=0
  ip netns exec "$ns" "$ORCH_BIN/orch" run pages.orch --listen "tcp://[::1]:47714" --workers 1 \
    --no-journal --quiet >v6.log 2>&1 || status=$?
  check "IPv6 loopback without keys runs, its local worker on the private socket (status 0)" \
    test "$status" = 0
  check "its outputs are the in-process outputs" diff -r expected out
  rm -rf out
  ip netns del "$ns"
else
  echo "note: network namespaces are not permitted here: the 127.lan checks are skipped"
fi

# --- floods: 1,000 idle connections, 6 x 100 MB of junk, 100 MB ZMTP messages ---
flood_run() { # flood_run NAME COORDINATOR-FLAGS... : slow.orch under a flood, 2 real workers
  local name=$1; shift
  local port; port=$(free_port)
  # 512 descriptors: 1,000 connections would take them all if peers were not bounded.
  (ulimit -n 512; exec timeout 120 "$ORCH_BIN/orch" run slow.orch --listen "tcp://127.0.0.1:$port" \
    "$@" --no-journal --heartbeat-ms 200 >"$name.log" 2>&1) &
  local run=$!; pids+=("$run")
  await_port "$port"
  local keys=(--insecure)
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

# --- 6 peers that say hello (a coordinator without keys welcomes anyone) and each send one
# message of 1,000 MiB: the endpoint takes 64 KiB messages (larger ones come in pieces, within
# 64 MiB for all workers together), so the coordinator's memory stays where it was ---
peak_rss_run() { # peak_rss_run NAME [FLOOD-MODE]: slow.orch without keys on loopback, 2
  # workers, under a flood of hostile_peer.py's FLOOD-MODE; the coordinator's peak RSS (KiB) in
  # NAME.rss
  local name=$1 flood=${2:-}
  local port; port=$(free_port)
  /usr/bin/time -f %M -o "$name.rss" timeout 120 "$ORCH_BIN/orch" run slow.orch \
    --listen "tcp://127.0.0.1:$port" --insecure --no-journal --heartbeat-ms 200 >"$name.log" 2>&1 &
  local run=$!; pids+=("$run")
  await_port "$port"
  for w in w1 w2; do
    "$ORCH_BIN/orch-worker" --connect "tcp://127.0.0.1:$port" --name "$w" --once --quiet \
      --insecure >"$name-$w.log" 2>&1 &
    pids+=("$!")
  done
  for _ in $(seq 100); do [ "$(grep -c "joined" "$name.log")" = 2 ] && break; sleep 0.1; done
  if [ -n "$flood" ]; then
    peer "$flood" "tcp://127.0.0.1:$port" --count 6 --megabytes 1000 --seconds 2 >"$name.json" &
  fi
  local status=0; wait "$run" || status=$?
  wait
  check "$name: the run completes (status 0)" test "$status" = 0
  check "$name: every row was written, as in-process" diff -r expected out
  [ "$failures" -eq 0 ] || cat "$name.log"
  rm -rf out
}
peak_rss_run undisturbed
peak_rss_run hello-flood hello-flood
quiet_rss=$(tail -1 undisturbed.rss) flood_rss=$(tail -1 hello-flood.rss)
check "the 6 flooding peers were welcomed (they are workers to a coordinator without keys)" \
  test "$(json_field '["welcomed"]' <hello-flood.json)" = 6
echo "coordinator peak RSS: $quiet_rss KiB undisturbed, $flood_rss KiB under 6 x 1,000 MiB"
check "6 x 1,000 MiB messages leave the coordinator within 100 MiB of an undisturbed run" \
  test "$flood_rss" -lt $((quiet_rss + 100 * 1024))
peak_rss_run piece-flood piece-flood
pieces_rss=$(tail -1 piece-flood.rss)
echo "coordinator peak RSS under 6 x 1,000 MiB of pieces sent unasked: $pieces_rss KiB"
check "pieces sent without the coordinator's MORE leave it within 100 MiB too" \
  test "$pieces_rss" -lt $((quiet_rss + 100 * 1024))
check "the coordinator refused the pieces sent out of turn" \
  grep -q "a piece refused: it sent a piece out of turn" piece-flood.log

finish_checks
