"""Peers that a coordinator must not let in or be disturbed by (tests/e2e/security.sh).

  join ENDPOINT [--key F.key --server-key F.pub] [--seconds S]
      A ZeroMQ DEALER that speaks the documented protocol: says hello (again every 200 ms) and
      records every message it receives. Prints {"messages": N, "bytes": B, "types": [...]}.
  idle HOST PORT --count N [--seconds S] [--ready FILE]
      Opens N TCP connections that send nothing (then writes FILE), holds them for S seconds
      and prints how many the coordinator closed.
  junk HOST PORT --count N --megabytes M
      N TCP connections, each sending M MB of random bytes (not ZMTP); prints bytes sent.
  zmtp-junk ENDPOINT --count N --megabytes M [--key F.key --server-key F.pub]
      A ZeroMQ DEALER sending N messages of M MB of random bytes; prints what came back.
  hello-flood ENDPOINT --count N --megabytes M [--seconds S]
      N DEALERs that each say hello, wait for the welcome (a coordinator without keys welcomes
      anyone), then send one message of M MiB. Prints {"welcomed": W, "sent": N}.
  piece-flood ENDPOINT --count N --megabytes M [--seconds S]
      As hello-flood, but each sends its M MiB as pieces of a message (the protocol's PIECE)
      without waiting for the coordinator's MORE. Prints {"welcomed": W, "pieces": P}.
  piece-hog ENDPOINT [--seconds S] [--trickle [--megabytes M]]
      One peer that says hello, begins a message of 64 MiB (M with --trickle) in pieces, and after the
      coordinator's MORE sends nothing but heartbeats (with --trickle, one byte of the message
      every 0.3 s too), holding what the coordinator reserved. Prints {"more": M, "lost": L}
      (L: how often it was told it was declared lost).
"""

import argparse
import json
import os
import re
import socket
import sys
import time

import msgpack
import zmq


def read_key_pair(path):
    fields = {}
    with open(path) as lines:
        for line in lines:
            words = line.split()
            if len(words) == 2 and not words[0].startswith("#"):
                fields[words[0]] = words[1]
    return fields["public"], fields["secret"]


def read_public_key(path):
    with open(path) as lines:
        for line in lines:
            words = line.split()
            if words and words[0] == "curve":
                return words[1]
    raise SystemExit(f"{path}: no public key")


def dealer(context, endpoint, args):
    sock = context.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.IDENTITY, b"hostile-%d" % os.getpid())
    if args.key:
        public, secret = read_key_pair(args.key)
        sock.curve_publickey = public.encode()
        sock.curve_secretkey = secret.encode()
        sock.curve_serverkey = read_public_key(args.server_key).encode()
    sock.connect(endpoint)
    return sock


def current_protocol_version():
    """kProtocolVersion as Protocol.h of this checkout says it: the peer speaks what orch speaks."""
    header = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "runtime",
                          "cluster", "include", "orch", "runtime", "cluster", "Protocol.h")
    with open(header, encoding="utf-8") as source:
        found = re.search(r"kProtocolVersion\s*=\s*(\d+)", source.read())
    if not found:
        sys.exit(f"hostile_peer: no kProtocolVersion in {header}")
    return int(found.group(1))


def hello():
    # ORCH_PROTOCOL_VERSION: to speak to an older coordinator (the tests' control runs).
    version = int(os.environ.get("ORCH_PROTOCOL_VERSION", current_protocol_version()))
    # Every key its version has (docs/protocol.md: keys are version-checked).
    return msgpack.packb({"type": "hello", "version": version, "worker": "hostile", "pid": os.getpid(),
                          "host": "hostile", "cpus": 64.0, "gpus": [], "operators": [],
                          "memory": 0, "peer_endpoint": "", "peer_key": ""})


def join(args):
    context = zmq.Context()
    sock = dealer(context, args.endpoint, args)
    received, size, types = 0, 0, []
    deadline = time.time() + args.seconds
    next_hello = 0.0
    while time.time() < deadline:
        if time.time() >= next_hello:
            try:
                sock.send(hello(), zmq.NOBLOCK)
            except zmq.Again:
                pass
            next_hello = time.time() + 0.2
        if sock.poll(50):
            body = sock.recv()
            received += 1
            size += len(body)
            try:
                types.append(msgpack.unpackb(body, raw=False).get("type", "?"))
            except Exception:
                types.append("unreadable")
    print(json.dumps({"messages": received, "bytes": size, "types": sorted(set(types))}))


def idle(args):
    sockets, refused = [], 0
    for _ in range(args.count):
        try:
            s = socket.create_connection((args.host, args.port), timeout=0.5)
        except OSError:
            refused += 1
            continue
        s.setblocking(False)
        sockets.append(s)
    if args.ready:
        with open(args.ready, "w") as ready:
            ready.write("%d\n" % len(sockets))
    time.sleep(args.seconds)
    closed = 0
    for s in sockets:
        try:
            # The coordinator greets first (ZMTP); a closed connection then reads as the end.
            while True:
                data = s.recv(1 << 16)
                if not data:
                    closed += 1
                    break
        except BlockingIOError:
            pass
        except OSError:
            closed += 1
        s.close()
    print(json.dumps({"opened": len(sockets), "refused": refused, "closed": closed}))


def junk(args):
    sent = 0
    chunk = os.urandom(1 << 20)
    for _ in range(args.count):
        try:
            with socket.create_connection((args.host, args.port)) as s:
                for _ in range(args.megabytes):
                    s.sendall(chunk)
                    sent += len(chunk)
        except OSError:
            pass  # the coordinator hung up: what it should do
    print(json.dumps({"bytes_sent": sent}))


def zmtp_junk(args):
    context = zmq.Context()
    sock = dealer(context, args.endpoint, args)
    payload = os.urandom(args.megabytes << 20)
    queued = 0
    for _ in range(args.count):
        try:
            sock.send(payload, zmq.NOBLOCK)
            queued += 1
        except zmq.Again:
            break
    received = 0
    deadline = time.time() + args.seconds
    while time.time() < deadline:
        if sock.poll(100):
            sock.recv()
            received += 1
    print(json.dumps({"queued": queued, "answers": received}))


def welcomed_dealers(context, args):
    """args.count DEALERs that said hello; those the coordinator welcomed within 5 s."""
    socks = []
    for i in range(args.count):
        sock = context.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.SNDHWM, 100000)
        sock.setsockopt(zmq.IDENTITY, b"flood-%d-%d" % (os.getpid(), i))
        sock.connect(args.endpoint)
        sock.send(hello())
        socks.append(sock)
    welcomed = []
    deadline = time.time() + 5
    waiting = list(socks)
    while waiting and time.time() < deadline:
        for sock in list(waiting):
            if sock.poll(10):
                body = sock.recv()
                if msgpack.unpackb(body, raw=False).get("type") == "welcome":
                    welcomed.append(sock)
                    waiting.remove(sock)
    return welcomed


def hello_flood(args):
    context = zmq.Context()
    welcomed = welcomed_dealers(context, args)
    # One buffer shared by every send (zero-copy): N x M MiB on the wire, M MiB here.
    payload = zmq.Frame(bytes(args.megabytes << 20))
    for sock in welcomed:
        sock.send(payload, copy=False, track=False)
    time.sleep(args.seconds)
    print(json.dumps({"welcomed": len(welcomed), "sent": len(welcomed)}))


def piece_flood(args):
    context = zmq.Context()
    welcomed = welcomed_dealers(context, args)
    size = 60 << 10
    # Each message announces 60 MiB (what a coordinator holds in pieces is 64 MiB at most: the
    # first peer is told MORE, the others wait in line), and the pieces go on regardless.
    total = min(args.megabytes << 20, 60 << 20)
    chunk = bytes(size)
    pieces = 0
    sending = list(welcomed)
    for sent in range(0, args.megabytes << 20, size):
        offset = sent % total
        piece = msgpack.packb({"type": "piece", "total": total, "offset": offset, "bytes": chunk},
                              use_bin_type=True)
        for sock in list(sending):  # all peers at once, piece after piece
            try:
                sock.send(piece, zmq.NOBLOCK)
                pieces += 1
            except zmq.Again:
                sending.remove(sock)
        if not sending:
            break
    time.sleep(args.seconds)
    print(json.dumps({"welcomed": len(welcomed), "pieces": pieces}))


def piece_hog(args):
    context = zmq.Context()
    args.count = 1
    welcomed = welcomed_dealers(context, args)
    more = lost = 0
    if welcomed:
        sock = welcomed[0]
        total = (args.megabytes << 20) if args.trickle else (64 << 20)
        sock.send(msgpack.packb({"type": "piece", "total": total, "offset": 0, "bytes": b"x"},
                                use_bin_type=True))
        deadline = time.time() + args.seconds
        next_beat = 0.0
        offset = 1
        while time.time() < deadline:
            if time.time() >= next_beat:
                sock.send(msgpack.packb({"type": "heartbeat"}), zmq.NOBLOCK)
                if args.trickle and more:
                    sock.send(msgpack.packb({"type": "piece", "total": total, "offset": offset,
                                             "bytes": b"x"}, use_bin_type=True), zmq.NOBLOCK)
                    offset += 1
                next_beat = time.time() + (0.3 if args.trickle else 0.1)
            if sock.poll(20):
                body = msgpack.unpackb(sock.recv(), raw=False)
                more += body.get("type") == "more"
                lost += body.get("code") == "declared-lost"
    print(json.dumps({"more": more, "lost": lost}))


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="mode", required=True)
    for name in ("join", "zmtp-junk", "hello-flood", "piece-flood", "piece-hog"):
        p = sub.add_parser(name)
        if name == "piece-hog":
            p.add_argument("--trickle", action="store_true")
        p.add_argument("endpoint")
        p.add_argument("--key")
        p.add_argument("--server-key")
        p.add_argument("--seconds", type=float, default=2.0)
        p.add_argument("--count", type=int, default=1)
        p.add_argument("--megabytes", type=int, default=1)
    for name in ("idle", "junk"):
        p = sub.add_parser(name)
        p.add_argument("host")
        p.add_argument("port", type=int)
        p.add_argument("--count", type=int, default=1)
        p.add_argument("--megabytes", type=int, default=1)
        p.add_argument("--seconds", type=float, default=1.0)
        p.add_argument("--ready")
    args = parser.parse_args()
    {"join": join, "idle": idle, "junk": junk, "zmtp-junk": zmtp_junk, "hello-flood": hello_flood,
     "piece-flood": piece_flood, "piece-hog": piece_hog}[args.mode](args)


if __name__ == "__main__":
    sys.exit(main())
