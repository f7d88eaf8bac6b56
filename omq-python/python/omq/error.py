"""pyzmq's exceptions, with pyzmq's errno values."""

import os

from . import constants as _c

_ZMQ_STRERROR = {
    _c.EFSM: "Operation cannot be accomplished in current state",
    _c.ENOCOMPATPROTO: "The protocol is not compatible with the socket type",
    _c.ETERM: "Context was terminated",
    _c.EMTHREAD: "No thread available",
}


def strerror(errno):
    """The message of an errno, as zmq_strerror gives it."""
    if errno in _ZMQ_STRERROR:
        return _ZMQ_STRERROR[errno]
    try:
        return os.strerror(errno)
    except (ValueError, OverflowError, TypeError):
        return "Unknown error %s" % errno


class ZMQBaseError(Exception):
    """Base of every omq exception."""


class ZMQError(ZMQBaseError):
    """An error with a libzmq errno."""

    errno = None
    strerror = ""

    def __init__(self, errno=None, msg=None):
        if errno is None:
            errno = _c.EINVAL
        self.errno = errno
        self.strerror = msg if msg is not None else strerror(errno)

    def __str__(self):
        return self.strerror

    def __repr__(self):
        return "%s(%r)" % (self.__class__.__name__, str(self))


class ZMQBindError(ZMQBaseError):
    """bind_to_random_port found no free port."""


class NotDone(ZMQBaseError):
    """A MessageTracker timed out."""


class ContextTerminated(ZMQError):
    """The context was terminated (ETERM)."""

    def __init__(self, errno="ignored", msg="ignored"):
        super().__init__(_c.ETERM)


class Again(ZMQError):
    """EAGAIN: nothing to receive, or no room to send, within the timeout or NOBLOCK."""

    def __init__(self, errno="ignored", msg="ignored"):
        super().__init__(_c.EAGAIN)


class InterruptedSystemCall(ZMQError, InterruptedError):
    """EINTR."""

    def __init__(self, errno="ignored", msg="ignored"):
        super().__init__(_c.EINTR if hasattr(_c, "EINTR") else 4)


class ZMQVersionError(NotImplementedError):
    """Something needs a newer libzmq."""

    def __init__(self, min_version, msg="Feature"):
        self.min_version = min_version
        self.msg = msg
        self.version = "4.3.5"

    def __str__(self):
        return "%s requires libzmq >= %s, have %s" % (self.msg, self.min_version, self.version)


def _make(errno, msg=None):
    """The exception for an errno (called by the native module)."""
    if errno == _c.EAGAIN:
        return Again()
    if errno == _c.ETERM:
        return ContextTerminated()
    return ZMQError(errno, msg)


__all__ = [
    "ZMQBaseError",
    "ZMQError",
    "ZMQBindError",
    "NotDone",
    "ContextTerminated",
    "Again",
    "InterruptedSystemCall",
    "ZMQVersionError",
    "strerror",
]


def _check_version(min_version_info, msg="Feature"):
    """Raises ZMQVersionError when the libzmq omq follows (4.3.5) is older than asked."""
    if (4, 3, 5) < tuple(min_version_info):
        raise ZMQVersionError(".".join(str(v) for v in min_version_info), msg)
