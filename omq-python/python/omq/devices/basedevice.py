"""`Device`: two sockets (or one, for both sides) joined by `zmq.device`.

Sockets are made when the device runs, in the thread or process that runs it, from
`context_factory()`; until then the device only records what to do with them. A
`bind_*_to_random_port` call must answer with a port at once, so it binds a placeholder
socket (in a context of this module's own, which nobody terminates) that holds the port until
the device starts.
"""

import threading

from .. import constants as C
from ..error import ZMQError
from ..sugar import Context, device

__all__ = ["Device", "ThreadDevice", "ProcessDevice", "BackgroundDevice"]

_placeholders = None
_placeholders_lock = threading.Lock()


def _placeholder_context():
    global _placeholders
    with _placeholders_lock:
        if _placeholders is None or _placeholders.closed:
            _placeholders = Context()
        return _placeholders


class _Side:
    """What to do with one of the device's sockets when it is made."""

    def __init__(self, socket_type):
        self.socket_type = socket_type
        self.binds = []
        self.connects = []
        self.options = []

    def make(self, context):
        s = context.socket(self.socket_type)
        for opt, value in self.options:
            s.setsockopt(opt, value)
        for addr in self.binds:
            s.bind(addr)
        for addr in self.connects:
            s.connect(addr)
        return s


def _with_sides(*sides):
    """Gives a device class `bind_X`, `connect_X`, `setsockopt_X` and `bind_X_to_random_port`
    for each socket X named in `sides`: each records what to do when the device starts."""

    def methods(side):
        def bind(self, addr):
            self._sides[side].binds.append(addr)

        def connect(self, addr):
            self._sides[side].connects.append(addr)

        def setsockopt(self, opt, value):
            self._sides[side].options.append((opt, value))

        def bind_to_random_port(self, addr, *args, **kwargs):
            return self._random_port(side, addr, *args, **kwargs)

        bind.__doc__ = "Binds the %s socket to `addr` when the device starts." % side
        connect.__doc__ = "Connects the %s socket to `addr` when the device starts." % side
        setsockopt.__doc__ = "Sets an option of the %s socket when the device starts." % side
        bind_to_random_port.__doc__ = (
            "A free port on `addr` for the %s socket (Socket.bind_to_random_port's "
            "arguments)." % side
        )
        return {
            "bind_%s" % side: bind,
            "connect_%s" % side: connect,
            "setsockopt_%s" % side: setsockopt,
            "bind_%s_to_random_port" % side: bind_to_random_port,
        }

    def add(cls):
        for side in sides:
            for name, f in methods(side).items():
                f.__name__ = name
                f.__qualname__ = "%s.%s" % (cls.__name__, name)
                setattr(cls, name, f)
        return cls

    return add


@_with_sides("in", "out")
class Device:
    """A device run in the calling thread (`start()` blocks); see ThreadDevice and
    ProcessDevice for background ones.

    device_type: zmq.QUEUE, FORWARDER or STREAMER (all one proxy in libzmq >= 3).
    in_type, out_type: the two sockets' types; a negative out_type makes the in socket serve
    both sides (a single-socket device).
    """

    #: Makes the context the device's sockets belong to (called when the device runs).
    context_factory = Context.instance
    #: Whether a background device's thread or process is a daemon.
    daemon = True

    def __init__(self, device_type=C.QUEUE, in_type=None, out_type=None):
        self.device_type = device_type
        if in_type is None:
            raise TypeError("a device needs in_type")
        if out_type is None:
            raise TypeError("a device needs out_type")
        self.in_type = in_type
        self.out_type = out_type
        self._sides = {"in": _Side(in_type), "out": _Side(out_type)}
        self._held_ports = []
        self._context = None
        self._finished = threading.Event()
        self.done = False

    # --- configuration, recorded until the device runs ---

    def _random_port(self, side, addr, min_port=49152, max_port=65536, max_tries=100):
        """Binds a placeholder to a free port in the range, and records that port for `side`."""
        holder = _placeholder_context().socket(C.PAIR)  # any type binds alike
        holder.linger = 0
        try:
            port = holder.bind_to_random_port(addr, min_port, max_port, max_tries)
        except BaseException:
            holder.close()
            raise
        endpoint = "%s:%d" % (addr, port)
        self._held_ports.append((holder, endpoint))
        self._sides[side].binds.append(endpoint)
        return port

    def _release_ports(self):
        """Frees the placeholders' ports for the device's own sockets."""
        held, self._held_ports = self._held_ports, []
        for holder, endpoint in held:
            try:
                holder.unbind(endpoint)
            except ZMQError:
                pass
            holder.close()

    def __del__(self):
        try:
            self._release_ports()
        except Exception:
            pass

    # --- running ---

    def _setup_sockets(self):
        """Makes the in and out sockets (one socket when out_type < 0)."""
        self._context = ctx = self.context_factory()
        if self.out_type < 0:
            # One socket for both sides: what was asked of either side is done to it.
            both = _Side(self.in_type)
            for side in (self._sides["in"], self._sides["out"]):
                both.options += side.options
                both.binds += side.binds
                both.connects += side.connects
            ins = both.make(ctx)
            return ins, ins
        return tuple(self._with_socket([self._sides["in"].make(ctx)], "out"))

    def _with_socket(self, sockets, side):
        """`sockets` with the `side` socket made now; if that fails, closes `sockets`."""
        try:
            sockets.append(self._sides[side].make(self._context))
        except BaseException:
            for s in sockets:
                s.close()
            raise
        return sockets

    def _sockets(self):
        """Makes every socket the device runs with, in `run_device`'s order."""
        return list(self._setup_sockets())

    def run_device(self, sockets):
        """Forwards between the sockets until the context is terminated."""
        ins, outs = sockets
        device(self.device_type, ins, outs)

    def run(self):
        """Makes the sockets, runs the device, and closes them when it stops (the context's
        term() ends it: term() waits for these sockets)."""
        self._release_ports()
        sockets = []
        try:
            sockets = self._sockets()
            self.run_device(sockets)
        except ZMQError as e:
            if e.errno != C.ETERM:
                raise
        finally:
            for s in {id(s): s for s in sockets}.values():
                s.close()
            self.done = True
            self._finished.set()

    def start(self):
        """Runs the device here; returns when it stops."""
        self.run()

    def join(self, timeout=None):
        """Waits until the device stopped (or `timeout` seconds)."""
        return self._finished.wait(timeout)


class BackgroundDevice(Device):
    """A device run by a launcher (a thread or a process) that `start()` starts."""

    def _launcher(self):
        raise NotImplementedError

    def start(self):
        """Starts the device in the background and returns."""
        self._release_ports()  # here: a process must not inherit the placeholders
        self.launcher = self._launcher()
        self.launcher.daemon = self.daemon
        self.launcher.start()

    def join(self, timeout=None):
        """Waits for the thread or process (at most `timeout` seconds)."""
        return self.launcher.join(timeout=timeout)


class ThreadDevice(BackgroundDevice):
    """A device run by a thread."""

    def _launcher(self):
        return threading.Thread(target=self.run, name="omq-device")


class ProcessDevice(BackgroundDevice):
    """A device run by a child process (multiprocessing); its sockets and context are made in
    the child (where Context.instance() is a new context: it is per process)."""

    def _launcher(self):
        import multiprocessing

        return multiprocessing.Process(target=self.run)
