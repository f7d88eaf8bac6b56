"""ZAP (`omq.auth`'s ThreadAuthenticator, and a hand-written handler), `proxy_steerable` and
`omq.devices`, with pyzmq (libzmq) peers where it applies."""

import os
import subprocess
import sys
import textwrap
import threading
import time

import pytest
import zmq as pyzmq

import omq
import omq.auth
import omq.devices
from omq.auth.thread import ThreadAuthenticator


@pytest.fixture
def ctx():
    c = omq.Context()
    yield c
    c.destroy(linger=0)


@pytest.fixture
def zctx():
    c = pyzmq.Context()
    yield c
    c.destroy(linger=0)


@pytest.fixture
def auth(ctx):
    a = ThreadAuthenticator(ctx)
    a.start()
    yield a
    a.stop()


def server(ctx, kind=omq.PULL):
    s = ctx.socket(kind)
    s.linger = 0
    s.rcvtimeo = 5000
    return s


def client(zctx, kind=pyzmq.PUSH):
    c = zctx.socket(kind)
    c.linger = 0
    c.sndtimeo = 5000
    return c


def gets_through(srv, cli, wait=1000):
    """Whether a message from the (pyzmq) client reaches the (omq) server."""
    srv.rcvtimeo = wait
    try:
        cli.send(b"knock")
    except pyzmq.Again:
        return False
    try:
        return srv.recv() == b"knock"
    except omq.Again:
        return False


def test_plain_with_thread_authenticator_pyzmq_client(ctx, zctx, auth):
    auth.configure_plain(domain="*", passwords={"admin": "secret"})
    srv = server(ctx)
    srv.plain_server = True
    port = srv.bind_to_random_port("tcp://127.0.0.1")

    good = client(zctx)
    good.plain_username = b"admin"
    good.plain_password = b"secret"
    good.connect("tcp://127.0.0.1:%d" % port)
    assert gets_through(srv, good, 5000)

    bad = client(zctx)
    bad.plain_username = b"admin"
    bad.plain_password = b"wrong"
    bad.connect("tcp://127.0.0.1:%d" % port)
    # Refused: libzmq's client never completes the handshake, so the message stays queued.
    assert not gets_through(srv, bad, 500)


def test_curve_allow_any_and_key_directory(ctx, zctx, auth, tmp_path):
    server_public, server_secret = omq.curve_keypair()
    known_public, known_secret = pyzmq.curve_keypair()
    other_public, other_secret = pyzmq.curve_keypair()

    def curve_client(public, secret):
        c = client(zctx)
        c.curve_publickey = public
        c.curve_secretkey = secret
        c.curve_serverkey = server_public
        return c

    srv = server(ctx)
    srv.curve_server = True
    srv.curve_secretkey = server_secret
    port = srv.bind_to_random_port("tcp://127.0.0.1")

    # A directory of public certificates: only those clients get in.
    keys = tmp_path / "public_keys"
    keys.mkdir()
    pub_file, _ = omq.auth.create_certificates(str(tmp_path), "known")
    os.replace(pub_file, keys / "known.key")
    known_public, known_secret = omq.auth.load_certificate(str(tmp_path / "known.key_secret"))
    auth.configure_curve(domain="*", location=str(keys))

    known = curve_client(known_public, known_secret)
    known.connect("tcp://127.0.0.1:%d" % port)
    assert gets_through(srv, known, 5000)
    other = curve_client(other_public, other_secret)
    other.connect("tcp://127.0.0.1:%d" % port)
    assert not gets_through(srv, other, 500)

    # CURVE_ALLOW_ANY: any client that knows the server's key.
    auth.configure_curve(domain="*", location=omq.auth.CURVE_ALLOW_ANY)
    anyone = curve_client(*pyzmq.curve_keypair())
    anyone.connect("tcp://127.0.0.1:%d" % port)
    assert gets_through(srv, anyone, 5000)


@pytest.mark.parametrize(
    "rule,through",
    [(("deny", "127.0.0.1"), False), (("allow", "10.1.2.3"), False), (("allow", "127.0.0.1"), True)],
)
def test_deny_and_allow_addresses(ctx, zctx, auth, rule, through):
    srv = server(ctx)
    srv.zap_domain = b"global"  # NULL security asks ZAP only with a domain, as libzmq
    port = srv.bind_to_random_port("tcp://127.0.0.1")
    getattr(auth, rule[0])(rule[1])
    c = client(zctx)
    c.connect("tcp://127.0.0.1:%d" % port)
    assert gets_through(srv, c, 5000 if through else 500) == through


def test_without_a_handler_everyone_gets_in(ctx, zctx):
    srv = server(ctx)
    srv.plain_server = True
    port = srv.bind_to_random_port("tcp://127.0.0.1")
    c = client(zctx)
    c.plain_username = b"anyone"
    c.plain_password = b"anything"
    c.connect("tcp://127.0.0.1:%d" % port)
    assert gets_through(srv, c, 5000)


def test_zap_request_and_reply_properties(ctx):
    """A hand-written handler sees libzmq's request; its User-Id and metadata reach the
    server's frames (copy=False), beside the peer's own properties."""
    seen = []

    def handler():
        rep = ctx.socket(omq.REP)
        rep.linger = 0
        rep.bind("inproc://zeromq.zap.01")
        ready.set()
        rep.rcvtimeo = 5000
        msg = rep.recv_multipart()
        seen.append(msg)
        rep.send_multipart([msg[0], msg[1], b"200", b"OK", b"alice", b"\x05Hello\0\0\0\x05World"])
        rep.close()

    ready = threading.Event()
    t = threading.Thread(target=handler)
    t.start()
    assert ready.wait(5)
    srv = server(ctx, omq.DEALER)
    srv.routing_id = b"IDENT"
    srv.plain_server = True
    port = srv.bind_to_random_port("tcp://127.0.0.1")
    cli = ctx.socket(omq.DEALER)
    cli.linger = 0
    cli.plain_username = b"user"
    cli.plain_password = b"pass"
    cli.connect("tcp://127.0.0.1:%d" % port)
    cli.send_multipart([b"a", b"b"])
    frames = srv.recv_multipart(copy=False)
    t.join(5)
    assert [f.bytes for f in frames] == [b"a", b"b"]
    for f in frames:
        assert f.get("User-Id") == "alice"
        assert f.get("Hello") == "World"
        assert f["Socket-Type"] == "DEALER"
    cli.send(b"c")
    one = srv.recv(copy=False)
    assert one.get("User-Id") == "alice"
    version, _seq, domain, address, identity, mechanism, user, password = seen[0]
    assert (version, domain, address, identity, mechanism, user, password) == (
        b"1.0", b"", b"127.0.0.1", b"IDENT", b"PLAIN", b"user", b"pass")
    cli.close()


def test_proxy_steerable(ctx):
    front, back, ctl = ctx.socket(omq.PULL), ctx.socket(omq.PUSH), ctx.socket(omq.PAIR)
    push, pull, ctl_peer = ctx.socket(omq.PUSH), ctx.socket(omq.PULL), ctx.socket(omq.PAIR)
    for s in (front, back, ctl, push, pull, ctl_peer):
        s.linger = 0
    front.bind("inproc://steer-front")
    back.bind("inproc://steer-back")
    ctl.bind("inproc://steer-ctl")
    push.connect("inproc://steer-front")
    pull.connect("inproc://steer-back")
    ctl_peer.connect("inproc://steer-ctl")
    pull.rcvtimeo = 5000
    done = []
    t = threading.Thread(target=lambda: done.append(omq.proxy_steerable(front, back, None, ctl)))
    t.start()
    push.send(b"one")
    assert pull.recv() == b"one"
    ctl_peer.send(b"PAUSE")
    time.sleep(0.2)
    push.send(b"two")
    pull.rcvtimeo = 300
    with pytest.raises(omq.Again):
        pull.recv()
    ctl_peer.send(b"RESUME")
    pull.rcvtimeo = 5000
    assert pull.recv() == b"two"
    ctl_peer.send(b"STATISTICS")
    ctl_peer.rcvtimeo = 5000
    stats = ctl_peer.recv_multipart()
    assert len(stats) == 8
    assert int.from_bytes(stats[0], "little") == 2  # messages in at the frontend
    ctl_peer.send(b"TERMINATE")
    t.join(5)
    assert not t.is_alive() and done == [None]
    for s in (front, back, ctl, push, pull, ctl_peer):
        s.close()


def test_thread_proxy_device_with_pyzmq_peers(zctx):
    dev = omq.devices.ThreadProxy(omq.PULL, omq.PUSH, omq.PUSH)
    dev.context_factory = omq.Context
    iface = "tcp://127.0.0.1"
    port_in = dev.bind_in_to_random_port(iface)
    port_out = dev.bind_out_to_random_port(iface)
    port_mon = dev.bind_mon_to_random_port(iface)
    dev.start()
    push, pull, mon = client(zctx), zctx.socket(pyzmq.PULL), zctx.socket(pyzmq.PULL)
    for s in (pull, mon):
        s.linger = 0
        s.rcvtimeo = 5000
    push.connect("%s:%d" % (iface, port_in))
    pull.connect("%s:%d" % (iface, port_out))
    mon.connect("%s:%d" % (iface, port_mon))
    push.send(b"through the device")
    assert pull.recv() == b"through the device"
    assert mon.recv() == b"through the device"
    for s in (push, pull, mon):
        s.close()
    # term() makes the device's proxy raise ETERM; the device then closes its sockets.
    dev._context.term()
    dev.join(5)
    assert dev.done


def test_certificates_round_trip(tmp_path):
    """create_certificates writes ZPL that load_certificate reads back (a key may hold '#' or
    '=', both Z85 digits); load_certificates takes the public `.key` files only."""
    pub_file, sec_file = omq.auth.create_certificates(
        str(tmp_path), "alice", metadata={"name": "Alice", "email": b"a@example.org"})
    assert (pub_file, sec_file) == (str(tmp_path / "alice.key"), str(tmp_path / "alice.key_secret"))
    public, secret = omq.auth.load_certificate(sec_file)
    assert omq.curve_public(secret) == public and len(public) == 40
    assert omq.auth.load_certificate(pub_file) == (public, None)
    assert 'name = "Alice"' in open(pub_file).read() and "secret" not in open(pub_file).read()
    assert os.stat(sec_file).st_mode & 0o077 == 0

    odd_public, odd_secret = b"#" * 5 + public[5:], b"=" * 5 + secret[5:]
    (tmp_path / "odd.key_secret").write_text(
        '#   a comment\ncurve\n    public-key = "%s"\n    secret-key = "%s"\n'
        % (odd_public.decode(), odd_secret.decode()))
    assert omq.auth.load_certificate(str(tmp_path / "odd.key_secret")) == (odd_public, odd_secret)
    (tmp_path / "notes.key").write_text("metadata\n    name = \"no key here\"\n")
    with pytest.raises(ValueError):
        omq.auth.load_certificate(str(tmp_path / "notes.key"))
    assert omq.auth.load_certificates(str(tmp_path)) == {public: True}


def test_process_proxy_device():
    """ProcessProxy: the child process makes its own context and sockets on the ports the
    parent reserved (in a subprocess, so the fork does not copy pytest's threads)."""
    code = textwrap.dedent(
        """
        import omq, omq.devices
        dev = omq.devices.ProcessProxy(omq.PULL, omq.PUSH, omq.PUSH)
        iface = "tcp://127.0.0.1"
        ports = [dev.bind_in_to_random_port(iface), dev.bind_out_to_random_port(iface),
                 dev.bind_mon_to_random_port(iface)]
        dev.start()
        ctx = omq.Context()
        push, pull, mon = ctx.socket(omq.PUSH), ctx.socket(omq.PULL), ctx.socket(omq.PULL)
        for s, port in zip((push, pull, mon), ports):
            s.linger = 0
            s.rcvtimeo = 10000
            s.connect("%s:%d" % (iface, port))
        push.send(b"via a process")
        print(pull.recv().decode(), mon.recv().decode(), sep="|")
        dev.launcher.terminate()
        dev.join(10)
        ctx.destroy(linger=0)
        """
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60)
    assert r.stdout.strip() == b"via a process|via a process", r.stderr.decode()


def test_exit_with_a_daemon_thread_blocked_in_recv():
    """Python's exit with a daemon thread blocked in omq ends cleanly (the thread stays
    parked), not with an abort from a forced unwind through Rust frames."""
    code = textwrap.dedent(
        """
        import threading, time, omq
        ctx = omq.Context.instance()
        s = ctx.socket(omq.PULL)
        s.bind("inproc://exit-blocked")
        threading.Thread(target=s.recv, daemon=True).start()
        time.sleep(0.3)

        class Slow:
            # Collected while the interpreter finalizes, giving up the GIL for a while: the
            # blocked thread's wait ends a slice meanwhile and would take the GIL back.
            def __del__(self):
                time.sleep(0.3)

        keep = Slow()
        print("exiting")
        """
    )
    # The race is the thread's against the finalizing interpreter: a few tries (broken, it
    # aborted in two runs out of three).
    for _ in range(4):
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60)
        assert r.stdout.strip() == b"exiting"
        assert r.returncode == 0, r.stderr.decode()


def test_exit_with_daemon_threads_taking_the_gil_back():
    """Python's exit while daemon threads go in and out of omq's waits (1 ms receive timeouts)
    ends cleanly: a thread on its way back to the GIL when the atexit handler runs gets it
    before finalization starts, later ones stay parked (without the wait for those on their
    way back, the interpreter ended one with a forced unwind: an abort in 12 runs of 40)."""
    code = textwrap.dedent(
        """
        import sys, threading, time, omq
        ctx = omq.Context.instance()

        def spin(i):
            s = ctx.socket(omq.PULL)
            s.rcvtimeo = 1
            s.bind("inproc://exit-spin-%d" % i)
            while True:
                try:
                    s.recv()
                except omq.Again:
                    pass

        for i in range(8):
            threading.Thread(target=spin, args=(i,), daemon=True).start()
        time.sleep(0.05)
        print("exiting")
        sys.exit(0)
        """
    )
    for _ in range(20):
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60)
        assert r.stdout.strip() == b"exiting"
        assert r.returncode == 0, (r.returncode, r.stderr.decode())


def test_fd_signals_events_for_select(ctx):
    """ZMQ_FD: readable when events may have changed; reading EVENTS clears it; it fires
    again when a message arrives after the socket was drained (libzmq's edge semantics)."""
    import select

    pull, push = ctx.socket(omq.PULL), ctx.socket(omq.PUSH)
    for s in (pull, push):
        s.linger = 0
    pull.bind("inproc://fd-select")
    push.connect("inproc://fd-select")
    fd = pull.FD
    assert fd == pull.getsockopt(omq.FD) == pull.fileno() and isinstance(fd, int)
    assert pull.EVENTS & omq.POLLIN == 0  # clears the first, unconditional signal
    assert select.select([fd], [], [], 0)[0] == []
    for round in range(3):
        push.send(b"m%d" % round)
        assert select.select([fd], [], [], 5)[0] == [fd], "ZMQ_FD never fired"
        got = []
        while pull.EVENTS & omq.POLLIN:
            got.append(pull.recv(omq.NOBLOCK))
        assert got == [b"m%d" % round]
        assert select.select([fd], [], [], 0)[0] == [], "ZMQ_FD stays readable"
    pull.close()
    push.close()


async def test_fd_drives_an_asyncio_loop_with_a_pyzmq_peer(ctx, zctx):
    """The pattern of pyzmq's FD users (tornado's ZMQStream): add_reader on FD, then receive
    while EVENTS says POLLIN."""
    import asyncio

    pull = ctx.socket(omq.PULL)
    pull.linger = 0
    port = pull.bind_to_random_port("tcp://127.0.0.1")
    push = client(zctx)
    push.connect("tcp://127.0.0.1:%d" % port)
    loop = asyncio.get_running_loop()
    got, done = [], asyncio.Event()

    def on_fd():
        while pull.EVENTS & omq.POLLIN:
            got.append(pull.recv(omq.NOBLOCK))
        if len(got) == 300:
            done.set()

    loop.add_reader(pull.FD, on_fd)
    try:
        for i in range(300):
            push.send(b"%d" % i)
            if i % 50 == 0:
                await asyncio.sleep(0.01)
        await asyncio.wait_for(done.wait(), 10)
    finally:
        loop.remove_reader(pull.FD)
    assert got == [b"%d" % i for i in range(300)]
    pull.close()


def test_draft_routing_id_and_group(ctx):
    """SERVER answers the CLIENT that asked (routing_id= on send, Frame.routing_id on
    receive, or a Frame carrying it); DISH gets what RADIO sends to a group it joined, and the
    Frame says which group."""
    server, client_ = ctx.socket(omq.SERVER), ctx.socket(omq.CLIENT)
    for s in (server, client_):
        s.linger = 0
        s.rcvtimeo = 5000
    port = server.bind_to_random_port("tcp://127.0.0.1")
    client_.connect("tcp://127.0.0.1:%d" % port)
    client_.send(b"question")
    f = server.recv(copy=False)
    assert f.bytes == b"question" and isinstance(f.routing_id, int) and f.routing_id
    server.send(b"answer", routing_id=f.routing_id)
    assert client_.recv() == b"answer"
    reply = omq.Frame(b"again")
    reply.routing_id = f.routing_id
    server.send(reply)
    assert client_.recv() == b"again"

    radio, dish = ctx.socket(omq.RADIO), ctx.socket(omq.DISH)
    for s in (radio, dish):
        s.linger = 0
    port = dish.bind_to_random_port("tcp://127.0.0.1")
    radio.connect("tcp://127.0.0.1:%d" % port)
    dish.join("news")
    dish.rcvtimeo = 50
    deadline = time.monotonic() + 5
    while True:  # the join reaches the RADIO some time after the connection
        radio.send(b"other", group="weather")
        radio.send(b"headline", group=b"news")
        try:
            f = dish.recv(copy=False)
            break
        except omq.Again:
            assert time.monotonic() < deadline, "the DISH never got its group"
    assert (f.bytes, f.group) == (b"headline", "news")
    dish.leave("news")
    for s in (server, client_, radio, dish):
        s.close()
