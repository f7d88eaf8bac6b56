"""zmq.asyncio on omq: awaitable send/recv and a Poller.

A socket first tries without waiting; when it would block, the runtime thread watches the
socket and wakes the event loop (`call_soon_threadsafe`) once it is ready. No file descriptor
is involved, so any asyncio loop works.
"""

import asyncio as _asyncio

from . import _omq
from . import sugar as _sugar
from .constants import NOBLOCK, POLLIN, POLLOUT
from .error import Again


def _wake(fut):
    if not fut.done():
        fut.set_result(None)


async def _ready(socket, events, timeout_ms):
    """Waits until `socket` may be ready for `events`; Again after `timeout_ms` (>= 0)."""
    loop = _asyncio.get_running_loop()
    fut = loop.create_future()
    w = _omq.watch([(socket, events)], lambda: loop.call_soon_threadsafe(_wake, fut))
    try:
        if timeout_ms is not None and timeout_ms >= 0:
            try:
                await _asyncio.wait_for(fut, timeout_ms / 1000.0)
            except _asyncio.TimeoutError:
                raise Again() from None
        else:
            await fut
    finally:
        w.cancel()


class Socket(_sugar.Socket):
    """A socket whose send/recv (and their sugar) return awaitables."""

    async def _until(self, op, events, flags, timeout_opt):
        if flags & NOBLOCK:
            return op(flags)
        timeout = self.get(timeout_opt)
        loop = _asyncio.get_running_loop()
        deadline = None if timeout < 0 else loop.time() + timeout / 1000.0
        while True:
            try:
                return op(flags | NOBLOCK)
            except Again:
                left = None if deadline is None else max(0, (deadline - loop.time()) * 1000.0)
                if left is not None and left <= 0:
                    raise
                await _ready(self, events, left)

    def recv(self, flags=0, copy=True, track=False):
        sync = _sugar.Socket.recv
        return self._until(lambda f: sync(self, f, copy, track), POLLIN, flags, 27)

    def recv_multipart(self, flags=0, copy=True, track=False):
        sync = _sugar.Socket.recv_multipart
        return self._until(lambda f: sync(self, f, copy, track), POLLIN, flags, 27)

    def send(self, data, flags=0, copy=True, track=False, routing_id=None, group=None):
        sync = _sugar.Socket.send
        return self._until(lambda f: sync(self, data, f, copy, track), POLLOUT, flags, 28)

    def send_multipart(self, msg_parts, flags=0, copy=True, track=False, **kwargs):
        sync = _sugar.Socket.send_multipart
        parts = list(msg_parts)
        return self._until(lambda f: sync(self, parts, f, copy, track), POLLOUT, flags, 28)

    def _deserialize(self, recvd, load):
        async def done():
            return load(await recvd)

        return done()

    async def poll(self, timeout=None, flags=POLLIN):
        p = Poller()
        p.register(self, flags)
        return dict(await p.poll(timeout)).get(self, 0)


class Poller(_sugar.Poller):
    """A Poller whose poll() is awaitable (omq sockets only)."""

    async def poll(self, timeout=None):
        if timeout is None or timeout < 0:
            timeout = -1
        items = list(self.sockets)
        ready = _sugar._poll(items, 0)
        if ready or timeout == 0 or not items:
            if not items and timeout > 0:
                await _asyncio.sleep(timeout / 1000.0)
            return ready
        loop = _asyncio.get_running_loop()
        deadline = None if timeout < 0 else loop.time() + timeout / 1000.0
        while True:
            fut = loop.create_future()
            w = _omq.watch(items, lambda: loop.call_soon_threadsafe(_wake, fut))
            try:
                if deadline is None:
                    await fut
                else:
                    try:
                        await _asyncio.wait_for(fut, max(0.0, deadline - loop.time()))
                    except _asyncio.TimeoutError:
                        pass
            finally:
                w.cancel()
            ready = _sugar._poll(items, 0)
            if ready or (deadline is not None and loop.time() >= deadline):
                return ready


class Context(_sugar.Context):
    """A context making asyncio sockets."""

    _instance = None
    _socket_class = Socket


__all__ = ["Context", "Socket", "Poller"]
