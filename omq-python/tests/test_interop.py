"""omq against pyzmq (libzmq) both ways, in one process: every standard pair, and CURVE."""

import time

import pytest
import zmq as pyzmq

import omq

PAIRS = [
    ("REQ", "REP"),
    ("PUSH", "PULL"),
    ("PUB", "SUB"),
    ("DEALER", "ROUTER"),
    ("PAIR", "PAIR"),
    ("XPUB", "XSUB"),
    ("DEALER", "REP"),
    ("REQ", "ROUTER"),
    ("DEALER", "DEALER"),
]


@pytest.fixture
def ctxs():
    o = omq.Context()
    z = pyzmq.Context()
    yield {"omq": o, "pyzmq": z}
    o.destroy(linger=0)
    z.destroy(linger=0)


def make(ctxs, lib, kind):
    mod = omq if lib == "omq" else pyzmq
    s = ctxs[lib].socket(getattr(mod, kind))
    s.linger = 0
    s.rcvtimeo = 5000
    s.sndtimeo = 5000
    return s


def exchange(a, akind, b, bkind):
    """`a` sends to `b` and, where the pattern allows, back."""
    if akind in ("PUB", "XPUB"):
        if bkind == "SUB":
            b.setsockopt(pyzmq.SUBSCRIBE, b"")
        else:
            # libzmq's XSUB does not resend a subscription sent before it had a peer (pyzmq
            # against pyzmq behaves the same): send it until the XPUB sees it.
            a.rcvtimeo = 50
            deadline = time.monotonic() + 5
            while True:
                b.send(b"\x01")
                try:
                    assert a.recv() == b"\x01"
                    break
                except (omq.Again, pyzmq.Again):
                    assert time.monotonic() < deadline, "subscription never arrived"
        b.rcvtimeo = 50
        deadline = time.monotonic() + 5
        while True:
            a.send_multipart([b"topic", b"data"])
            try:
                assert b.recv_multipart() == [b"topic", b"data"]
                break
            except (omq.Again, pyzmq.Again):
                assert time.monotonic() < deadline, "subscription never arrived"
        return
    envelope = [b""] if (akind, bkind) == ("DEALER", "REP") else []
    a.send_multipart(envelope + [b"hello", b"world"])
    got = b.recv_multipart()
    if bkind == "ROUTER":
        ident, rest = got[0], got[1:]
        assert rest[-2:] == [b"hello", b"world"]
        b.send_multipart([ident] + rest[:-2] + [b"back"])
    else:
        assert got == [b"hello", b"world"]
        if bkind in ("REP", "PAIR", "DEALER"):
            b.send(b"back")
        else:
            return
    assert a.recv_multipart() == envelope + [b"back"]
    if akind in ("DEALER", "PAIR") and bkind != "REP":
        # A second round trip, started from the other side where the pattern allows.
        a.send(b"again")
        got = b.recv_multipart()
        assert got[-1] == b"again"


@pytest.mark.parametrize("akind,bkind", PAIRS)
@pytest.mark.parametrize("alib,blib", [("omq", "pyzmq"), ("pyzmq", "omq")])
@pytest.mark.parametrize("binder", ["a", "b"])
def test_pair(ctxs, akind, bkind, alib, blib, binder):
    a = make(ctxs, alib, akind)
    b = make(ctxs, blib, bkind)
    server, client = (a, b) if binder == "a" else (b, a)
    port = server.bind_to_random_port("tcp://127.0.0.1")
    client.connect("tcp://127.0.0.1:%d" % port)
    exchange(a, akind, b, bkind)


@pytest.mark.parametrize("server_lib,client_lib", [("omq", "pyzmq"), ("pyzmq", "omq")])
def test_curve(ctxs, server_lib, client_lib):
    if not pyzmq.has("curve"):
        pytest.fail("pyzmq's libzmq has no CURVE")
    spub, ssec = omq.curve_keypair()
    cpub, csec = pyzmq.curve_keypair()
    server = make(ctxs, server_lib, "REP")
    server.curve_server = True
    server.curve_secretkey = ssec
    server.curve_publickey = spub
    port = server.bind_to_random_port("tcp://127.0.0.1")
    client = make(ctxs, client_lib, "REQ")
    client.curve_serverkey = spub
    client.curve_publickey = cpub
    client.curve_secretkey = csec
    client.connect("tcp://127.0.0.1:%d" % port)
    client.send(b"encrypted hello")
    assert server.recv() == b"encrypted hello"
    server.send(b"encrypted reply")
    assert client.recv() == b"encrypted reply"


@pytest.mark.parametrize("server_lib,client_lib", [("omq", "pyzmq"), ("pyzmq", "omq")])
def test_curve_wrong_key_is_refused(ctxs, server_lib, client_lib):
    spub, ssec = pyzmq.curve_keypair()
    other, _ = pyzmq.curve_keypair()
    cpub, csec = omq.curve_keypair()
    server = make(ctxs, server_lib, "PULL")
    server.curve_server = True
    server.curve_secretkey = ssec
    server.curve_publickey = spub
    port = server.bind_to_random_port("tcp://127.0.0.1")
    client = make(ctxs, client_lib, "PUSH")
    client.curve_serverkey = other
    client.curve_publickey = cpub
    client.curve_secretkey = csec
    client.connect("tcp://127.0.0.1:%d" % port)
    client.send(b"nope", pyzmq.NOBLOCK)
    server.rcvtimeo = 300
    with pytest.raises((omq.Again, pyzmq.Again)):
        server.recv()


def test_monitor_events_match_pyzmq(ctxs):
    """The monitor's two-frame format parses with pyzmq's own parser."""
    from zmq.utils.monitor import parse_monitor_message

    s = make(ctxs, "omq", "PULL")
    mon = s.get_monitor_socket()
    port = s.bind_to_random_port("tcp://127.0.0.1")
    ev = parse_monitor_message(mon.recv_multipart())
    assert ev["event"] == pyzmq.EVENT_LISTENING
    assert ev["endpoint"] == b"tcp://127.0.0.1:%d" % port


# Option, socket type: the integer options whose ranges libzmq checks.
CHECKED_OPTIONS = [
    ("SNDHWM", "DEALER"), ("RCVHWM", "DEALER"), ("LINGER", "DEALER"),
    ("RECONNECT_IVL", "DEALER"), ("RECONNECT_IVL_MAX", "DEALER"), ("BACKLOG", "DEALER"),
    ("MAXMSGSIZE", "DEALER"), ("SNDBUF", "DEALER"), ("RCVBUF", "DEALER"),
    ("SNDTIMEO", "DEALER"), ("RCVTIMEO", "DEALER"), ("TCP_KEEPALIVE", "DEALER"),
    ("TCP_KEEPALIVE_CNT", "DEALER"), ("TCP_KEEPALIVE_IDLE", "DEALER"),
    ("TCP_KEEPALIVE_INTVL", "DEALER"), ("HANDSHAKE_IVL", "DEALER"), ("HEARTBEAT_IVL", "DEALER"),
    ("HEARTBEAT_TTL", "DEALER"), ("HEARTBEAT_TIMEOUT", "DEALER"), ("TOS", "DEALER"),
    ("IMMEDIATE", "DEALER"), ("IPV6", "DEALER"), ("CONNECT_TIMEOUT", "DEALER"),
    ("TCP_MAXRT", "DEALER"), ("CONFLATE", "PULL"), ("ROUTER_MANDATORY", "ROUTER"),
    ("ROUTER_HANDOVER", "ROUTER"), ("PROBE_ROUTER", "ROUTER"), ("REQ_CORRELATE", "REQ"),
    ("REQ_RELAXED", "REQ"), ("XPUB_VERBOSE", "XPUB"), ("XPUB_VERBOSER", "XPUB"),
    ("XPUB_NODROP", "XPUB"), ("XPUB_MANUAL", "XPUB"), ("INVERT_MATCHING", "SUB"),
    ("STREAM_NOTIFY", "STREAM"), ("PLAIN_SERVER", "DEALER"), ("CURVE_SERVER", "DEALER"),
    ("MULTICAST_HOPS", "DEALER"), ("RATE", "DEALER"), ("RECOVERY_IVL", "DEALER"),
    ("MULTICAST_MAXTPDU", "DEALER"), ("ZAP_ENFORCE_DOMAIN", "DEALER"),
    ("LOOPBACK_FASTPATH", "DEALER"),
]


def _set_and_read(ctx, mod, kind, name, value):
    s = ctx.socket(getattr(mod, kind))
    try:
        s.setsockopt(getattr(mod, name), value)
    except mod.ZMQError as e:
        s.close(linger=0)
        return "refused %d" % e.errno
    try:
        return "took, reads %r" % (int(s.getsockopt(getattr(mod, name))),)
    except mod.ZMQError:
        return "took"  # a write-only option in libzmq
    finally:
        s.close(linger=0)


@pytest.mark.parametrize("name,kind", CHECKED_OPTIONS)
def test_option_ranges_match_libzmq(ctxs, name, kind):
    # The same values to the same option of both: libzmq's refusals are omq's (a value outside
    # its range must not be taken as something else: SNDHWM -1 as no limit, LINGER -2 as
    # forever), and what a setting reads back is libzmq's.
    for value in (-101, -100, -2, -1, 0, 1, 2, 99, 1000, 6553599, 6553600, 2**31 - 1):
        want = _set_and_read(ctxs["pyzmq"], pyzmq, kind, name, value)
        got = _set_and_read(ctxs["omq"], omq, kind, name, value)
        if want == "took":
            assert got.startswith("took"), (name, value, got)
        else:
            assert got == want, (name, value)


@pytest.mark.parametrize(
    "kind,op,endpoint",
    [
        ("PUSH", "bind", "tcp://no.such.host.invalid:5555"),  # ENODEV
        ("PUSH", "bind", "tcp://nosuchif0:5555"),  # ENODEV
        ("PUSH", "connect", "udp://127.0.0.1:5555"),  # ENOCOMPATPROTO
        ("PULL", "bind", "udp://127.0.0.1:*"),  # ENOCOMPATPROTO
        ("PUSH", "connect", "foo://x"),  # EPROTONOSUPPORT
        ("PUSH", "connect", "tcp://"),  # EINVAL
    ],
)
def test_endpoint_errors_match_libzmq(ctxs, kind, op, endpoint):
    def errno_of(lib, mod):
        s = ctxs[lib].socket(getattr(mod, kind))
        try:
            getattr(s, op)(endpoint)
        except mod.ZMQError as e:
            return e.errno
        finally:
            s.close(linger=0)
        return None

    want = errno_of("pyzmq", pyzmq)
    assert want is not None
    assert errno_of("omq", omq) == want
