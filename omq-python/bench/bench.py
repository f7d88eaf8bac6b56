"""PUSH/PULL throughput, REQ/REP latency and proxy forwarding of a pyzmq-API library, one JSON
line per cell.

    python bench.py omq|zmq|pyomq

The sender runs in a thread of the same process (inproc needs that); every library gets the
same treatment.
"""

import importlib
import json
import os
import sys
import threading
import time

lib = sys.argv[1]
zmq = importlib.import_module(lib)
SIZES = {64: 200_000, 1024: 100_000, 16384: 20_000}


def pushpull(ctx, transport, size, n):
    pull = ctx.socket(zmq.PULL)
    push = ctx.socket(zmq.PUSH)
    for s in (pull, push):
        s.setsockopt(zmq.LINGER, 0)
        s.setsockopt(zmq.SNDHWM, 100_000)
        s.setsockopt(zmq.RCVHWM, 100_000)
    if transport == "tcp":
        port = pull.bind_to_random_port("tcp://127.0.0.1")
        push.connect("tcp://127.0.0.1:%d" % port)
    else:
        ep = "inproc://bench-%d-%d" % (size, time.monotonic_ns())
        pull.bind(ep)
        push.connect(ep)
    rate = stream(push, pull, size, n)
    pull.close()
    push.close()
    return rate


def stream(push, pull, size, n):
    """n messages of `size` bytes from a sender thread through `push` to `pull`, once a first
    one went through: messages per second at `pull`."""
    payload = b"x" * size
    push.send(payload)
    pull.recv()  # the path is up

    def sender():
        send = push.send
        for _ in range(n):
            send(payload)

    t = threading.Thread(target=sender)
    start = time.perf_counter()
    t.start()
    recv = pull.recv
    for _ in range(n):
        recv()
    elapsed = time.perf_counter() - start
    t.join()
    return n / elapsed


def reqrep(ctx, n=5000):
    rep = ctx.socket(zmq.REP)
    req = ctx.socket(zmq.REQ)
    for s in (rep, req):
        s.setsockopt(zmq.LINGER, 0)
    port = rep.bind_to_random_port("tcp://127.0.0.1")
    req.connect("tcp://127.0.0.1:%d" % port)

    def server():
        for _ in range(n + 100):
            rep.send(rep.recv())

    t = threading.Thread(target=server, daemon=True)
    t.start()
    lat = []
    for i in range(n + 100):
        t0 = time.perf_counter()
        req.send(b"x" * 64)
        req.recv()
        if i >= 100:
            lat.append(time.perf_counter() - t0)
    t.join()
    lat.sort()
    rep.close()
    req.close()
    return lat[len(lat) // 2] * 1e6


def proxied(size=128, n=100_000):
    """PUSH -> [PULL | zmq.proxy | PUSH] -> PULL over tcp, the proxy in a thread of its own:
    messages per second at the last PULL. The proxy thread is left running (it is a daemon, and
    the process ends right after this cell), so no library's shutdown path is measured."""
    ctx = zmq.Context()
    front, back = ctx.socket(zmq.PULL), ctx.socket(zmq.PUSH)
    for s in (front, back):
        s.setsockopt(zmq.SNDHWM, 100_000)
        s.setsockopt(zmq.RCVHWM, 100_000)
    port_in = front.bind_to_random_port("tcp://127.0.0.1")
    port_out = back.bind_to_random_port("tcp://127.0.0.1")
    threading.Thread(target=zmq.proxy, args=(front, back), daemon=True).start()
    push, pull = ctx.socket(zmq.PUSH), ctx.socket(zmq.PULL)
    for s in (push, pull):
        s.setsockopt(zmq.SNDHWM, 100_000)
        s.setsockopt(zmq.RCVHWM, 100_000)
    push.connect("tcp://127.0.0.1:%d" % port_in)
    pull.connect("tcp://127.0.0.1:%d" % port_out)
    return stream(push, pull, size, n)


ctx = zmq.Context()
for transport in ("tcp", "inproc"):
    for size, n in SIZES.items():
        rate = pushpull(ctx, transport, size, n)
        print(json.dumps({"lib": lib, "cell": "pushpull %s %dB" % (transport, size), "msgs_per_s": rate}))
        sys.stdout.flush()
print(json.dumps({"lib": lib, "cell": "reqrep tcp 64B p50", "us": reqrep(ctx)}))
ctx.term()
if hasattr(zmq, "proxy"):
    print(json.dumps({"lib": lib, "cell": "proxy tcp 128B", "msgs_per_s": proxied()}))
sys.stdout.flush()
# The proxy thread still runs: end here rather than in any library's shutdown.
os._exit(0)
