"""ZAP handlers (RFC 27) for omq servers: pyzmq's `zmq.auth` API, written for omq.

A server socket with PLAIN or CURVE security (or NULL with a ZAP_DOMAIN) asks whoever is bound
at `inproc://zeromq.zap.01` whether a peer may connect. The authenticators here are such a
handler, with a policy: allow or deny by IP address, PLAIN passwords per domain, CURVE public
keys per domain (a certificate directory, any key, or a callback).

    auth = omq.auth.thread.ThreadAuthenticator(ctx)
    auth.start()
    auth.configure_plain(domain="*", passwords={"admin": "secret"})
"""

from .base import CURVE_ALLOW_ANY, Authenticator
from .certs import create_certificates, load_certificate, load_certificates

__all__ = [
    "Authenticator",
    "CURVE_ALLOW_ANY",
    "create_certificates",
    "load_certificate",
    "load_certificates",
]
