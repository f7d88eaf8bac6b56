"""`AsyncioAuthenticator`: the ZAP policy served by a task on the running asyncio loop."""

import asyncio

from .. import constants as C
from ..asyncio import Socket as AsyncSocket
from ..error import ZMQError
from .base import ZAP_ENDPOINT, Authenticator

__all__ = ["AsyncioAuthenticator"]


class AsyncioAuthenticator(Authenticator):
    """Answers ZAP requests from a task, so a CURVE callback may await. `start()` needs a
    running loop (or the one given)."""

    def __init__(self, context=None, loop=None, encoding="utf-8", log=None):
        super().__init__(context, encoding, log)
        self.loop = loop
        self._task = None

    def start(self):
        """Binds the ZAP socket and starts the task."""
        self.zap_socket = self.context.socket(C.REP, socket_class=AsyncSocket)
        self.zap_socket.linger = 1
        self.zap_socket.bind(ZAP_ENDPOINT)
        loop = self.loop or asyncio.get_running_loop()
        self._task = loop.create_task(self._serve())

    async def _serve(self):
        try:
            while True:
                msg = await self.zap_socket.recv_multipart()
                await self.zap_socket.send_multipart(await self.reply_frames(msg))
        except asyncio.CancelledError:
            pass
        except ZMQError as e:
            if e.errno not in (C.ETERM, C.ENOTSOCK):
                self.log.error("ZAP handler task stopped: %s", e)

    def stop(self):
        """Cancels the task and unbinds ZAP."""
        if self._task is not None:
            self._task.cancel()
            self._task = None
        super().stop()
