"""zmq.asyncio on omq: awaitable send/recv and a Poller.

A socket first tries without waiting; when it would block, the runtime thread watches the
socket and wakes the event loop (`call_soon_threadsafe`) once it is ready. No file descriptor
is involved, so any asyncio loop works.
"""

import asyncio as _asyncio
from collections import deque

from . import _omq
from . import sugar as _sugar
from .constants import NOBLOCK, POLLIN, POLLOUT
from .error import Again


def _expire(fut):
    if not fut.done():
        fut.set_exception(Again())


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
    """A socket whose send/recv (and their sugar) return Futures, served in call order."""

    def _queues(self):
        d = self.__dict__
        q = d.get("_aq")
        if q is None:
            q = d["_aq"] = {POLLIN: deque(), POLLOUT: deque()}
            d["_aw"] = {}
            d["_polls"] = set()
        return q

    def _until(self, op, events, flags, timeout_opt):
        """A Future of op(): done at once when it need not wait, else queued behind the
        operations of the same direction already waiting (as pyzmq's are)."""
        loop = _asyncio.get_event_loop()
        fut = loop.create_future()
        q = self._queues()[events]
        if not q or flags & NOBLOCK:
            try:
                fut.set_result(op(flags | NOBLOCK))
                return fut
            except Again as e:
                if flags & NOBLOCK:
                    fut.set_exception(e)
                    return fut
            except Exception as e:
                fut.set_exception(e)
                return fut
        timeout = self.get(timeout_opt)
        if timeout >= 0:
            h = loop.call_later(timeout / 1000.0, _expire, fut)
            fut.add_done_callback(lambda _f: h.cancel())
        q.append((fut, op, flags))
        self._arm(events, loop)
        return fut

    def _pump(self, events, loop):
        q = self._queues()[events]
        while q:
            fut, op, flags = q[0]
            if fut.done():
                q.popleft()
                continue
            try:
                r = op(flags | NOBLOCK)
            except Again:
                break
            except Exception as e:
                q.popleft()
                fut.set_exception(e)
                continue
            q.popleft()
            fut.set_result(r)
        if q:
            self._arm(events, loop)

    def _arm(self, events, loop):
        watches = self.__dict__["_aw"]
        if events in watches:
            return

        def fired():
            loop.call_soon_threadsafe(self._fired, events, loop)

        try:
            watches[events] = _omq.watch([(self, events)], fired)
        except Exception as e:
            q = self._queues()[events]
            while q:
                fut = q.popleft()[0]
                if not fut.done():
                    fut.set_exception(e)

    def _fired(self, events, loop):
        self.__dict__["_aw"].pop(events, None)
        if not self.closed:
            self._pump(events, loop)

    def close(self, linger=None):
        if "_aq" in self.__dict__:
            for w in self.__dict__["_aw"].values():
                w.cancel()
            self.__dict__["_aw"].clear()
            for q in self.__dict__["_aq"].values():
                while q:
                    q.popleft()[0].cancel()
            for f in list(self.__dict__["_polls"]):
                f.cancel()
        super().close(linger)

    def recv(self, flags=0, copy=True, track=False):
        sync = _sugar.Socket.recv
        return self._until(lambda f: sync(self, f, copy, track), POLLIN, flags, 27)

    def recv_multipart(self, flags=0, copy=True, track=False):
        sync = _sugar.Socket.recv_multipart
        return self._until(lambda f: sync(self, f, copy, track), POLLIN, flags, 27)

    def recv_into(self, buffer, /, *, nbytes=0, flags=0):
        sync = _sugar.Socket.recv_into
        return self._until(lambda f: sync(self, buffer, nbytes=nbytes, flags=f), POLLIN, flags, 27)

    def send(self, data, flags=0, copy=True, track=False, routing_id=None, group=None):
        sync = _sugar.Socket.send
        return self._until(lambda f: sync(self, data, f, copy, track), POLLOUT, flags, 28)

    def send_multipart(self, msg_parts, flags=0, copy=True, track=False, **kwargs):
        sync = _sugar.Socket.send_multipart
        parts = list(msg_parts)
        return self._until(lambda f: sync(self, parts, f, copy, track), POLLOUT, flags, 28)

    def _deserialize(self, recvd, load):
        """A Future of load(what recvd gives); cancelling it cancels the receive."""
        f = recvd.get_loop().create_future()

        def received(r):
            if f.done():
                return
            if r.cancelled():
                f.cancel()
            elif r.exception() is not None:
                f.set_exception(r.exception())
            else:
                try:
                    f.set_result(load(r.result()))
                except Exception as e:
                    f.set_exception(e)

        recvd.add_done_callback(received)
        f.add_done_callback(lambda _f: recvd.cancel() if _f.cancelled() else None)
        return f

    def poll(self, timeout=None, flags=POLLIN):
        p = Poller()
        p.register(self, flags)

        async def one():
            return dict(await p._poll(timeout)).get(self, 0)

        f = _asyncio.ensure_future(one())
        self._queues()
        polls = self.__dict__["_polls"]
        polls.add(f)
        f.add_done_callback(polls.discard)
        return f


class Poller(_sugar.Poller):
    """A Poller whose poll() is awaitable (omq sockets only)."""

    def poll(self, timeout=None):
        """A Future of the ready [(socket, events)]."""
        return _asyncio.ensure_future(self._poll(timeout))

    async def _poll(self, timeout):
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
