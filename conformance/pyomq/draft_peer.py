"""A pyomq peer for omq's draft-type interop tests (conformance/src/pyomq_draft.rs).

Usage: draft_peer.py TYPE ROLE COUNT [ENDPOINT]

TYPE is server, client, scatter, gather, channel, radio or dish. ROLE "bind" binds
tcp://127.0.0.1:0 and prints the endpoint bound; "connect" connects to ENDPOINT and
prints "connected". Then:
  server   receives COUNT messages and sends each back to the routing id it came with
  client   sends b"m<i>" COUNT times, each followed by its reply, which must be the same
  scatter  sends b"m<i>" COUNT times
  gather   receives COUNT messages, which must be b"m0", b"m1", ... in order
  channel  receives COUNT messages and sends each back
  radio    sends b"m<i>" to group "news" and b"x" to "weather", i = 0, 1, ..., one pair every
           2 ms, until killed (or 60 s): pyomq gives a RADIO message as [group, body]
  dish     joins "news"; prints "joined" at the first message of the group (probes), then
           receives until COUNT messages b"m0", b"m1", ... have come in order (probes
           skipped); every message must be of group "news"
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
    "radio": zmq.RADIO,
    "dish": zmq.DISH,
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
    if kind == "radio":
        import time

        deadline = time.monotonic() + 60
        i = 0
        while time.monotonic() < deadline:
            s.send_multipart([b"news", b"m%d" % i])
            s.send_multipart([b"weather", b"x"])
            i += 1
            time.sleep(0.002)
        return
    if kind == "dish":
        s.join(b"news")
        announced = False
        i = 0
        while i < count:
            group, body = s.recv_multipart()
            if group != b"news":
                raise SystemExit(f"group {group!r}")
            if not announced:
                print("joined", flush=True)
                announced = True
            if body == b"probe":
                continue
            if body != b"m%d" % i:
                raise SystemExit(f"message {i}: {body!r}")
            i += 1
        s.close()
        ctx.term()
        return
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
