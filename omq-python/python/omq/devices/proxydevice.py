"""Proxy devices: `zmq.proxy` with a monitor (capture) socket, and `zmq.proxy_steerable`
with a control socket too."""

from .. import constants as C
from ..sugar import proxy, proxy_steerable
from .basedevice import Device, ProcessDevice, ThreadDevice, _Side, _with_sides

__all__ = [
    "Proxy",
    "ThreadProxy",
    "ProcessProxy",
    "ProxySteerable",
    "ThreadProxySteerable",
    "ProcessProxySteerable",
]


@_with_sides("mon")
class ProxyBase:
    """Adds the monitor socket, which gets a copy of every message the proxy forwards."""

    def __init__(self, in_type, out_type, mon_type=C.PUB):
        Device.__init__(self, C.QUEUE, in_type, out_type)
        self.mon_type = mon_type
        self._sides["mon"] = _Side(mon_type)

    def _sockets(self):
        return self._with_socket(list(self._setup_sockets()), "mon")

    def run_device(self, sockets):
        ins, outs, mons = sockets
        proxy(ins, outs, mons)


@_with_sides("ctrl")
class ProxySteerableBase(ProxyBase):
    """Adds the control socket: PAUSE, RESUME, STATISTICS and TERMINATE (which stops the
    device) steer the proxy."""

    def __init__(self, in_type, out_type, mon_type=C.PUB, ctrl_type=None):
        super().__init__(in_type, out_type, mon_type)
        if ctrl_type is None:
            raise TypeError("a steerable proxy needs ctrl_type")
        self.ctrl_type = ctrl_type
        self._sides["ctrl"] = _Side(ctrl_type)

    def _sockets(self):
        return self._with_socket(super()._sockets(), "ctrl")

    def run_device(self, sockets):
        ins, outs, mons, ctrl = sockets
        proxy_steerable(ins, outs, mons, ctrl)


class Proxy(ProxyBase, Device):
    """A proxy device run in the calling thread."""


class ThreadProxy(ProxyBase, ThreadDevice):
    """A proxy device run by a thread."""


class ProcessProxy(ProxyBase, ProcessDevice):
    """A proxy device run by a child process."""


class ProxySteerable(ProxySteerableBase, Device):
    """A steerable proxy device run in the calling thread."""


class ThreadProxySteerable(ProxySteerableBase, ThreadDevice):
    """A steerable proxy device run by a thread."""


class ProcessProxySteerable(ProxySteerableBase, ProcessDevice):
    """A steerable proxy device run by a child process."""
