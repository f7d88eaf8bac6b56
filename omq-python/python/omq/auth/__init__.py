"""Utilities for ZAP authentication.

# omq: pyzmq 27.1.0's zmq.auth, unchanged but for its imports (omq for zmq); pyzmq's license is
# LICENSE-pyzmq.md beside this file. It runs on omq's public API: ZAP handlers work because
# every omq socket asks the handler bound at inproc://zeromq.zap.01, as libzmq's do.

To run authentication in a background thread, see :mod:`zmq.auth.thread`.
For integration with the asyncio event loop, see :mod:`zmq.auth.asyncio`.

Authentication examples are provided in the pyzmq codebase, under
`/examples/security/`.

.. versionadded:: 14.1
"""

from .base import *
from .certs import *
