"""zmq.asyncio on omq."""

import asyncio
import time

import pytest

import omq as zmq
import omq.asyncio as zasync


@pytest.fixture
def actx():
    c = zasync.Context()
    yield c
    c.destroy(linger=0)


async def test_send_recv(actx):
    pull = actx.socket(zmq.PULL)
    port = pull.bind_to_random_port("tcp://127.0.0.1")
    push = actx.socket(zmq.PUSH)
    push.connect("tcp://127.0.0.1:%d" % port)
    recv = asyncio.ensure_future(pull.recv())
    await asyncio.sleep(0.05)
    assert not recv.done()
    await push.send(b"hi")
    assert await asyncio.wait_for(recv, 5) == b"hi"
    await push.send_multipart([b"a", b"b"])
    assert await pull.recv_multipart() == [b"a", b"b"]
    await push.send_string("s")
    assert await pull.recv_string() == "s"
    await push.send_json({"j": 1})
    assert await pull.recv_json() == {"j": 1}
    await push.send_pyobj((1, 2))
    assert await pull.recv_pyobj() == (1, 2)


async def test_many_concurrent(actx):
    pull = actx.socket(zmq.PULL)
    pull.bind("inproc://many")
    push = actx.socket(zmq.PUSH)
    push.connect("inproc://many")

    async def producer():
        for i in range(2000):
            await push.send(b"%d" % i)

    async def consumer():
        return [await pull.recv() for _ in range(2000)]

    got, _ = await asyncio.wait_for(asyncio.gather(consumer(), producer()), 20)
    assert got == [b"%d" % i for i in range(2000)]


async def test_rcvtimeo_and_noblock(actx):
    s = actx.socket(zmq.PULL)
    s.bind("inproc://timeo")
    with pytest.raises(zmq.Again):
        await s.recv(zmq.NOBLOCK)
    s.rcvtimeo = 100
    t = time.monotonic()
    with pytest.raises(zmq.Again):
        await s.recv()
    assert 0.09 <= time.monotonic() - t < 2


async def test_cancel_recv_keeps_message(actx):
    pull = actx.socket(zmq.PULL)
    pull.bind("inproc://cancel")
    push = actx.socket(zmq.PUSH)
    push.connect("inproc://cancel")
    r = asyncio.ensure_future(pull.recv())
    await asyncio.sleep(0.05)
    r.cancel()
    await push.send(b"kept")
    assert await asyncio.wait_for(pull.recv(), 5) == b"kept"


async def test_poller(actx):
    a = actx.socket(zmq.PULL)
    b = actx.socket(zmq.PULL)
    a.bind("inproc://pa")
    b.bind("inproc://pb")
    pb = actx.socket(zmq.PUSH)
    pb.connect("inproc://pb")
    poller = zasync.Poller()
    poller.register(a, zmq.POLLIN)
    poller.register(b, zmq.POLLIN)
    assert await poller.poll(50) == []
    asyncio.get_running_loop().call_later(0.05, lambda: zmq.Socket.send(pb, b"x", zmq.NOBLOCK))
    ready = dict(await asyncio.wait_for(poller.poll(), 5))
    assert ready == {b: zmq.POLLIN}
    assert await b.recv() == b"x"
    assert await a.poll(10) == 0


async def test_req_rep_with_pyzmq_asyncio(actx):
    import zmq as pyzmq
    import zmq.asyncio as pyasync

    zctx = pyasync.Context()
    try:
        rep = zctx.socket(pyzmq.REP)
        port = rep.bind_to_random_port("tcp://127.0.0.1")
        req = actx.socket(zmq.REQ)
        req.connect("tcp://127.0.0.1:%d" % port)

        async def serve():
            m = await rep.recv()
            await rep.send(m + b"!")

        task = asyncio.ensure_future(serve())
        await req.send(b"ping")
        assert await asyncio.wait_for(req.recv(), 5) == b"ping!"
        await task
    finally:
        zctx.destroy(linger=0)


async def test_monitor_async(actx):
    from omq.utils.monitor import recv_monitor_message

    s = actx.socket(zmq.PULL)
    mon = s.get_monitor_socket()
    s.bind("tcp://127.0.0.1:*")
    ev = await asyncio.wait_for(recv_monitor_message(mon), 5)
    assert ev["event"] == zmq.EVENT_LISTENING
