"""`monitored_queue`: a two-way queue between two sockets that publishes every message it
forwards on a third, prefixed by the direction it went; and the devices that run it."""

from .. import constants as C
from ..sugar import Poller, Socket
from .basedevice import Device, ProcessDevice, ThreadDevice
from .proxydevice import ProxyBase

__all__ = [
    "monitored_queue",
    "MonitoredQueue",
    "ThreadMonitoredQueue",
    "ProcessMonitoredQueue",
]


def monitored_queue(in_socket, out_socket, mon_socket, in_prefix=b"in", out_prefix=b"out"):
    """Forwards messages both ways between `in_socket` and `out_socket` until a socket fails
    (the context's term() raises ETERM here), and sends each on `mon_socket` too, after a
    first frame `in_prefix` (from in to out) or `out_prefix` (from out to in).

    Between two ROUTER sockets the first two frames (sender's and destination's routing ids)
    are swapped, so a message addressed to a peer on the other side reaches it and shows
    where it came from.
    """
    for s in (in_socket, out_socket, mon_socket):
        if not isinstance(s, Socket):
            raise TypeError("monitored_queue needs sockets, not %r" % type(s).__name__)
    for p in (in_prefix, out_prefix):
        if not isinstance(p, bytes):
            raise TypeError("monitored_queue's prefixes are bytes, not %r" % type(p).__name__)
    swap = in_socket.socket_type == C.ROUTER and out_socket.socket_type == C.ROUTER
    route = {in_socket: (out_socket, in_prefix)}
    if out_socket is not in_socket:
        route[out_socket] = (in_socket, out_prefix)
    poller = Poller()
    for s in route:
        poller.register(s, C.POLLIN)
    while True:
        for src, _ in poller.poll():
            dst, prefix = route[src]
            msg = src.recv_multipart()
            if swap and len(msg) >= 2:
                msg[0], msg[1] = msg[1], msg[0]
            dst.send_multipart(msg)
            mon_socket.send_multipart([prefix] + msg)


class MonitoredQueueBase(ProxyBase):
    """A proxy-like device that runs `monitored_queue` with these prefixes."""

    def __init__(self, in_type, out_type, mon_type=C.PUB, in_prefix=b"in", out_prefix=b"out"):
        super().__init__(in_type, out_type, mon_type)
        self.in_prefix = in_prefix
        self.out_prefix = out_prefix

    def run_device(self, sockets):
        ins, outs, mons = sockets
        monitored_queue(ins, outs, mons, self.in_prefix, self.out_prefix)


class MonitoredQueue(MonitoredQueueBase, Device):
    """A monitored queue run in the calling thread."""


class ThreadMonitoredQueue(MonitoredQueueBase, ThreadDevice):
    """A monitored queue run by a thread."""


class ProcessMonitoredQueue(MonitoredQueueBase, ProcessDevice):
    """A monitored queue run by a child process."""
