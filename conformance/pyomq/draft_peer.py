"""A pyomq peer for omq's draft-type interop tests (conformance/src/pyomq_draft.rs).

Usage: draft_peer.py TYPE ROLE COUNT [ENDPOINT]

TYPE is server, client, scatter, gather or channel. ROLE "bind" binds tcp://127.0.0.1:0 and
prints the endpoint; "connect" connects to ENDPOINT and prints "connected". Then:
  server   receives COUNT messages and sends each back to the routing id it came with
  client   sends b"m<i>" COUNT times, each followed by its reply, which must be the same
  scatter  sends b"m<i>" COUNT times
  gather   receives COUNT messages, which must be b"m0", b"m1", ... in order
  channel  receives COUNT messages and sends each back
Exits 0 when all went as expected; a wrong message, an error or a 20 s silence exits non-zero.
"""

import sys

import pyomq as zmq

TYPES = {
    "server": zmq.SERVER,
    "client": zmq.CLIENT,
    "scatter": zmq.SCATTER,
    "gather": zmq.GATHER,
    "channel": zmq.CHANNEL,
}


def main():
    kind, role, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    ctx = zmq.Context()
    s = ctx.socket(TYPES[kind])
    s.linger = 5000
    s.rcvtimeo = 20000
    s.sndtimeo = 20000
    if role == "bind":
        s.bind("tcp://127.0.0.1:0")
        ep = s.last_endpoint
        print(ep.decode() if isinstance(ep, bytes) else ep, flush=True)
    else:
        s.connect(sys.argv[4])
        print("connected", flush=True)
    for i in range(count):
        body = b"m%d" % i
        if kind == "server":
            frame = s.recv(copy=False)
            reply = zmq.Frame(frame.bytes)
            reply.routing_id = frame.routing_id
            s.send(reply, copy=False)
        elif kind == "client":
            s.send(body)
            got = s.recv()
            if got != body:
                raise SystemExit(f"reply {i}: {got!r}")
        elif kind == "scatter":
            s.send(body)
        elif kind == "gather":
            got = s.recv()
            if got != body:
                raise SystemExit(f"message {i}: {got!r}")
        elif kind == "channel":
            s.send(s.recv())
    s.close()
    ctx.term()


if __name__ == "__main__":
    main()
