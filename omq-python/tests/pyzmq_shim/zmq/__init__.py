"""`import zmq` that is omq: for running pyzmq's own test suite against omq.

Put this directory first on sys.path. Every `zmq.*` module a test imports is the matching
omq module, registered under pyzmq's name, so classes are the same objects either way.
"""

import sys
import types

import omq
import omq._omq
import omq.asyncio
import omq.auth
import omq.auth.asyncio
import omq.auth.base
import omq.auth.certs
import omq.auth.thread
import omq.devices
import omq.constants
import omq.error
import omq.sugar
import omq.utils
import omq.utils.jsonapi
import omq.utils.monitor
import omq.utils.z85

_self = sys.modules[__name__]


def _module(name, **attrs):
    m = types.ModuleType(name)
    m.__dict__.update(attrs)
    sys.modules[name] = m
    return m


backend = _module("zmq.backend", Socket=omq.Socket, Context=omq.Context, Frame=omq.Frame)
sugar = omq.sugar
sys.modules["zmq.sugar"] = sugar
_subs = dict(
    context=_module("zmq.sugar.context", Context=omq.Context),
    socket=_module("zmq.sugar.socket", Socket=omq.Socket),
    frame=_module("zmq.sugar.frame", Frame=omq.Frame),
    poll=_module("zmq.sugar.poll", Poller=omq.Poller, select=omq.select),
    tracker=_module("zmq.sugar.tracker", MessageTracker=omq.MessageTracker),
)
for _k, _v in _subs.items():
    setattr(sugar, _k, _v)
sys.modules["zmq"] = omq
for name in ["_omq", "asyncio", "auth", "auth.asyncio", "auth.base", "auth.certs", "auth.thread",
             "devices", "devices.basedevice", "devices.monitoredqueue", "devices.proxydevice", "constants", "error", "utils", "utils.jsonapi", "utils.monitor", "utils.z85"]:
    sys.modules["zmq." + name] = sys.modules["omq." + name]
omq.backend = backend
