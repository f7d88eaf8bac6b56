"""Z85 (ZeroMQ's base-85) encoding."""

from .._omq import z85_decode as decode
from .._omq import z85_encode as encode

__all__ = ["encode", "decode"]
