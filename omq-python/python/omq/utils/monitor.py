"""Socket monitor events: libzmq's two-frame format (event u16 + value u32, endpoint)."""

import struct

from .. import constants as C
from ..error import ZMQError


def parse_monitor_message(msg):
    """{'event': int, 'value': int, 'endpoint': bytes} from a monitor message's two frames."""
    if len(msg) != 2 or len(msg[0]) != 6:
        raise RuntimeError("Invalid event message format: %s" % msg)
    event_id, value = struct.unpack("=hi", bytes(msg[0]))
    return {"event": event_id, "value": value, "endpoint": bytes(msg[1])}


def recv_monitor_message(socket, flags=0):
    """Receives one event from a monitor socket (awaitable on a zmq.asyncio socket)."""
    msg = socket.recv_multipart(flags)
    if hasattr(msg, "__await__"):

        async def parse():
            return parse_monitor_message(await msg)

        return parse()
    return parse_monitor_message(msg)


__all__ = ["parse_monitor_message", "recv_monitor_message"]
