"""`ThreadAuthenticator`: the ZAP policy served by a thread of its own.

The thread waits on the ZAP socket and on a private PAIR pipe; `stop()` sends on the pipe, so
the thread ends at once instead of noticing a flag on some later timeout.
"""

import threading

from .. import constants as C
from ..error import ZMQError
from ..sugar import Poller, Socket
from .base import Authenticator

__all__ = ["ThreadAuthenticator"]

_STOP = b"TERMINATE"


class ThreadAuthenticator(Authenticator):
    """Answers ZAP requests from a daemon thread; configure it from any thread, any time."""

    def __init__(self, context=None, encoding="utf-8", log=None):
        super().__init__(context, encoding, log)
        self.thread = None
        self.pipe = None
        self._pipe_end = None

    def start(self):
        """Binds the ZAP socket (before returning, so servers made after this are guarded)
        and starts the thread."""
        super().start()
        name = "inproc://omq-auth-pipe-%x" % id(self)
        self.pipe = self.context.socket(C.PAIR, socket_class=Socket)
        self._pipe_end = self.context.socket(C.PAIR, socket_class=Socket)
        for s in (self.pipe, self._pipe_end):
            s.linger = 0
        self._pipe_end.bind(name)
        self.pipe.connect(name)
        self.thread = threading.Thread(target=self._serve, name="omq-zap", daemon=True)
        self.thread.start()

    def _serve(self):
        poller = Poller()
        poller.register(self.zap_socket, C.POLLIN)
        poller.register(self._pipe_end, C.POLLIN)
        try:
            while True:
                ready = dict(poller.poll())
                if self._pipe_end in ready:
                    self._pipe_end.recv()
                    return
                if self.zap_socket in ready:
                    self.handle_zap_message(self.zap_socket.recv_multipart())
        except ZMQError as e:
            if e.errno not in (C.ETERM, C.ENOTSOCK):
                self.log.error("ZAP handler thread stopped: %s", e)

    def stop(self):
        """Ends the thread, then unbinds ZAP (servers let every peer in again)."""
        if self.thread is not None:
            try:
                self.pipe.send(_STOP)
            except ZMQError:
                pass  # the context is gone, and with it the thread's sockets
            self.thread.join()
            self.thread = None
        for s in (self.pipe, self._pipe_end):
            if s is not None:
                s.close()
        self.pipe = self._pipe_end = None
        super().stop()

    def is_alive(self):
        """Whether the handler thread runs."""
        return self.thread is not None and self.thread.is_alive()
