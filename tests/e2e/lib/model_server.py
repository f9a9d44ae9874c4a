#!/usr/bin/python3
"""A small OpenAI-compatible model server for tests and benchmarks (Python's standard library,
real sockets, HTTP/1.1 keep-alive).

It stands in for vLLM, SGLang, TGI, Ollama or llama.cpp: the same endpoints
(POST /v1/chat/completions, POST /v1/embeddings), the same JSON shapes and error bodies, a
latency and a number of slots like a batching server. Its "model" is deterministic so that tests
can compare what Orch wrote with the model's direct answers (import this module and call
`chat_answer`, `json_answer`, `embedding`):

- chat: "<words> words, <letters> letters: <the prompt's words in reverse order>";
- json (a request with response_format json_schema): {"words": N, "first": "...", "long": bool};
- vision (an image in the message): the image's text as tesseract's command line reads it (the
  stand-in of a VLM OCR model);
- embeddings: 8 numbers, the share of the letters a..h among the text's letters.

Faults are injected by markers in the prompt (or text), counted per prompt so that they are
deterministic: "[429xN]" (the first N attempts get 429 with Retry-After: --retry-after),
"[503xN]", "[500xN]", "[resetxN]" (the connection drops in the middle of the answer), "[slowxN]"
(--slow seconds before answering), and always: "[malformed]" (200 with a body that is not JSON),
"[badschema]" (JSON that does not match the schema), "[toolong]" (400, context too long),
"[nonutf8]" (200 with a byte that is not UTF-8 in the answer), "[echokey]" (401 that repeats the
Authorization header it got, as some proxies do).

GET /stats returns what the server saw: requests by status, the most requests open at once, and
each request's arrival time and prompt.
"""

import argparse
import base64
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MARKER = re.compile(r"\[(429|503|500|reset|slow)x(\d+)\]")


def chat_answer(prompt):
    words = prompt.split()
    letters = sum(1 for c in prompt if c.isalpha())
    return f"{len(words)} words, {letters} letters: {' '.join(reversed(words))}"


def json_answer(prompt):
    words = prompt.split()
    return {"words": len(words), "first": words[0] if words else "", "long": len(words) > 8}


def embedding(text):
    letters = [c for c in text.lower() if c.isalpha()]
    total = max(1, len(letters))
    return [sum(1 for c in letters if c == ch) / total for ch in "abcdefgh"]


def tokens(text):
    return len(text.split())


class State:
    def __init__(self, args):
        self.args = args
        self.lock = threading.RLock()
        self.attempts = {}
        self.open = 0
        self.max_open = 0
        self.by_status = {}
        self.arrivals = []
        self.slots = threading.BoundedSemaphore(args.slots)


def ocr(data_url):
    header, _, payload = data_url.partition(",")
    suffix = ".jpg" if "jpeg" in header else ".png"
    with tempfile.NamedTemporaryFile(suffix=suffix) as image:
        image.write(base64.b64decode(payload))
        image.flush()
        done = subprocess.run(["tesseract", image.name, "-", "-l", "eng"],
                              capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise ValueError("tesseract could not read the image: " + done.stderr.strip()[:200])
    return done.stdout.strip()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go in two writes: with Nagle's algorithm the body would wait for the
    # client's delayed ACK (40 ms on Linux), which no real server makes its clients pay.
    disable_nagle_algorithm = True

    def log_message(self, format, *args):  # quiet: tests read /stats
        pass

    def reply(self, status, body, headers=None, raw=False):
        data = body.encode() if raw else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
        state = self.server.state
        with state.lock:
            state.by_status[str(status)] = state.by_status.get(str(status), 0) + 1

    def error(self, status, message, kind, headers=None):
        self.reply(status, {"error": {"message": message, "type": kind}}, headers)

    def do_GET(self):
        state = self.server.state
        if self.path.rstrip("/") in ("/stats", "/v1/stats"):
            with state.lock:
                stats = {"by_status": dict(state.by_status), "max_open": state.max_open,
                         "arrivals": list(state.arrivals)}
            self.reply(200, stats)
        elif self.path.rstrip("/") == "/v1/models":
            self.reply(200, {"object": "list", "data": [{"id": "orch-test", "object": "model"}]})
        else:
            self.error(404, "no such path: " + self.path, "not_found")

    def do_POST(self):
        state = self.server.state
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        with state.lock:
            state.open += 1
            state.max_open = max(state.max_open, state.open)
        try:
            with state.slots:
                self.answer(body)
        finally:
            with state.lock:
                state.open -= 1

    def answer(self, raw):
        state = self.server.state
        args = state.args
        if args.api_key and self.headers.get("Authorization") != "Bearer " + args.api_key:
            return self.error(401, "invalid API key", "authentication_error")
        try:
            request = json.loads(raw)
        except ValueError:
            return self.error(400, "the body is not JSON", "invalid_request_error")
        path = self.path.rstrip("/")
        if path == "/v1/chat/completions":
            messages = request.get("messages", [])
            user = messages[-1]["content"] if messages else ""
            image = None
            if isinstance(user, list):
                image = next((p["image_url"]["url"] for p in user if p.get("type") == "image_url"),
                             None)
                user = " ".join(p.get("text", "") for p in user if p.get("type") == "text")
            key = user + (image[-64:] if image else "")
        elif path == "/v1/embeddings":
            texts = request.get("input", [])
            texts = [texts] if isinstance(texts, str) else texts
            key = "\x00".join(texts)
            user = " ".join(texts)
        else:
            return self.error(404, "no such path: " + self.path, "not_found")
        with state.lock:
            attempt = state.attempts.get(key, 0) + 1
            state.attempts[key] = attempt
            state.arrivals.append([time.time(), user[:80], attempt])
        time.sleep(args.latency)
        for kind, count in MARKER.findall(user):
            if attempt > int(count):
                continue
            if kind == "429":
                return self.error(429, "rate limit reached; slow down", "rate_limit_error",
                                  {"Retry-After": str(args.retry_after)})
            if kind == "503":
                return self.error(503, "the server is overloaded", "server_error",
                                  {"Retry-After": str(args.retry_after)})
            if kind == "500":
                return self.error(500, "internal error (injected)", "server_error")
            if kind == "reset":
                # The connection drops in the middle of the answer (a reset before any byte,
                # on a reused connection, is sent again by libcurl itself, unseen).
                self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                 b"Content-Length: 400\r\n\r\n{\"choices\": [")
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(2)
                return None
            if kind == "slow":
                time.sleep(args.slow)
        if "[toolong]" in user:
            return self.error(400, "This model's maximum context length is 64 tokens; the prompt "
                              "is longer", "invalid_request_error")
        if "[malformed]" in user:
            return self.reply(200, '{"choices": [ this is not JSON', raw=True)
        if "[echokey]" in user:
            return self.error(401, "Incorrect API key provided: %s"
                              % self.headers.get("Authorization", "(none)"), "invalid_request_error")
        if "[nonutf8]" in user:
            data = b'{"choices": [{"message": {"content": "caf\xff"}}]}'
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return None
        if path == "/v1/embeddings":
            data = [{"object": "embedding", "index": i, "embedding": embedding(t)}
                    for i, t in enumerate(texts)]
            used = sum(tokens(t) for t in texts)
            return self.reply(200, {"object": "list", "data": data, "model": request.get("model"),
                                    "usage": {"prompt_tokens": used, "total_tokens": used}})
        if image is not None:
            try:
                content = ocr(image)
            except ValueError as problem:
                return self.error(400, str(problem), "invalid_request_error")
        elif (request.get("response_format") or {}).get("type") == "json_schema":
            content = json.dumps({"words": "many", "first": "x", "long": False}
                                 if "[badschema]" in user
                                 else json_answer(user))
        else:
            content = chat_answer(user)
        prompt_tokens = tokens(user)
        completion_tokens = tokens(content)
        return self.reply(200, {
            "id": "chatcmpl-%d" % attempt, "object": "chat.completion",
            "model": request.get("model"),
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens}})


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 512


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0, help="0: any free port")
    parser.add_argument("--port-file", help="where to write the port once listening")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per request")
    parser.add_argument("--slots", type=int, default=64, help="requests served at once")
    parser.add_argument("--retry-after", default="1", help="Retry-After of 429 and 503")
    parser.add_argument("--slow", type=float, default=5.0, help="seconds of a [slowxN]")
    parser.add_argument("--api-key", default="", help="required Bearer token ('': none)")
    args = parser.parse_args()
    server = Server(("127.0.0.1", args.port), Handler)
    server.state = State(args)
    port = server.server_address[1]
    if args.port_file:
        with open(args.port_file + ".tmp", "w") as out:
            out.write(str(port))
        os.replace(args.port_file + ".tmp", args.port_file)
    print(f"model server on http://127.0.0.1:{port}/v1", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
