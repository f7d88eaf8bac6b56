"""A pyomq peer for omq's compressed-transport interop tests (conformance/src/pyomq.rs).

Usage: peer.py ROLE SCHEME DICT COUNT [IN_ENDPOINT OUT_ENDPOINT]

It opens a PULL and a PUSH socket on SCHEME (lz4+tcp or zstd+tcp), binding both on
127.0.0.1 and printing "IN OUT" on one line when ROLE is "bind", or connecting them to the two
endpoints given when ROLE is "connect". It then receives COUNT multipart messages on the PULL
and sends each back unchanged on the PUSH, so omq's compression is decoded by pyomq and
pyomq's by omq. DICT: "none"; "static:HEXFILE" (a dictionary set with compression_dict);
"train" (compression_auto_train); "plain" adds PLAIN, pyomq the server admitting user "u" with
password "p". Modes combine with commas.
Exits 0 after echoing everything; any error or a 20 s silence exits non-zero.
"""

import sys

import pyomq as zmq


def main():
    role, scheme, dict_mode, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    ctx = zmq.Context()
    socks = []
    for kind in (zmq.PULL, zmq.PUSH):
        s = ctx.socket(kind)
        s.linger = 5000
        s.rcvtimeo = 20000
        s.sndtimeo = 20000
        for mode in dict_mode.split(","):
            if mode.startswith("static:"):
                with open(mode[len("static:"):]) as f:
                    s.compression_dict = bytes.fromhex(f.read().strip())
            elif mode == "train":
                s.compression_auto_train = 1
            elif mode == "plain":
                s.plain_server = 1
                s.set_plain_auth([("u", "p")])
            elif mode != "none":
                raise SystemExit(f"unknown dict mode {mode}")
        socks.append(s)
    pull, push = socks
    if role == "bind":
        eps = []
        for s in socks:
            s.bind(f"{scheme}://127.0.0.1:0")
            ep = s.last_endpoint
            eps.append(ep.decode() if isinstance(ep, bytes) else ep)
        print(" ".join(eps), flush=True)
    else:
        pull.connect(sys.argv[5])
        push.connect(sys.argv[6])
        print("connected", flush=True)
    for _ in range(count):
        msg = pull.recv_multipart()
        push.send_multipart(msg)
    pull.close()
    push.close()
    ctx.term()


if __name__ == "__main__":
    main()
