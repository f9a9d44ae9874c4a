#!/usr/bin/python3
"""Requests to a model server with many in flight (docs/models.md): llm.chat against the repo's
test server (tests/e2e/lib/model_server.py) with a fixed latency and a number of slots, one
replica with in_flight equal to the slots, in process and on worker processes.

Reported, per executor: requests/s; the ideal (slots / the configured latency) and the bound the
server itself allowed (slots / its measured median latency, which adds its own Python overhead
on these 2 cores); and Orch's CPU per request, user and system apart, marginal: the CPU of orch
(and its workers) for N requests less that for N/2, over N/2 (start-up and the plan's fixed
costs cancel), next to the same for a pipeline of the same shape whose Call computes instead
(test.identity, batch 1): the difference is what a request costs beyond any batch of one row.
System time includes the loopback TCP stack, part of which runs the server's side of each
packet in the sender's context.

Below the engine (orch_bench_http_floor, built beside orch): the same requests from a bare
libcurl client (multi interface over epoll, one thread: the least libcurl does per request) and
from Orch's HTTP client alone (ServiceClient, without a run around it), marginal the same way.

    bench/llm/run.py ORCH WORK [--quick]
"""

import json
import os
import resource
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SERVER = os.path.join(REPO, "tests", "e2e", "lib", "model_server.py")
LATENCY = 0.2
SLOTS = 64


def start_server(work):
    port_file = os.path.join(work, "server.port")
    if os.path.exists(port_file):
        os.remove(port_file)
    server = subprocess.Popen(["/usr/bin/python3", SERVER, "--port-file", port_file,
                               "--latency", str(LATENCY), "--slots", str(SLOTS)],
                              stderr=subprocess.DEVNULL)
    for _ in range(100):
        if os.path.exists(port_file):
            break
        time.sleep(0.1)
    with open(port_file) as f:
        return server, "http://127.0.0.1:%s/v1" % f.read().strip()


def write_inputs(work, count):
    path = os.path.join(work, "prompts-%d.jsonl" % count)
    with open(path, "w") as out:
        for i in range(count):
            out.write(json.dumps({"prompt": "benchmark prompt number %d of %d" % (i, count)}) + "\n")
    return path


def program(work, name, inputs, call):
    path = os.path.join(work, name + ".orch")
    with open(path, "w") as out:
        out.write(f"""pipeline {name};
source rows = jsonl("{inputs}") as Row;
prompt = rows.prompt as String;
answer = {call};
sink jsonl(path: "{work}/{name}.out.jsonl", record: {{ prompt: prompt, answer: answer }});
""")
    return path


def run(orch, path, flags, work):
    """Wall seconds, CPU seconds of orch and its children (workers), and the metrics."""
    metrics = os.path.join(work, "metrics.json")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    subprocess.run([orch, "run", path, "--quiet", "--no-journal", "--metrics", metrics] + flags,
                   check=True, cwd=work, stderr=subprocess.DEVNULL)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime)
    with open(metrics) as f:
        return wall, cpu, json.load(f)


def main():
    orch, work = sys.argv[1], sys.argv[2]
    quick = "--quick" in sys.argv
    count = 1000 if quick else 4000
    server, url = start_server(work)
    rows = []
    floors = []
    floor_tool = os.path.join(os.path.dirname(orch), "orch_bench_http_floor")
    try:
        if os.path.exists(floor_tool):
            for mode in ("bare", "client"):
                measured = subprocess.run([floor_tool, mode, url, str(count), str(SLOTS)],
                                          check=True, capture_output=True, text=True).stdout
                floors.append(json.loads(measured))
        for executor, flags in (("in process", ["--in-process"]), ("2 worker processes", ["--workers", "2"])):
            result = {"executor": executor}
            for label, call in (
                    ("llm", f'llm.chat(prompt, model: "orch-test", endpoint: "{url}") {{ in_flight: {SLOTS} }}'),
                    ("compute", "test.identity(prompt) { batch: 1 }")):
                cpus = {}
                for n in (count // 2, count):
                    path = program(work, f"{label}{n}", write_inputs(work, n), call)
                    wall, cpu, metrics = run(orch, path, flags, work)
                    cpus[n] = cpu
                    if label == "llm" and n == count:
                        service = metrics["calls"][0]["service"]
                        assert service["requests"] == n and service["failed_requests"] == 0, service
                        result["requests_per_second"] = n / wall
                        result["server_p50_seconds"] = service["latency_seconds"]["p50"]
                        result["wall_seconds"] = wall
                for part, index in (("user", 0), ("system", 1)):
                    result[f"{label}_{part}_us_per_row"] = (
                        (cpus[count][index] - cpus[count // 2][index]) / (count // 2) * 1e6)
            for part in ("user", "system"):
                result[f"request_{part}_us"] = (result[f"llm_{part}_us_per_row"] -
                                                result[f"compute_{part}_us_per_row"])
            rows.append(result)
    finally:
        server.terminate()
        server.wait()
    ideal = SLOTS / LATENCY
    print(f"\n### Model server requests ({count} llm.chat requests; a server with {SLOTS} slots and "
          f"{LATENCY * 1000:.0f} ms latency; one replica, in_flight {SLOTS})\n")
    print("| executor | requests/s | of ideal (%.0f/s) | of the server's bound | Orch CPU per "
          "request, user + system (µs) | per row of a computing Call (µs) | a request beyond a "
          "row, user + system (µs) |" % ideal)
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        bound = SLOTS / r["server_p50_seconds"]
        print(f"| {r['executor']} | {r['requests_per_second']:.0f} | "
              f"{r['requests_per_second'] / ideal:.2f} | {r['requests_per_second'] / bound:.2f} "
              f"(median latency {r['server_p50_seconds'] * 1000:.0f} ms) | "
              f"{r['llm_user_us_per_row']:.0f} + {r['llm_system_us_per_row']:.0f} | "
              f"{r['compute_user_us_per_row'] + r['compute_system_us_per_row']:.0f} | "
              f"{r['request_user_us']:.0f} + {r['request_system_us']:.0f} |")
    names = {"bare": "a bare libcurl client (multi over epoll, one thread)",
             "client": "Orch's HTTP client alone (ServiceClient)"}
    if floors:
        print("\nBelow the engine, the same requests (CPU per request, user + system, marginal):\n")
        for floor in floors:
            print(f"- {names[floor['mode']]}: {floor['user_us']:.0f} + {floor['system_us']:.0f} µs")
    else:
        print(f"\n({floor_tool} is not built: the CPU below the engine is not measured)")
    out = os.environ.get("ORCH_BENCH_RESULTS", os.path.join(REPO, "build", "bench"))
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "llm.json"), "w") as f:
        json.dump({"count": count, "latency": LATENCY, "slots": SLOTS, "rows": rows,
                   "below_the_engine": floors}, f, indent=1)


if __name__ == "__main__":
    main()
