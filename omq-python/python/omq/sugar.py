"""pyzmq's Context, Socket, Frame and Poller on omq's native sockets."""

import atexit
import errno as _errno
import json as _json
import os
import pickle as _pickle
import random
import select as _select
import threading
import time
import weakref

from . import _omq
from . import constants as C
from .constants import (
    DONTWAIT,
    EINVAL,
    ENOTSOCK,
    ENOTSUP,
    EVENT_ALL,
    NOBLOCK,
    PAIR,
    POLLIN,
    POLLOUT,
    SNDMORE,
)
from .error import Again, ZMQBindError, ZMQError

_opt_by_name = {name: num for num, name in C.sockopt_names.items()}
# pyzmq's aliases.
_opt_by_name.update({"IDENTITY": C.ROUTING_ID, "CONNECT_RID": C.CONNECT_ROUTING_ID, "HWM": C.HWM})
_ctx_opts = {
    "IO_THREADS": C.IO_THREADS,
    "MAX_SOCKETS": C.MAX_SOCKETS,
    "SOCKET_LIMIT": C.SOCKET_LIMIT,
    "THREAD_PRIORITY": C.THREAD_PRIORITY,
    "THREAD_SCHED_POLICY": C.THREAD_SCHED_POLICY,
    "MAX_MSGSZ": C.MAX_MSGSZ,
    "MSG_T_SIZE": C.MSG_T_SIZE,
    "THREAD_NAME_PREFIX": C.THREAD_NAME_PREFIX,
    "BLOCKY": C.BLOCKY,
    "IPV6": C.IPV6,
}
_ctx_defaults = {
    C.IO_THREADS: 1,
    C.MAX_SOCKETS: 1023,
    C.SOCKET_LIMIT: 65535,
    C.THREAD_PRIORITY: -1,
    C.THREAD_SCHED_POLICY: -1,
    C.MAX_MSGSZ: 2**31 - 1,
    C.MSG_T_SIZE: 64,
    C.BLOCKY: 1,
    C.IPV6: 0,
}
# getsockopt's answer for an option never set (libzmq 4.3's defaults).
_sock_defaults = {
    C.LINGER: -1,
    C.RECONNECT_IVL: 100,
    C.RECONNECT_IVL_MAX: 0,
    C.BACKLOG: 100,
    C.MAXMSGSIZE: -1,
    C.SNDBUF: -1,
    C.RCVBUF: -1,
    C.TCP_KEEPALIVE: -1,
    C.TCP_KEEPALIVE_CNT: -1,
    C.TCP_KEEPALIVE_IDLE: -1,
    C.TCP_KEEPALIVE_INTVL: -1,
    C.HEARTBEAT_TIMEOUT: -1,
    C.HANDSHAKE_IVL: 30000,
    C.CONNECT_TIMEOUT: 0,
    C.RATE: 100,
    C.RECOVERY_IVL: 10000,
    C.MULTICAST_HOPS: 1,
    C.MULTICAST_LOOP: 1,
    C.MULTICAST_MAXTPDU: 1500,
    C.USE_FD: -1,  # omq never takes a descriptor from the application: libzmq's "none"
    C.THREAD_SAFE: 0,
    C.IMMEDIATE: 0,
    C.IPV6: 0,
    C.MECHANISM: C.NULL,
}
_native_get = {
    C.RCVTIMEO, C.SNDTIMEO, C.LINGER, C.RCVMORE, C.SNDHWM, C.RCVHWM, C.TYPE, C.EVENTS, C.FD,
    C.TOPICS_COUNT,
}
_write_only = {C.SUBSCRIBE, C.UNSUBSCRIBE}
# Options omq does not implement: setting one raises EINVAL, and so does reading it (a value
# read back would claim a setting that nothing follows).
_unsupported = {
    C.GSSAPI_SERVER, C.GSSAPI_PRINCIPAL, C.GSSAPI_SERVICE_PRINCIPAL, C.GSSAPI_PLAINTEXT,
    C.GSSAPI_PRINCIPAL_NAMETYPE, C.GSSAPI_SERVICE_PRINCIPAL_NAMETYPE,
    C.IPC_FILTER_PID, C.IPC_FILTER_UID, C.IPC_FILTER_GID, C.TCP_ACCEPT_FILTER,
    C.SOCKS_PROXY, C.SOCKS_USERNAME, C.SOCKS_PASSWORD, C.ROUTER_RAW,
    C.VMCI_BUFFER_SIZE, C.VMCI_BUFFER_MIN_SIZE, C.VMCI_BUFFER_MAX_SIZE, C.VMCI_CONNECT_TIMEOUT,
    C.WSS_KEY_PEM, C.WSS_CERT_PEM, C.WSS_TRUST_PEM, C.WSS_HOSTNAME, C.WSS_TRUST_SYSTEM,
    C.ONLY_FIRST_SUBSCRIBE, C.XPUB_MANUAL_LAST_VALUE,
    C.NORM_MODE, C.NORM_UNICAST_NACK, C.NORM_BUFFER_SIZE, C.NORM_SEGMENT_SIZE,
    C.NORM_BLOCK_SIZE, C.NORM_NUM_PARITY, C.NORM_NUM_AUTOPARITY, C.NORM_PUSH,
}
# libzmq's on/off options that take any int and read back as 0 or 1.
_relaxed_flags = {C.INVERT_MATCHING, C.ZAP_ENFORCE_DOMAIN, C.LOOPBACK_FASTPATH}


def _cls_name(cls):
    # pyzmq's spelling: zmq.Socket, zmq.asyncio.Socket; a user's subclass keeps its module.
    mod = cls.__module__
    if mod == "omq.sugar":
        mod = "zmq"
    elif mod.startswith("omq."):
        mod = "zmq." + mod[4:]
    return "%s.%s" % (mod, cls.__name__)


class MessageTracker:
    """omq copies what it sends or holds an immutable bytes object, so the caller's buffer is free
    at once: a tracker that is done."""

    def __init__(self, *towatch):
        self.events = set()
        self.peers = set()

    @property
    def done(self):
        return True

    def wait(self, timeout=-1):
        return None


_FINISHED_TRACKER = MessageTracker()


class Frame:
    """A message frame (pyzmq's Frame / Message), holding its bytes."""

    def __init__(self, data=b"", track=False, copy=None, copy_threshold=None):
        if isinstance(data, str):
            raise TypeError("Str objects not allowed. Only: bytes, buffer interfaces.")
        if isinstance(data, Frame):
            data = data.bytes
        self._bytes = data if isinstance(data, bytes) else bytes(memoryview(data))
        self.more = False
        self.tracker = _FINISHED_TRACKER if track else None
        self.routing_id = None
        self.group = None
        self._properties = {}

    @property
    def bytes(self):
        return self._bytes

    @property
    def buffer(self):
        return memoryview(self._bytes)

    @property
    def done(self):
        return True

    def __bytes__(self):
        return self._bytes

    def __len__(self):
        return len(self._bytes)

    def __eq__(self, other):
        if isinstance(other, Frame):
            return self._bytes == other._bytes
        return self._bytes == other

    def __hash__(self):
        return hash(self._bytes)

    def __copy__(self):
        f = Frame(self._bytes)
        f.more = self.more
        return f

    fast_copy = __copy__

    def __str__(self):
        return self._bytes.decode()

    def __repr__(self):
        return "<omq.Frame(%r)>" % (self._bytes[:32],)

    def get(self, option):
        if isinstance(option, str):
            # A connection property (Socket-Type, Identity, User-Id, a ZAP handler's).
            props = self._properties
            if option in props:
                return props[option]
            low = option.lower()
            for k, v in props.items():
                if k.lower() == low:
                    return v
            # libzmq's zmq_msg_gets has no value for it: pyzmq raises EINVAL.
            raise ZMQError(EINVAL)
        if option == C.MORE:
            return int(self.more)
        raise ZMQError(EINVAL)

    def set(self, option, value):
        raise ZMQError(EINVAL)

    def __getitem__(self, key):
        return self.get(key)


Message = Frame


class _SocketContext:
    """What bind/connect return: `with s.bind(url):` unbinds on exit."""

    def __init__(self, socket, kind, addr):
        self.socket, self.kind, self.addr = socket, kind, addr

    def __repr__(self):
        return "<SocketContext(%s=%r)>" % (self.kind, self.addr)

    def __enter__(self):
        return self.socket

    def __exit__(self, *exc):
        if self.socket.closed:
            return
        if self.kind == "bind":
            self.socket.unbind(self.addr)
        else:
            self.socket.disconnect(self.addr)


_raw_send = _omq.RawSocket.send
_raw_recv = _omq.RawSocket.recv
_raw_send_multipart = _omq.RawSocket.send_multipart
_raw_recv_multipart = _omq.RawSocket.recv_multipart


class Socket(_omq.RawSocket):
    """A ZeroMQ socket with pyzmq's API."""

    def __new__(cls, context=None, socket_type=None, *args, **kwargs):
        if socket_type is None:
            if isinstance(context, int):
                context, socket_type = None, context
            else:
                raise TypeError("Socket needs a socket type")
        if context is None:
            context = Context.instance()
        if context.closed:
            raise ZMQError(ENOTSUP)
        self = super().__new__(cls, context._rt, int(socket_type))
        return self

    def __init__(self, context=None, socket_type=None, *, shadow=0, copy_threshold=None):
        if socket_type is None and isinstance(context, int):
            context = None
        if context is None:
            context = Context.instance()
        d = self.__dict__
        d["context"] = context
        d["_opts"] = {}
        d["_last_endpoint"] = b""
        d["_monitor_socket"] = None
        d["_monitor_addr"] = None
        d["copy_threshold"] = copy_threshold or 65536
        d["_shadow"] = False
        context._sockets.add(self)

    # --- attributes as options (sock.linger = 0, sock.rcvtimeo) ---

    def __setattr__(self, name, value):
        if name in ("subscribe", "unsubscribe"):
            getattr(self, name)(value)
            return
        if name in self.__dict__ or name.startswith("_") or hasattr(type(self), name):
            object.__setattr__(self, name, value)
            return
        opt = _opt_by_name.get(name.upper())
        if opt is None:
            raise AttributeError("%s has no such option: %s" % (type(self).__name__, name.upper()))
        self.set(opt, value)

    def __dir__(self):
        return sorted(set(object.__dir__(self)) | set(_opt_by_name))

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        opt = _opt_by_name.get(name.upper())
        if opt is None:
            raise AttributeError("%s has no attribute %r" % (type(self).__name__, name))
        if opt in _write_only:
            raise AttributeError("%s attribute is write-only" % name)
        try:
            return self.get(opt)
        except ZMQError as e:
            # As pyzmq: an option that cannot be read is no attribute (getattr with a
            # default, and mock's spec, rely on that).
            if e.errno == EINVAL:
                raise AttributeError("%s attribute is write-only" % name) from None
            raise

    # --- lifecycle ---

    @property
    def underlying(self):
        return id(self)

    @property
    def type(self):
        return self.socket_type

    def __repr__(self):
        t = C.socket_type_names.get(self.socket_type, str(self.socket_type))
        return "<%s(zmq.%s) at %#x%s>" % (
            _cls_name(type(self)),
            t,
            id(self),
            " closed" if self.closed else "",
        )

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self, linger=None):
        self.__dict__["_monitor_socket"] = None
        _omq.RawSocket.close(self, linger)
        ctx = self.__dict__.get("context")
        if ctx is not None:
            ctx._sockets.discard(self)

    def fileno(self):
        """ZMQ_FD: readable when the socket's events may have changed (then read EVENTS)."""
        return self.get(C.FD)

    # --- endpoints ---

    def bind(self, addr):
        if isinstance(addr, bytes):
            addr = addr.decode()
        try:
            ep = _omq.RawSocket.bind(self, addr)
        except ZMQError as e:
            e.strerror += " (addr=%r)" % addr
            raise
        self.__dict__["_last_endpoint"] = ep.encode()
        return _SocketContext(self, "bind", ep)

    def connect(self, addr):
        if isinstance(addr, bytes):
            addr = addr.decode()
        try:
            _omq.RawSocket.connect(self, addr)
        except ZMQError as e:
            e.strerror += " (addr=%r)" % addr
            raise
        self.__dict__["_last_endpoint"] = addr.encode()
        return _SocketContext(self, "connect", addr)

    def unbind(self, addr):
        if isinstance(addr, bytes):
            addr = addr.decode()
        _omq.RawSocket.unbind(self, addr)

    def disconnect(self, addr):
        if isinstance(addr, bytes):
            addr = addr.decode()
        _omq.RawSocket.disconnect(self, addr)

    def bind_to_random_port(self, addr, min_port=49152, max_port=65536, max_tries=100):
        if min_port == 49152 and max_port == 65536:
            self.bind("%s:*" % addr)
            return int(self.last_endpoint.decode().rsplit(":", 1)[-1])
        for _ in range(max_tries):
            port = random.randrange(min_port, max_port)
            try:
                self.bind("%s:%s" % (addr, port))
            except ZMQError as e:
                if e.errno not in (_errno.EADDRINUSE, C.EADDRINUSE, _errno.EACCES):
                    raise
            else:
                return port
        raise ZMQBindError("Could not bind socket to random port.")

    # --- options ---

    def set(self, option, optval):
        option = int(option)
        if self.closed:
            raise ZMQError(ENOTSOCK)
        if isinstance(optval, str) and option in C.bytes_sockopts:
            raise TypeError("unicode not allowed, use setsockopt_string")
        if option not in C.bytes_sockopts and not isinstance(optval, int):
            raise TypeError("expected int, got: %r" % (optval,))
        if option in _write_only and self.socket_type not in (C.SUB, C.XSUB, C.XPUB, C.DISH):
            raise ZMQError(EINVAL)
        self._set(option, optval)
        # MECHANISM is libzmq's: the last security option set decides it.
        if option in (C.CURVE_PUBLICKEY, C.CURVE_SECRETKEY, C.CURVE_SERVERKEY):
            self._opts[C.MECHANISM] = C.CURVE
        elif option in (C.PLAIN_USERNAME, C.PLAIN_PASSWORD):
            self._opts[C.MECHANISM] = C.PLAIN
        elif option == C.CURVE_SERVER:
            self._opts[C.MECHANISM] = C.CURVE if optval else C.NULL
        elif option == C.PLAIN_SERVER:
            self._opts[C.MECHANISM] = C.PLAIN if optval else C.NULL
        if option in _relaxed_flags:
            optval = 1 if optval else 0
        elif option == C.HEARTBEAT_TTL:
            optval = max(optval, 0) // 100 * 100  # libzmq keeps tenths of a second
        if option not in _write_only:
            if option == C.HWM:
                self._opts[C.SNDHWM] = optval
                self._opts[C.RCVHWM] = optval
            if option == C.IPV4ONLY:
                option, optval = C.IPV6, 0 if optval else 1
            self._opts[option] = optval

    setsockopt = set

    def get(self, option):
        option = int(option)
        if self.closed:
            raise ZMQError(ENOTSOCK)
        if option in _native_get:
            return self._get(option)
        if option == C.LAST_ENDPOINT:
            return self._last_endpoint
        if option == C.ROUTING_ID:
            return self._opts.get(option, b"")
        if option == C.HWM:
            return self._get(C.SNDHWM)
        if option in _write_only or option in _unsupported:
            raise ZMQError(EINVAL)
        if option == C.IPV4ONLY:
            # libzmq's IPV4ONLY is IPV6 the other way round, both kept as one setting.
            return 0 if self._opts.get(C.IPV6, 0) else 1
        if option == C.MECHANISM:
            return self._opts.get(C.MECHANISM, C.NULL)
        if option in (C.CURVE_PUBLICKEY, C.CURVE_SECRETKEY, C.CURVE_SERVERKEY):
            v = self._opts.get(option)
            if v is None:
                return b"\0" * 41
            if len(v) == 32:
                return _omq.z85_encode(v)
            return bytes(v)
        if option in self._opts:
            v = self._opts[option]
            if option in C.bytes_sockopts and isinstance(v, (bytearray, memoryview)):
                return bytes(v)
            return v
        if option in _sock_defaults:
            return _sock_defaults[option]
        if option in C.bytes_sockopts:
            return b""
        if option in C.int_sockopts or option in C.int64_sockopts:
            return 0
        raise ZMQError(EINVAL)

    getsockopt = get

    def set_string(self, option, optval, encoding="utf-8"):
        if not isinstance(optval, str):
            raise TypeError("unicode strings only")
        return self.set(option, optval.encode(encoding))

    setsockopt_string = set_string
    setsockopt_unicode = set_string

    def get_string(self, option, encoding="utf-8"):
        if option not in C.bytes_sockopts:
            raise TypeError("option %i will not return a string to be decoded" % option)
        return self.get(option).decode(encoding)

    getsockopt_string = get_string
    getsockopt_unicode = get_string

    @property
    def hwm(self):
        return self.get(C.SNDHWM)

    @hwm.setter
    def hwm(self, value):
        self.set(C.SNDHWM, value)
        self.set(C.RCVHWM, value)

    @property
    def rcvmore(self):
        return bool(_omq.RawSocket.rcvmore.__get__(self))

    def subscribe(self, topic):
        if isinstance(topic, str):
            topic = topic.encode("utf8")
        _omq.RawSocket.subscribe(self, topic)

    def unsubscribe(self, topic):
        if isinstance(topic, str):
            topic = topic.encode("utf8")
        _omq.RawSocket.unsubscribe(self, topic)

    # --- send and receive ---

    def recv_into(self, buffer, /, *, nbytes=0, flags=0):
        if nbytes < 0:
            raise ValueError("nbytes=%i must be non-negative" % nbytes)
        view = memoryview(buffer)
        if view.readonly:
            raise BufferError("Cannot recv into a read-only buffer")
        if not view.c_contiguous:
            raise BufferError("Can only recv into a contiguous buffer")
        view = view.cast("B")
        if nbytes == 0:
            nbytes = len(view)
        elif nbytes > len(view):
            raise ValueError("nbytes=%i exceeds buffer size %i" % (nbytes, len(view)))
        data = _raw_recv(self, flags)
        n = min(nbytes, len(data))
        view[:n] = data[:n]
        return len(data)

    def send_multipart(self, msg_parts, flags=0, copy=True, track=False, **kwargs):
        if not isinstance(msg_parts, (list, tuple)):
            # A generator or any other iterable: read once, here (the check below would
            # otherwise use it up and leave nothing to send).
            msg_parts = list(msg_parts)
        for i, p in enumerate(msg_parts):
            if isinstance(p, (bytes, Frame, memoryview, bytearray)):
                continue
            try:
                memoryview(p)
            except TypeError:
                rmsg = repr(p)
                if len(rmsg) > 32:
                    rmsg = rmsg[:32] + "..."
                raise TypeError(
                    "Frame %i (%s) does not support the buffer interface." % (i, rmsg)
                ) from None
        _raw_send_multipart(self, msg_parts, flags)
        if track:
            return _FINISHED_TRACKER
        return None

    def recv_multipart(self, flags=0, copy=True, track=False):
        if copy:
            return _raw_recv_multipart(self, flags)
        parts, props = self.recv_multipart_props(flags)
        frames = [Frame(p) for p in parts]
        for f in frames:
            f._properties = props
        for f in frames[:-1]:
            f.more = True
        return frames

    def _deserialize(self, recvd, load):
        return load(recvd)

    def send_serialized(self, msg, serialize, flags=0, copy=True, **kwargs):
        return self.send_multipart(serialize(msg), flags=flags, copy=copy, **kwargs)

    def recv_serialized(self, deserialize, flags=0, copy=True):
        return self._deserialize(self.recv_multipart(flags, copy=copy), deserialize)

    def send_string(self, u, flags=0, copy=True, encoding="utf-8", **kwargs):
        if not isinstance(u, str):
            raise TypeError("unicode/str objects only")
        return self.send(u.encode(encoding), flags=flags, copy=copy, **kwargs)

    send_unicode = send_string

    def recv_string(self, flags=0, encoding="utf-8"):
        return self._deserialize(self.recv(flags=flags), lambda b: b.decode(encoding))

    recv_unicode = recv_string

    def send_pyobj(self, obj, flags=0, protocol=_pickle.DEFAULT_PROTOCOL, **kwargs):
        return self.send(_pickle.dumps(obj, protocol), flags=flags, **kwargs)

    def recv_pyobj(self, flags=0):
        return self._deserialize(self.recv(flags), _pickle.loads)

    def send_json(self, obj, flags=0, **kwargs):
        send_kwargs = {k: kwargs.pop(k) for k in ("copy", "track", "routing_id", "group") if k in kwargs}
        msg = _json.dumps(obj, **kwargs).encode("utf8")
        return self.send(msg, flags=flags, **send_kwargs)

    def recv_json(self, flags=0, **kwargs):
        return self._deserialize(self.recv(flags), lambda b: _json.loads(b, **kwargs))

    def poll(self, timeout=None, flags=POLLIN):
        if self.closed:
            raise ZMQError(ENOTSOCK)
        p = Poller()
        p.register(self, flags)
        return dict(p.poll(timeout)).get(self, 0)

    # --- monitor ---

    def monitor(self, addr, events=EVENT_ALL):
        if addr is None:
            self.stop_monitor()
            return
        if isinstance(addr, bytes):
            addr = addr.decode()
        if events is None:
            events = EVENT_ALL
        self.start_monitor(addr, int(events))

    def get_monitor_socket(self, events=None, addr=None):
        if self.closed:
            raise ZMQError(ENOTSOCK)
        if self.__dict__.get("_monitor_socket") is not None:
            return self._monitor_socket
        if addr is None:
            addr = "inproc://monitor.s-%d" % id(self)
        if events is None:
            events = EVENT_ALL
        self.monitor(addr, events)
        s = self.context.socket(PAIR)
        s.connect(addr)
        self.__dict__["_monitor_socket"] = s
        self.__dict__["_monitor_addr"] = addr
        return s

    def disable_monitor(self):
        """Stops the monitor; its socket gets EVENT_MONITOR_STOPPED and stays open."""
        self.stop_monitor()
        self.__dict__["_monitor_socket"] = None


class Context:
    """A context: one background I/O thread (a tokio runtime) for its sockets."""

    _instance = None
    _instance_lock = threading.Lock()
    _instance_pid = None
    _socket_class = Socket

    def __init__(self, io_threads=1, shadow=0, **kwargs):
        if isinstance(io_threads, Context):
            io_threads = 1
        if int(io_threads) < 0:
            raise ZMQError(EINVAL)
        d = self.__dict__
        d["_rt"] = _omq.Runtime(max(1, int(io_threads)))
        d["_sockets"] = weakref.WeakSet()
        d["sockopts"] = {}
        d["_ctxopts"] = {C.IO_THREADS: max(1, int(io_threads))}
        d["_pid"] = os.getpid()

    @classmethod
    def instance(cls, io_threads=1):
        inst = cls._instance
        if inst is None or inst.closed or cls._instance_pid != os.getpid():
            with Context._instance_lock:
                inst = cls._instance
                if inst is None or inst.closed or cls._instance_pid != os.getpid():
                    inst = cls(io_threads=io_threads)
                    cls._instance = inst
                    cls._instance_pid = os.getpid()
        return inst

    @classmethod
    def shadow(cls, address):
        raise ZMQError(ENOTSUP, "omq contexts cannot shadow a libzmq context")

    @property
    def underlying(self):
        return id(self)

    @property
    def closed(self):
        return self._rt.closed

    def __repr__(self):
        n = len([s for s in self._sockets if not s.closed])
        count = "" if n == 0 else "%d socket%s" % (n, "" if n == 1 else "s")
        return "<%s(%s) at %#x%s>" % (
            _cls_name(type(self)),
            count,
            id(self),
            " closed" if self.closed else "",
        )

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        open_sockets = [s for s in list(self._sockets) if not s.closed]
        if open_sockets:
            import warnings

            warnings.warn(
                "%d sockets still open when the context exits: closing them" % len(open_sockets),
                ResourceWarning,
                stacklevel=2,
            )
        self.destroy()

    def __dir__(self):
        return sorted(set(object.__dir__(self)) | set(_ctx_opts))

    def __copy__(self):
        return self

    __deepcopy__ = lambda self, memo: self  # noqa: E731

    def socket(self, socket_type, socket_class=None, **kwargs):
        if self.closed:
            raise ZMQError(ENOTSUP)
        cls = socket_class or self._socket_class
        s = cls(self, socket_type, **kwargs)
        for opt, value in self.sockopts.items():
            try:
                s.set(opt, value)
            except ZMQError:
                pass
        return s

    def term(self):
        """libzmq's zmq_ctx_term: operations on the context's sockets raise ETERM from now on;
        waits until every socket is closed, then for each to flush (its LINGER), then stops the
        I/O thread. Like libzmq, it waits forever for a socket nobody closes."""
        if self.closed:
            return
        self._rt.begin_term()
        while any(not s.closed for s in list(self._sockets)):
            time.sleep(0.005)
        self._rt.wait_closes(-1)
        self._rt.shutdown()

    def destroy(self, linger=None):
        if self.closed:
            return
        for s in list(self._sockets):
            if not s.closed:
                s.close(linger=linger)
        self._rt.wait_closes(-1 if linger is None or linger < 0 else int(linger))
        self._rt.shutdown()

    def set(self, option, optval):
        option = int(option)
        if option not in _ctx_defaults and option != C.THREAD_NAME_PREFIX:
            raise ZMQError(EINVAL)
        self._ctxopts[option] = optval

    def get(self, option):
        option = int(option)
        if option in self._ctxopts:
            return self._ctxopts[option]
        if option in _ctx_defaults:
            return _ctx_defaults[option]
        raise ZMQError(EINVAL)

    def setsockopt(self, opt, value):
        self.sockopts[int(opt)] = value

    def getsockopt(self, opt):
        return self.sockopts[int(opt)]

    def __setattr__(self, name, value):
        if name in self.__dict__ or hasattr(type(self), name) or name.startswith("_"):
            object.__setattr__(self, name, value)
            return
        key = name.upper()
        if key in _ctx_opts:
            self.set(_ctx_opts[key], value)
        elif key in _opt_by_name:
            self.sockopts[_opt_by_name[key]] = value
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        key = name.upper()
        if key in _ctx_opts:
            try:
                return self.get(_ctx_opts[key])
            except ZMQError as e:
                # Not readable (THREAD_NAME_PREFIX): an attribute error, so that
                # getattr(ctx, name, default) and mock's spec work, as pyzmq's.
                raise AttributeError(name) from e
        if key in _opt_by_name:
            try:
                return self.sockopts[_opt_by_name[key]]
            except KeyError:
                raise AttributeError(name) from None
        raise AttributeError("%s has no attribute %r" % (type(self).__name__, name))

    def __delattr__(self, name):
        key = name.upper()
        if key in _opt_by_name:
            self.sockopts.pop(_opt_by_name[key], None)
        else:
            object.__delattr__(self, name)


def _fileno(obj):
    if isinstance(obj, int):
        return obj
    return obj.fileno()


class Poller:
    """pyzmq's Poller: omq sockets, and file descriptors (ints or objects with fileno())."""

    def __init__(self):
        self.sockets = []
        self._map = {}

    def __contains__(self, socket):
        return socket in self._map

    def register(self, socket, flags=POLLIN | POLLOUT):
        if flags:
            if socket in self._map:
                self.sockets[self._map[socket]] = (socket, flags)
            else:
                self.sockets.append((socket, flags))
                self._map[socket] = len(self.sockets) - 1
        elif socket in self._map:
            self.unregister(socket)
        return None

    def modify(self, socket, flags=POLLIN | POLLOUT):
        self.register(socket, flags)

    def unregister(self, socket):
        idx = self._map.pop(socket)
        self.sockets.pop(idx)
        for s, i in self._map.items():
            if i > idx:
                self._map[s] -= 1

    def poll(self, timeout=None):
        if timeout is None or timeout < 0:
            timeout = -1
        return _poll(self.sockets, timeout)


def _poll(items, timeout_ms):
    """[(socket or fd, events)] -> [(socket or fd, ready events)], for ready ones."""
    zitems = [(s, f) for s, f in items if isinstance(s, _omq.RawSocket)]
    fitems = [(s, f) for s, f in items if not isinstance(s, _omq.RawSocket)]
    if not fitems:
        ready = _omq.poll(zitems, int(timeout_ms))
        return [(s, r) for (s, _), r in zip(zitems, ready) if r]
    deadline = None if timeout_ms < 0 else time.monotonic() + timeout_ms / 1000.0
    while True:
        out = []
        if zitems:
            ready = _omq.poll(zitems, 0)
            out = [(s, r) for (s, _), r in zip(zitems, ready) if r]
        rl = [_fileno(s) for s, f in fitems if f & POLLIN]
        wl = [_fileno(s) for s, f in fitems if f & POLLOUT]
        xl = [_fileno(s) for s, f in fitems if f & C.POLLERR]
        step = 0 if out else 0.01 if zitems else None
        if deadline is not None and not out:
            left = max(0.0, deadline - time.monotonic())
            step = left if step is None else min(step, left)
        r, w, x = _select.select(rl, wl, xl, step)
        for s, f in fitems:
            fd = _fileno(s)
            ev = (POLLIN if fd in r else 0) | (POLLOUT if fd in w else 0) | (C.POLLERR if fd in x else 0)
            if ev:
                out.append((fd, ev))
        if out or (deadline is not None and time.monotonic() >= deadline):
            return out


def select(rlist, wlist, xlist, timeout=None):
    """pyzmq's zmq.select: timeout in seconds."""
    if timeout is None:
        timeout = -1
    timeout_ms = int(timeout * 1000.0) if timeout >= 0 else -1
    items = {}
    for s in rlist:
        items[s] = items.get(s, 0) | POLLIN
    for s in wlist:
        items[s] = items.get(s, 0) | POLLOUT
    for s in xlist:
        items[s] = items.get(s, 0) | C.POLLERR
    ready = dict(_poll(list(items.items()), timeout_ms))
    return (
        [s for s in rlist if ready.get(s, 0) & POLLIN],
        [s for s in wlist if ready.get(s, 0) & POLLOUT],
        [s for s in xlist if ready.get(s, 0) & C.POLLERR],
    )


def zmq_poll(sockets, timeout=None):
    if timeout is None:
        timeout = -1
    return _poll(list(sockets), timeout)


def proxy(frontend, backend, capture=None):
    """libzmq's zmq_proxy: forwards until a socket fails (blocks; Ctrl-C interrupts)."""
    _omq.proxy(frontend, backend, capture)


def proxy_steerable(frontend, backend, capture=None, control=None):
    """libzmq's zmq_proxy_steerable: a proxy that `control` pauses (PAUSE), resumes
    (RESUME), asks for statistics (STATISTICS) and stops (TERMINATE, then it returns)."""
    _omq.proxy_steerable(frontend, backend, capture, control)


def device(device_type, frontend, backend):
    proxy(frontend, backend)


@atexit.register
def _cleanup():
    # From here on, daemon threads blocked in omq stay blocked (see park_if_exiting).
    _omq.exiting()
    inst = Context._instance
    if inst is not None and not inst.closed:
        try:
            inst._rt.shutdown()
        except Exception:
            pass
