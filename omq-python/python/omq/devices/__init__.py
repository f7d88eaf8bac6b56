"""0MQ Device classes for running in background threads or processes."""

# omq: pyzmq 27.1.0's zmq.devices, unchanged but for its imports (omq for zmq) and
# monitored_queue, which is pyzmq's pure Python one; pyzmq's license is LICENSE-pyzmq.md beside
# this file. It runs on omq's public API (zmq.proxy, zmq.proxy_steerable, sockets).

# Copyright (C) PyZMQ Developers
# Distributed under the terms of the Modified BSD License.

from __future__ import annotations

from omq import DeviceType, proxy
from omq.devices import (
    basedevice,
    monitoredqueue,
    monitoredqueuedevice,
    proxydevice,
    proxysteerabledevice,
)
from omq.devices.basedevice import *
from omq.devices.monitoredqueue import *
from omq.devices.monitoredqueuedevice import *
from omq.devices.proxydevice import *
from omq.devices.proxysteerabledevice import *

__all__ = []
for submod in (
    basedevice,
    proxydevice,
    proxysteerabledevice,
    monitoredqueue,
    monitoredqueuedevice,
):
    __all__.extend(submod.__all__)  # type: ignore
