#!/usr/bin/env bash
# Model servers as operators (docs/models.md), against a real HTTP server process (the repo's
# OpenAI-compatible test server, tests/e2e/lib/model_server.py): llm.chat with injected faults
# (429 and 503 with Retry-After, 500, a reset connection, a slow answer past request_timeout, a
# context too long, a reply that is not JSON) on worker processes and in process, every row
# accounted and equal to the model's direct answer, retries and tokens counted in the summary,
# metrics and report; llm.json against a schema; llm.embed in batches (a refused text fails
# alone); API keys from the environment and from a file, never written anywhere; no endpoint;
# a server that is not there; requests_per_second; two endpoints sharing the requests; a Call's
# timeout ending a request that keeps failing; in_flight refused where it means nothing.
set -euo pipefail
: "${ORCH_BIN:?set by ctest}" "${ORCH_SOURCE_DIR:?set by ctest}"
# shellcheck source=lib/checks.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib/checks.bash"
python=/usr/bin/python3
lib="$ORCH_SOURCE_DIR/tests/e2e/lib"
# The checks import the test model to compare with its direct answers.
export PYTHONPATH="$lib"
unset OPENAI_API_KEY ORCH_LLM_ENDPOINT

workdir=$(mktemp -d)
trap 'pkill -f "$workdir" 2>/dev/null || true; rm -rf "$workdir"' EXIT
cd "$workdir"
orch() { "$ORCH_BIN/orch" "$@"; }

# server NAME ARGS...: starts a model server; its base URL is in $url.
server() {
  local name=$1; shift
  rm -f "$workdir/$name.port"
  $python "$lib/model_server.py" --port-file "$workdir/$name.port" "$@" >"$name.log" 2>&1 &
  for _ in $(seq 100); do [ -s "$workdir/$name.port" ] && break; sleep 0.1; done
  url="http://127.0.0.1:$(cat "$workdir/$name.port")/v1"
}
stop_servers() { pkill -f "$workdir/.*\.port" 2>/dev/null || true; sleep 0.2; }
stats() { curl -s "$1/stats"; }

$python - <<'PY'
import json
plain = ["the quick brown fox jumps over the lazy dog", "hello world", "pages of a scanned book",
         "orch batches children across parents", "a b c d e f g h i j", "lineage tracks every row",
         "one more prompt", "Transcribe this page", "short", "what is the capital of France",
         "ten little words make a sentence that is long enough", "last plain prompt"]
faulty = ["[429x2] rate limited twice", "[503x1] overloaded once", "[500x2] broken twice",
          "[resetx1] connection dropped once", "[slowx1] too slow once", "[toolong] " + "word " * 20,
          "[malformed] a reply that is not JSON"]
with open("prompts.jsonl", "w") as out:
    for prompt in plain[:6] + faulty + plain[6:]:
        out.write(json.dumps({"prompt": prompt}) + "\n")
PY

cat > chat.orch <<'EOF'
pipeline chat;
param endpoint: String = "";
source rows = jsonl("prompts.jsonl") as Row;
prompt = rows.prompt as String;
answer = llm.chat(prompt, model: "orch-test", endpoint: endpoint, request_timeout: 1s,
                  max_retries: 3) { in_flight: 8 };
sink jsonl(path: "out/answers.jsonl", record: { prompt: prompt, answer: answer });
EOF

# check_chat MODE: the outputs, errors journal, summary and metrics of one run of chat.orch.
check_chat() {
  local mode=$1
  check_equal "$mode: the run ends with the two refused rows failed (exit 2)" 2 "$status"
  check "$mode: every row that succeeded holds the model's direct answer, the others are the two refused" \
    $python - "$mode" <<'PY'
import json, sys
from model_server import chat_answer
prompts = [json.loads(l)["prompt"] for l in open("prompts.jsonl")]
written = {}
for line in open("out/answers.jsonl"):
    row = json.loads(line)
    assert row["answer"] == chat_answer(row["prompt"]), row
    written[row["prompt"]] = row["answer"]
failed = {}
for line in open("chat.errors.jsonl"):
    entry = json.loads(line)
    failed[prompts[entry["row"]]] = entry["message"]
assert set(written) | set(failed) == set(prompts) and not set(written) & set(failed), (written, failed)
assert sorted(p.split()[0] for p in failed) == ["[malformed]", "[toolong]"], failed
toolong = next(m for p, m in failed.items() if p.startswith("[toolong]"))
assert "HTTP 400" in toolong and "maximum context length is 64 tokens" in toolong, toolong
malformed = next(m for p, m in failed.items() if p.startswith("[malformed]"))
assert "not a JSON object" in malformed, malformed
PY
  check "$mode: the metrics count each request, its retries (2+1+2+1+1), the refused ones and the tokens" \
    $python - <<'PY'
import json
from model_server import chat_answer, tokens
metrics = json.load(open("chat.json"))
call = metrics["calls"][0]
service = call["service"]
prompts = [json.loads(l)["prompt"] for l in open("prompts.jsonl")]
ok = [p for p in prompts if not p.startswith(("[toolong]", "[malformed]"))]
assert service["retries"] == 7, service
assert service["requests"] == len(prompts) + 7, service
assert service["failed_requests"] == 2, service
assert service["prompt_tokens"] == sum(tokens(p) for p in ok), service
assert service["completion_tokens"] == sum(tokens(chat_answer(p)) for p in ok), service
assert 0 < service["latency_seconds"]["p50"] <= service["latency_seconds"]["p99"], service
assert call["in_flight"] == 8, call
assert metrics["tokens"]["total"] == service["prompt_tokens"] + service["completion_tokens"]
PY
  check "$mode: the summary says how many requests, retries and failures" \
    grep -q "requests: $((19 + 7)) (7 retries, 2 failed), up to 8 batches open per replica" "chat.$mode.log"
  check "$mode: at most in_flight requests were open at the server, and more than one" \
    $python -c "
import json, sys
m = json.load(open('stats.json'))['max_open']
sys.exit(0 if 1 < m <= 8 else 1)"
  check "$mode: the 429s' Retry-After (0.3 s) was waited for before each retry" $python -c "
import json
times = [t for t, p, a in json.load(open('stats.json'))['arrivals'] if p.startswith('[429x2]')]
assert len(times) == 3 and all(b - a >= 0.29 for a, b in zip(times, times[1:])), times"
}

for mode in workers in-process; do
  server chat --latency 0.05 --retry-after 0.3 --slow 3
  rm -rf out chat.errors.jsonl chat.run
  flags=()
  [ "$mode" = in-process ] && flags=(--in-process)
  status=0
  orch run "${flags[@]}" chat.orch --set endpoint="$url" --metrics chat.json 2>"chat.$mode.log" ||
    status=$?
  stats "$url" >stats.json
  check_chat "$mode"
  stop_servers
done
orch report chat.json -o chat.html
check "the report lists the Call's requests, retries and tokens" \
  grep -q "<h2>Model requests</h2>.*<td>answer</td><td>26</td><td>7</td><td>2</td>" chat.html

# --- llm.json: answers that match the schema, one that does not ------------------------------
server structured --latency 0.01
printf '%s\n' '{"prompt": "the first of three"}' '{"prompt": "[badschema] not matching"}' \
  '{"prompt": "one two three four five six seven eight nine ten"}' >structured.jsonl
cat > structured.orch <<EOF
pipeline structured;
source rows = jsonl("structured.jsonl") as Row;
prompt = rows.prompt as String;
facts = llm.json(prompt, model: "orch-test", endpoint: "$url",
                 json_schema: "{\"type\": \"object\", \"properties\": {\"words\": {\"type\": \"integer\"}, \"first\": {\"type\": \"string\"}, \"long\": {\"type\": \"boolean\"}}, \"required\": [\"words\", \"first\", \"long\"], \"additionalProperties\": false}");
sink jsonl(path: "out/facts.jsonl", record: { prompt: prompt, facts: facts });
EOF
status=0
orch run structured.orch 2>structured.log || status=$?
check_equal "llm.json: the answer that does not match the schema fails its row (exit 2)" 2 "$status"
sed 's/\\"type\\": \\"integer\\"/\\"type\\": \\"integr\\"/' structured.orch >typo.orch
status=0
orch run typo.orch 2>typo.log || status=$?
check_equal "llm.json: a schema with an unknown type stops the run before it starts" 1 "$status"
check "... naming it" grep -q 'json_schema at .properties.words: unknown type "integr"' typo.log
check "llm.json: the others are the model's JSON, the mismatch is named" $python - <<'PY'
import json
from model_server import json_answer
rows = [json.loads(l) for l in open("out/facts.jsonl")]
assert sorted(r["prompt"] for r in rows) == ["one two three four five six seven eight nine ten", "the first of three"]
assert all(r["facts"] == json_answer(r["prompt"]) for r in rows), rows
errors = [json.loads(l) for l in open("structured.errors.jsonl")]
assert len(errors) == 1 and "does not match json_schema at .words: expected integer, got string" in errors[0]["message"], errors
PY

# --- a reply with a byte that is not UTF-8: its row fails, the journal and metrics stay valid ---
printf '%s\n' '{"prompt": "[nonutf8] caf"}' '{"prompt": "fine"}' >nonutf8.jsonl
cat > nonutf8.orch <<EOF
pipeline nonutf8;
source rows = jsonl("nonutf8.jsonl") as Row;
answer = llm.chat(rows.prompt as String, model: "orch-test", endpoint: "$url");
sink jsonl(path: "out/nonutf8.jsonl", record: { answer: answer });
EOF
status=0
orch run nonutf8.orch --metrics nonutf8.json --errors nonutf8.errors.jsonl 2>nonutf8.log || status=$?
check_equal "a reply that is not UTF-8 fails its row, not the run (exit 2)" 2 "$status"
check "the errors journal and the metrics are valid UTF-8 JSON" $python -c '
import json
errors = [json.loads(l) for l in open("nonutf8.errors.jsonl", encoding="utf-8")]
assert len(errors) == 1 and "not a JSON object" in errors[0]["message"], errors
json.load(open("nonutf8.json", encoding="utf-8"))'

# --- llm.embed: batches of texts, one refused text fails alone --------------------------------
$python -c '
import json
texts = ["alpha beta", "gamma delta epsilon", "[toolong] refused text", "zeta eta theta", "abc", "hhh ggg"]
with open("texts.jsonl", "w") as out:
    for t in texts: out.write(json.dumps({"text": t}) + "\n")'
cat > embed.orch <<EOF
pipeline embed;
source rows = jsonl("texts.jsonl") as Row;
text = rows.text as String;
vector = llm.embed(text, model: "orch-test", endpoint: "$url") { batch: 4 };
sink jsonl(path: "out/vectors.jsonl", record: { text: text, vector: vector });
EOF
status=0
orch run embed.orch --metrics embed.json 2>embed.log || status=$?
check_equal "llm.embed: the refused text fails (exit 2)" 2 "$status"
check "llm.embed: the other texts (its batch-mates included) have the model's vectors" $python - <<'PY'
import json
from model_server import embedding
rows = [json.loads(l) for l in open("out/vectors.jsonl")]
assert len(rows) == 5 and not any(r["text"].startswith("[toolong]") for r in rows), rows
for r in rows:
    assert all(abs(a - b) < 1e-12 for a, b in zip(r["vector"], embedding(r["text"]))), r
errors = [json.loads(l) for l in open("embed.errors.jsonl")]
assert len(errors) == 1 and "maximum context length" in errors[0]["message"], errors
# Two batches (4 + 2 texts; a first batch is whole under the default budget, docs/runtime.md
# "The value budget"): the refused request of 4 sent again one text at a time.
service = json.load(open("embed.json"))["calls"][0]["service"]
assert service["requests"] == 2 + 4 and service["failed_requests"] == 2, service
PY
stop_servers

# --- API keys: from the environment or a file, never written anywhere -------------------------
server keyed --api-key sekrit-key-123
printf '%s\n' '{"prompt": "a keyed request"}' >keyed.jsonl
cat > keyed.orch <<EOF
pipeline keyed;
param key_file: String = "";
source rows = jsonl("keyed.jsonl") as Row;
answer = llm.chat(rows.prompt as String, model: "orch-test", endpoint: "$url",
                  api_key_env: "TEST_MODEL_KEY", api_key_file: key_file);
sink jsonl(path: "out/keyed.jsonl", record: { answer: answer });
EOF
status=0
orch run keyed.orch --errors nokey.errors.jsonl 2>nokey.log || status=$?
check_equal "without the key the row fails (exit 2)" 2 "$status"
check "with the server's 401 message" grep -q "HTTP 401 from .*: invalid API key" nokey.errors.jsonl
rm -rf keyed.run out
status=0
TEST_MODEL_KEY=sekrit-key-123 orch run keyed.orch --metrics keyed.json 2>keyed.log || status=$?
check_equal "with the key in the named environment variable the row succeeds" 0 "$status"
echo "sekrit-key-123" >key.txt
rm -rf keyed.run out
status=0
orch run keyed.orch --set key_file="$workdir/key.txt" --errors file.errors.jsonl 2>file.log || status=$?
check_equal "with the key in a file the row succeeds" 0 "$status"
printf '%s\n' '{"prompt": "[echokey] a server that repeats the key"}' >keyed.jsonl
rm -rf keyed.run out
status=0
TEST_MODEL_KEY=sekrit-key-123 orch run keyed.orch --errors echo.errors.jsonl --metrics echo.json \
  2>echo.log || status=$?
check "a server that repeats the key in its error: the key is replaced in the message" \
  grep -q 'Incorrect API key provided: Bearer \[API key\]' echo.errors.jsonl
rm -rf keyed.run
status=0
TEST_MODEL_KEY=$'sekrit-key-123\r\nX-Injected: 1' orch run keyed.orch 2>crlf.log || status=$?
check_equal "a key with a line break stops the run before it starts (exit 1)" 1 "$status"
check "saying why" grep -q "the API key in \$TEST_MODEL_KEY holds a control character" crlf.log
"$ORCH_BIN/orchc" -o keyed.plan keyed.orch
check "the key is in no log, journal, metrics file or plan" \
  test -z "$(grep -rl "sekrit-key-123" --exclude=key.txt . || true)"
stop_servers

# --- no endpoint; a server that is not there --------------------------------------------------
cat > nowhere.orch <<'EOF'
pipeline nowhere;
param endpoint: String = "";
source rows = jsonl("keyed.jsonl") as Row;
answer = llm.chat(rows.prompt as String, model: "orch-test", endpoint: endpoint, max_retries: 1);
sink jsonl(path: "out/nowhere.jsonl", record: { answer: answer });
EOF
rm -rf out
status=0
orch run nowhere.orch 2>nowhere.log || status=$?
check_equal "no endpoint: the run stops before it starts (exit 1)" 1 "$status"
check "and says how to give one" grep -q 'no endpoint: give `endpoint: "http://host:8000/v1"` or set ORCH_LLM_ENDPOINT' nowhere.log
check "and writes nothing" test ! -e out/nowhere.jsonl
status=0
port=$($python -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
ORCH_LLM_ENDPOINT="http://127.0.0.1:$port/v1" orch run nowhere.orch --errors gone.errors.jsonl \
  2>gone.log || status=$?
check_equal "a server that is not there: the row fails after its retries, the run ends (exit 2)" 2 "$status"
check "with the connection error" grep -q "Could not connect to server\|Couldn't connect to server" gone.errors.jsonl
for bad in "http://127.0.0.1:99999/v1|is not a valid URL" \
  "http://127.0.0.1:8000/v1/chat/completions|names a path; give the base URL (\"http://127.0.0.1:8000/v1\")"; do
  status=0
  orch run nowhere.orch --set endpoint="${bad%%|*}" 2>badurl.log || status=$?
  check_equal "endpoint ${bad%%|*}: refused before the run starts (exit 1)" 1 "$status"
  check "... saying why" grep -qF "${bad#*|}" badurl.log
done

# --- requests_per_second, two endpoints, a Call's timeout -------------------------------------
server first --latency 0.01
first=$url
server second --latency 0.01
second=$url
$python -c '
import json
with open("many.jsonl", "w") as out:
    for i in range(30): out.write(json.dumps({"prompt": "request number %d" % i}) + "\n")'
cat > limited.orch <<EOF
pipeline limited;
source rows = jsonl("many.jsonl") as Row;
answer = llm.chat(rows.prompt as String, model: "orch-test", endpoint: "$first, $second",
                  requests_per_second: 10.0) { in_flight: 8 };
sink jsonl(path: "out/limited.jsonl", record: { answer: answer });
EOF
orch run limited.orch 2>limited.log
stats "$first" >first.json
stats "$second" >second.json
check "both endpoints served some of the 30 requests, and all were answered" $python -c "
import json
a = json.load(open('first.json'))['by_status'].get('200', 0)
b = json.load(open('second.json'))['by_status'].get('200', 0)
assert a > 0 and b > 0 and a + b == 30, (a, b)
assert sum(1 for _ in open('out/limited.jsonl')) == 30"
check "requests_per_second: no second held more than 10 (+1) requests" $python -c "
import json
times = sorted(t for f in ('first.json', 'second.json') for t, p, a in json.load(open(f))['arrivals'])
worst = max(sum(1 for u in times if t <= u < t + 1.0) for t in times)
assert worst <= 11, worst"
stop_servers
server slow --latency 0.01 --retry-after 5
printf '%s\n' '{"prompt": "fine"}' '{"prompt": "[429x9] always limited"}' '{"prompt": "also fine"}' >timed.jsonl
cat > timed.orch <<EOF
pipeline timed;
source rows = jsonl("timed.jsonl") as Row;
answer = llm.chat(rows.prompt as String, model: "orch-test", endpoint: "$url") { timeout: 2s };
sink jsonl(path: "out/timed.jsonl", record: { answer: answer });
EOF
status=0
orch run timed.orch --errors timed.errors.jsonl 2>timed.log || status=$?
check_equal "a request whose retry would come after the Call's timeout fails its row alone (exit 2)" 2 "$status"
check "the other rows were answered" test "$(wc -l <out/timed.jsonl)" = 2
check "the failure says the batch's time limit left no room to retry" \
  grep -q "HTTP 429 from .*rate limit reached.*no time left to retry within the batch's time limit" timed.errors.jsonl
stop_servers

# --- in_flight only where it means something ---------------------------------------------------
cat > wrong.orch <<'EOF'
pipeline wrong;
source rows = jsonl("keyed.jsonl") as Row;
size = text.len(rows.prompt as String) { in_flight: 4 };
sink jsonl(path: "out/wrong.jsonl", record: { size: size });
EOF
status=0
"$ORCH_BIN/orchc" wrong.orch -o wrong.plan 2>wrong.log || status=$?
check_equal "in_flight on an operator that computes is refused" 1 "$status"
check "with a message that points at it" grep -q "wrong.orch:3:.*'text.len' runs one batch at a time per replica; \`in_flight\` is for operators that wait on a server" wrong.log

finish_checks
