"""The same small programs on omq and on pyzmq (libzmq), whose results must be equal: socket
behaviour a pyzmq user relies on, pinned against the real thing rather than against what we
think libzmq does. Each scenario waits on receives (with RCVTIMEO), not on sleeps."""

import itertools
import socket as pysocket

import pytest
import zmq as pyzmq

import omq

_names = itertools.count()


def _inproc(tag):
    # omq's inproc names are per process: every run gets a fresh one.
    return "inproc://parity-%s-%d" % (tag, next(_names))


class Lab:
    def __init__(self, mod):
        self.mod = mod
        self.ctx = mod.Context()

    def sock(self, kind, **opts):
        s = self.ctx.socket(getattr(self.mod, kind))
        s.linger = 0
        s.rcvtimeo = 2000
        for k, v in opts.items():
            setattr(s, k, v)
        return s

    def tcp_pair(self, bound, connecting, bopts=None, copts=None):
        b = self.sock(bound, **(bopts or {}))
        port = b.bind_to_random_port("tcp://127.0.0.1")
        c = self.sock(connecting, **(copts or {}))
        c.connect("tcp://127.0.0.1:%d" % port)
        return b, c

    def again(self, f):
        try:
            return f()
        except self.mod.ZMQError as e:
            return "errno %d" % e.errno

    def close(self):
        self.ctx.destroy(linger=0)


def probe_router(lab):
    r, d = lab.tcp_pair("ROUTER", "ROUTER", {}, {"probe_router": 1, "routing_id": b"P"})
    return r.recv_multipart()


def probe_router_from_dealer(lab):
    r, d = lab.tcp_pair("ROUTER", "DEALER", {}, {"probe_router": 1, "routing_id": b"P"})
    return r.recv_multipart()


def stream_connect_data_disconnect(lab):
    s = lab.sock("STREAM")
    port = s.bind_to_random_port("tcp://127.0.0.1")
    t = pysocket.create_connection(("127.0.0.1", port))
    hello = s.recv_multipart()
    t.sendall(b"abc")
    data = s.recv_multipart()
    t.close()
    bye = s.recv_multipart()
    return (len(hello), hello[1], data[1], bye[1], hello[0] == data[0] == bye[0])


def rcvmore(lab):
    a, b = lab.tcp_pair("PULL", "PUSH")
    b.send_multipart([b"a", b"b", b"c"])
    return [(a.recv(), a.getsockopt(lab.mod.RCVMORE)) for _ in range(3)]


def req_relaxed_correlate(lab):
    rep, req = lab.tcp_pair("REP", "REQ", {}, {"req_relaxed": 1, "req_correlate": 1})
    req.send(b"1")
    m1 = rep.recv()
    req.send(b"2")  # relaxed: a new request without waiting for the reply
    rep.send(b"r1")  # the stale reply, which correlate drops
    m2 = rep.recv()
    rep.send(b"r2")
    return (m1, m2, req.recv())


def req_send_twice(lab):
    rep, req = lab.tcp_pair("REP", "REQ")
    req.send(b"1")
    return lab.again(lambda: req.send(b"2"))


def _fill(lab, s):
    n = 0
    while n < 5000:
        try:
            s.send(b"x", lab.mod.NOBLOCK)
        except lab.mod.ZMQError:
            break
        n += 1
    return n


def inproc_hwm_bind_first(lab):
    ep = _inproc("hwm")
    s = lab.sock("PUSH", sndhwm=5)
    s.bind(ep)
    r = lab.sock("PULL", rcvhwm=7)
    r.connect(ep)
    return _fill(lab, s)


def inproc_hwm_connect_first(lab):
    ep = _inproc("hwm")
    r = lab.sock("PULL", rcvhwm=7)
    r.connect(ep)
    s = lab.sock("PUSH", sndhwm=5)
    s.bind(ep)
    return _fill(lab, s)


def _nobody():
    # A port nobody listens on: one the kernel just handed out and took back.
    with pysocket.socket() as t:
        t.bind(("127.0.0.1", 0))
        return "tcp://127.0.0.1:%d" % t.getsockname()[1]


def immediate_without_peer(lab):
    s = lab.sock("PUSH", immediate=1)
    s.connect(_nobody())
    return lab.again(lambda: s.send(b"x", lab.mod.NOBLOCK))


def queued_for_an_absent_peer(lab):
    s = lab.sock("PUSH")
    s.connect(_nobody())
    return _fill(lab, s)


def pair_inproc_second_peer(lab):
    ep = _inproc("pair")
    a = lab.sock("PAIR")
    a.bind(ep)
    b = lab.sock("PAIR")
    b.connect(ep)
    b.send(b"from b")
    return a.recv()


def rep_envelope(lab):
    r, d = lab.tcp_pair("REP", "DEALER")
    d.send_multipart([b"e1", b"e2", b"", b"body"])
    m = r.recv_multipart()
    r.send_multipart([b"r1", b"r2"])
    return (m, d.recv_multipart())


def last_endpoint_wildcard(lab):
    s = lab.sock("PULL")
    s.bind("tcp://*:0")
    host = s.last_endpoint.rsplit(b":", 1)[0]
    s.unbind(s.last_endpoint)
    return host


def unbind_with_wildcard_port(lab):
    s = lab.sock("PULL")
    s.bind("tcp://127.0.0.1:*")
    return lab.again(lambda: s.unbind("tcp://127.0.0.1:*"))


def xsub_sends_subscriptions_and_messages(lab):
    x = lab.sock("XPUB")
    port = x.bind_to_random_port("tcp://127.0.0.1")
    xs = lab.sock("XSUB")
    xs.connect("tcp://127.0.0.1:%d" % port)
    xs.send(b"\x01ab")
    a = x.recv()
    xs.send(b"\x00ab")
    b = x.recv()
    xs.send(b"hello")
    return (a, b, x.recv())


def router_handover(lab):
    r = lab.sock("ROUTER", router_handover=1)
    port = r.bind_to_random_port("tcp://127.0.0.1")
    d1 = lab.sock("DEALER", routing_id=b"X")
    d1.connect("tcp://127.0.0.1:%d" % port)
    d1.send(b"1")
    a = r.recv_multipart()
    d2 = lab.sock("DEALER", routing_id=b"X")
    d2.connect("tcp://127.0.0.1:%d" % port)
    d2.send(b"2")
    b = r.recv_multipart()
    r.send_multipart([b"X", b"to-x"])
    return (a, b, d2.recv())


def _xpub_and_two_subscribers(lab, **xpub_opts):
    """An XPUB and two SUBs of "t", and the two notifications it read."""
    x = lab.sock("XPUB", **xpub_opts)
    port = x.bind_to_random_port("tcp://127.0.0.1")
    subs, seen = [], []
    for _ in range(2):
        s = lab.sock("SUB")
        s.connect("tcp://127.0.0.1:%d" % port)
        s.setsockopt(lab.mod.SUBSCRIBE, b"t")
        seen.append(x.recv())
        subs.append(s)
    return x, subs, seen


def xpub_verbose(lab):
    x, (s1, s2), seen = _xpub_and_two_subscribers(lab, xpub_verbose=1)
    s1.setsockopt(lab.mod.UNSUBSCRIBE, b"t")
    s2.setsockopt(lab.mod.UNSUBSCRIBE, b"t")
    # Verbose shows every subscribe but only the last unsubscribe.
    return (seen, x.recv())


def xpub_verboser(lab):
    x, (s1, s2), seen = _xpub_and_two_subscribers(lab, xpub_verboser=1)
    s1.setsockopt(lab.mod.UNSUBSCRIBE, b"t")
    c = x.recv()
    s2.setsockopt(lab.mod.UNSUBSCRIBE, b"t")
    return (seen, c, x.recv())


def xpub_manual_with_welcome(lab):
    x = lab.sock("XPUB", xpub_manual=1)
    x.setsockopt(lab.mod.XPUB_WELCOME_MSG, b"W")
    port = x.bind_to_random_port("tcp://127.0.0.1")
    s = lab.sock("SUB")
    s.connect("tcp://127.0.0.1:%d" % port)
    s.setsockopt(lab.mod.SUBSCRIBE, b"W")
    s.setsockopt(lab.mod.SUBSCRIBE, b"t")
    a = x.recv()
    x.setsockopt(lab.mod.SUBSCRIBE, b"W")
    b = x.recv()
    x.setsockopt(lab.mod.SUBSCRIBE, b"t")
    welcome = s.recv()
    x.send(b"tx")
    x.send(b"Wx")
    return (a, b, welcome, s.recv(), s.recv())


def linger_defaults(lab):
    out = []
    for kind in ("SUB", "XSUB", "PUB", "DEALER", "PUSH"):
        s = lab.ctx.socket(getattr(lab.mod, kind))
        out.append((kind, s.getsockopt(lab.mod.LINGER)))
        s.close(linger=0)
    return out


def xsub_term_with_a_message_for_nobody(lab):
    # An XSUB's LINGER is zero: a message queued for a publisher that never comes does not
    # hold the context's term (with an infinite LINGER it would, for ever).
    import threading

    ctx = lab.mod.Context()
    x = ctx.socket(lab.mod.XSUB)
    x.connect(_nobody())
    x.send(b"\x01topic")
    x.send(b"a message upstream")
    x.close()
    done = threading.Event()
    threading.Thread(target=lambda: (ctx.term(), done.set()), daemon=True).start()
    return done.wait(10)


def frame_properties(lab):
    srv = lab.sock("PULL")
    port = srv.bind_to_random_port("tcp://127.0.0.1")
    cli = lab.sock("PUSH")
    cli.connect("tcp://127.0.0.1:%d" % port)
    cli.send(b"x")
    f = srv.recv(copy=False)
    out = {}
    for name in ("Socket-Type", "Peer-Address", "User-Id", "Routing-Id", "X-None"):
        out[name] = lab.again(lambda: f.get(name))
    return (out, f.get(lab.mod.MORE))


def mechanism_follows_the_last_security_option(lab):
    mod = lab.mod
    pub, sec = mod.curve_keypair()
    setters = {
        "publickey": lambda s: setattr(s, "curve_publickey", pub),
        "secretkey": lambda s: setattr(s, "curve_secretkey", sec),
        "serverkey": lambda s: setattr(s, "curve_serverkey", pub),
        "username": lambda s: setattr(s, "plain_username", b"u"),
        "password": lambda s: setattr(s, "plain_password", b"p"),
        "plain_server": lambda s: setattr(s, "plain_server", 1),
        "curve_server": lambda s: setattr(s, "curve_server", 1),
        "curve_server_off": lambda s: setattr(s, "curve_server", 0),
        "plain_server_off": lambda s: setattr(s, "plain_server", 0),
    }
    out = []
    for steps in (
        ["publickey"],
        ["secretkey"],
        ["serverkey"],
        ["username"],
        ["password"],
        ["plain_server"],
        ["curve_server"],
        ["publickey", "username"],
        ["username", "publickey"],
        ["curve_server", "curve_server_off"],
        ["plain_server", "plain_server_off"],
    ):
        s = lab.sock("DEALER")
        for step in steps:
            setters[step](s)
        out.append((steps, int(s.getsockopt(mod.MECHANISM))))
    return out


def topics_count(lab):
    # A SUB counts its distinct topics (a duplicate is one topic until unsubscribed twice);
    # a type without topics refuses the option. (An XPUB's count is left out: libzmq takes
    # its peers' subscriptions in only when the application next calls into the socket.)
    mod = lab.mod
    s = lab.sock("SUB")
    out = [s.getsockopt(mod.TOPICS_COUNT)]
    for topic in (b"a", b"b", b"a", b""):
        s.setsockopt(mod.SUBSCRIBE, topic)
        out.append(s.getsockopt(mod.TOPICS_COUNT))
    for topic in (b"a", b"a", b"nothing"):
        s.setsockopt(mod.UNSUBSCRIBE, topic)
        out.append(s.getsockopt(mod.TOPICS_COUNT))
    for kind in ("DEALER", "PUSH", "ROUTER"):
        out.append(lab.again(lambda: lab.sock(kind).getsockopt(mod.TOPICS_COUNT)))
    return out


def ipv4only_is_ipv6_the_other_way(lab):
    mod = lab.mod
    s = lab.sock("DEALER")
    out = [(s.getsockopt(mod.IPV4ONLY), s.getsockopt(mod.IPV6))]
    for opt, value in ((mod.IPV6, 1), (mod.IPV4ONLY, 1), (mod.IPV4ONLY, 0), (mod.IPV6, 0)):
        s.setsockopt(opt, value)
        out.append((s.getsockopt(mod.IPV4ONLY), s.getsockopt(mod.IPV6)))
    # The multicast options omq accepts without effect read libzmq's defaults.
    out.append((s.getsockopt(mod.MULTICAST_LOOP), s.getsockopt(mod.MULTICAST_MAXTPDU)))
    return out


def a_refused_message_leaves_nothing_behind(lab):
    # A REP's reply before any request is refused (EFSM; omq says so at the last frame,
    # libzmq at the first): none of its frames may ride ahead of the next, real reply.
    mod = lab.mod
    rep, req = lab.tcp_pair("REP", "REQ")
    lab.again(lambda: rep.send(b"stale", mod.SNDMORE))
    out = [lab.again(lambda: rep.send(b"stale too"))]
    req.send(b"q")
    out.append(rep.recv())
    rep.send(b"reply")
    out.append(req.recv_multipart())
    return out


def endpoint_errors(lab):
    # What bind, connect, unbind and disconnect say to endpoints a careless user writes.
    mod = lab.mod
    out = []
    long_ipc = "ipc:///tmp/" + "x" * 200
    for op, ep in (
        ("connect", "tcp://127.0.0.1:*"),
        ("connect", "tcp://*:5555"),
        ("connect", "tcp://localhost:*"),
        ("bind", long_ipc),
        ("connect", long_ipc),
        ("unbind", "nonsense"),
        ("disconnect", "nonsense"),
        ("unbind", "tcp://127.0.0.1:1"),
        ("disconnect", "tcp://127.0.0.1:1"),
    ):
        s = lab.sock("DEALER")
        out.append((op, ep[:30], lab.again(lambda: getattr(s, op)(ep))))
    # An interface's name binds its address.
    s = lab.sock("DEALER")
    s.bind("tcp://lo:*")
    out.append(s.last_endpoint.decode().rsplit(":", 1)[0])
    return out


def monitor_sees_close(lab):
    # Closing a monitored socket reports CLOSED for each endpoint still bound, then
    # MONITOR_STOPPED, even when the socket closes right after it bound (LINGER at its
    # default, so the close flushes in the background).
    mod = lab.mod
    if mod is omq:
        from omq.utils.monitor import recv_monitor_message
    else:
        from zmq.utils.monitor import recv_monitor_message
    s = lab.ctx.socket(mod.PULL)
    mon = s.get_monitor_socket()
    mon.rcvtimeo = 2000
    s.bind("tcp://127.0.0.1:*")
    s.bind(_inproc("monitored"))
    s.close()
    out = []
    while not out or out[-1] != "MONITOR_STOPPED":
        try:
            out.append(mod.Event(recv_monitor_message(mon)["event"]).name)
        except mod.ZMQError as e:
            out.append("errno %d" % e.errno)
            break
    return out


SCENARIOS = [
    probe_router,
    probe_router_from_dealer,
    stream_connect_data_disconnect,
    rcvmore,
    req_relaxed_correlate,
    req_send_twice,
    inproc_hwm_bind_first,
    inproc_hwm_connect_first,
    immediate_without_peer,
    queued_for_an_absent_peer,
    pair_inproc_second_peer,
    rep_envelope,
    last_endpoint_wildcard,
    unbind_with_wildcard_port,
    xsub_sends_subscriptions_and_messages,
    router_handover,
    xpub_verbose,
    xpub_verboser,
    xpub_manual_with_welcome,
    linger_defaults,
    xsub_term_with_a_message_for_nobody,
    frame_properties,
    mechanism_follows_the_last_security_option,
    topics_count,
    ipv4only_is_ipv6_the_other_way,
    a_refused_message_leaves_nothing_behind,
    endpoint_errors,
    monitor_sees_close,
]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda f: f.__name__)
def test_same_as_libzmq(scenario):
    results = {}
    for mod in (pyzmq, omq):
        lab = Lab(mod)
        try:
            results[mod.__name__] = scenario(lab)
        finally:
            lab.close()
    assert results["omq"] == results["zmq"]
