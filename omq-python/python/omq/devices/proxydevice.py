"""Proxy devices: `zmq.proxy` with a monitor (capture) socket, and `zmq.proxy_steerable`
with a control socket too."""

from .. import constants as C
from ..sugar import proxy, proxy_steerable
from .basedevice import Device, ProcessDevice, ThreadDevice, _Side

__all__ = [
    "Proxy",
    "ThreadProxy",
    "ProcessProxy",
    "ProxySteerable",
    "ThreadProxySteerable",
    "ProcessProxySteerable",
]


class ProxyBase:
    """Adds the monitor socket, which gets a copy of every message the proxy forwards."""

    def __init__(self, in_type, out_type, mon_type=C.PUB):
        Device.__init__(self, C.QUEUE, in_type, out_type)
        self.mon_type = mon_type
        self._sides["mon"] = _Side(mon_type)

    def bind_mon(self, addr):
        """Binds the monitor socket to `addr` when the device starts."""
        self._sides["mon"].binds.append(addr)

    def connect_mon(self, addr):
        """Connects the monitor socket to `addr` when the device starts."""
        self._sides["mon"].connects.append(addr)

    def setsockopt_mon(self, opt, value):
        """Sets an option of the monitor socket when the device starts."""
        self._sides["mon"].options.append((opt, value))

    def bind_mon_to_random_port(self, addr, *args, **kwargs):
        """A free port on `addr` for the monitor socket."""
        return self._random_port("mon", addr, *args, **kwargs)

    def _sockets(self):
        sockets = list(self._setup_sockets())
        try:
            sockets.append(self._sides["mon"].make(self._context))
        except BaseException:
            for s in sockets:
                s.close()
            raise
        return sockets

    def run_device(self, sockets):
        ins, outs, mons = sockets
        proxy(ins, outs, mons)


class ProxySteerableBase(ProxyBase):
    """Adds the control socket: PAUSE, RESUME, STATISTICS and TERMINATE (which stops the
    device) steer the proxy."""

    def __init__(self, in_type, out_type, mon_type=C.PUB, ctrl_type=None):
        super().__init__(in_type, out_type, mon_type)
        if ctrl_type is None:
            raise TypeError("a steerable proxy needs ctrl_type")
        self.ctrl_type = ctrl_type
        self._sides["ctrl"] = _Side(ctrl_type)

    def bind_ctrl(self, addr):
        """Binds the control socket to `addr` when the device starts."""
        self._sides["ctrl"].binds.append(addr)

    def connect_ctrl(self, addr):
        """Connects the control socket to `addr` when the device starts."""
        self._sides["ctrl"].connects.append(addr)

    def setsockopt_ctrl(self, opt, value):
        """Sets an option of the control socket when the device starts."""
        self._sides["ctrl"].options.append((opt, value))

    def bind_ctrl_to_random_port(self, addr, *args, **kwargs):
        """A free port on `addr` for the control socket."""
        return self._random_port("ctrl", addr, *args, **kwargs)

    def _sockets(self):
        sockets = super()._sockets()
        try:
            sockets.append(self._sides["ctrl"].make(self._context))
        except BaseException:
            for s in sockets:
                s.close()
            raise
        return sockets

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
