"""omq: a pure-Rust ZeroMQ (ZMTP 3.1) with pyzmq's API.

    import omq as zmq

runs ordinary pyzmq code on its common path. `zmq.OMQ` (True) and `omq.__engine__`
("omq") tell it apart from pyzmq; `zmq.zmq_version()` is the libzmq version it is
compatible with.
"""

from . import constants
from .constants import *  # noqa: F401,F403
from .error import *  # noqa: F401,F403
from .error import strerror
from .sugar import (
    Context,
    Frame,
    Message,
    MessageTracker,
    Poller,
    Socket,
    _SocketContext,
    device,
    proxy,
    proxy_steerable,
    select,
    zmq_poll,
)
from ._omq import curve_keypair, curve_public
from . import sugar  # noqa: F401
from .sugar import _FINISHED_TRACKER  # noqa: F401

__engine__ = "omq"
OMQ = True
__version__ = "27.1.0"
omq_version = "0.1.0"
DRAFT_API = False
PYZMQ_DRAFT_API = False
COPY_THRESHOLD = 65536

SyncContext = Context
SyncSocket = Socket

_HAS = {"ipc": True, "curve": True, "plain": True, "draft": False, "pgm": False, "tipc": False,
        "norm": False, "gssapi": False, "vmci": False, "ws": False, "wss": False}


def has(capability):
    """Whether omq has a libzmq capability ("curve", "ipc", "plain"...)."""
    return _HAS.get(capability, False)


def zmq_version_info():
    return (4, 3, 5)


def zmq_version():
    """The libzmq version omq is compatible with."""
    return "4.3.5"


def pyzmq_version():
    """The pyzmq API version omq follows."""
    return __version__


def pyzmq_version_info():
    return (27, 1, 0)


def zmq_errno():
    return 0


def get_includes():
    return []


def get_library_dirs():
    return []


def __getattr__(name):
    if name in ("asyncio", "auth", "devices"):
        import importlib

        return importlib.import_module("." + name, __name__)
    raise AttributeError("module 'omq' has no attribute %r" % name)
