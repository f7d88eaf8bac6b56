"""Devices: sockets set up from a description and joined by a proxy, in the background.

pyzmq's `zmq.devices` API, written for omq. A device is configured in the calling thread
(`bind_in`, `connect_out`, `setsockopt_in`, ...), and `start()` makes its sockets and runs
the proxy in a thread (`Thread*`) or a process (`Process*`) until its context is terminated.
"""

from .basedevice import Device, ProcessDevice, ThreadDevice
from .monitoredqueue import (
    MonitoredQueue,
    ProcessMonitoredQueue,
    ThreadMonitoredQueue,
    monitored_queue,
)
from .proxydevice import (
    ProcessProxy,
    ProcessProxySteerable,
    Proxy,
    ProxySteerable,
    ThreadProxy,
    ThreadProxySteerable,
)

__all__ = [
    "Device",
    "ThreadDevice",
    "ProcessDevice",
    "Proxy",
    "ThreadProxy",
    "ProcessProxy",
    "ProxySteerable",
    "ThreadProxySteerable",
    "ProcessProxySteerable",
    "MonitoredQueue",
    "ThreadMonitoredQueue",
    "ProcessMonitoredQueue",
    "monitored_queue",
]
