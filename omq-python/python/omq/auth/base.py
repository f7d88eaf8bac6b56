"""The ZAP policy (RFC 27): who may connect, decided per request.

`Authenticator` holds the policy and turns one ZAP request into its reply; the thread and
asyncio authenticators (`omq.auth.thread`, `omq.auth.asyncio`) serve requests with it from a
socket bound at ZAP's endpoint. Used alone, `start()` binds that socket and the application
answers requests itself with `handle_zap_message`.
"""

import asyncio
import inspect
import logging

from .. import constants as C
from ..sugar import Context, Socket
from ..utils import z85
from .certs import load_certificates

__all__ = ["Authenticator", "CURVE_ALLOW_ANY", "ZAP_ENDPOINT", "VERSION"]

#: `configure_curve(location=CURVE_ALLOW_ANY)`: any client key, as long as the handshake works.
CURVE_ALLOW_ANY = "*"
#: Where a ZAP handler binds (RFC 27); in omq one handler serves the whole process.
ZAP_ENDPOINT = "inproc://zeromq.zap.01"
#: The ZAP version, first frame of every request and reply.
VERSION = b"1.0"


class _Refused(Exception):
    """A request denied: status code and text for the reply."""

    def __init__(self, code, text):
        super().__init__(text)
        self.code = code
        self.text = text


class Authenticator:
    """A ZAP handler's policy, with pyzmq's API.

    With no policy, NULL peers get in and PLAIN and CURVE peers do not (nothing to check their
    credentials against). `allow` and `deny` filter by IP address for every mechanism, and are
    exclusive: an allow list refuses everyone else, a deny list admits everyone else.
    """

    def __init__(self, context=None, encoding="utf-8", log=None):
        self.context = context if context is not None else Context.instance()
        self.encoding = encoding
        self.log = log or logging.getLogger("zmq.auth")
        self.zap_socket = None
        #: domain -> {username: password}
        self.passwords = {}
        #: domain -> CURVE_ALLOW_ANY, a dict of accepted Z85 public keys, or a credentials
        #: provider (an object with `callback(domain, key)`): the last configured wins.
        self.curve = {}
        self._allowed = set()
        self._denied = set()
        self._loop = None

    # --- lifecycle ---

    def start(self):
        """Binds the ZAP socket (a blocking REP socket, whatever the context's socket class)."""
        self.zap_socket = self.context.socket(C.REP, socket_class=Socket)
        self.zap_socket.linger = 1
        self.zap_socket.bind(ZAP_ENDPOINT)
        self.log.debug("ZAP handler bound at %s", ZAP_ENDPOINT)

    def stop(self):
        """Closes the ZAP socket: from then on servers let every peer in, as without ZAP."""
        if self.zap_socket is not None:
            self.zap_socket.close()
        self.zap_socket = None
        if self._loop is not None:
            self._loop.close()
            self._loop = None

    # --- policy ---

    def allow(self, *addresses):
        """Admits only these IP addresses (for NULL: outright; for PLAIN and CURVE: on to the
        credentials check). Cannot be mixed with `deny`."""
        if self._denied:
            raise ValueError("allow and deny are exclusive: addresses were denied already")
        self.log.debug("allowing %s", ", ".join(addresses))
        self._allowed.update(addresses)

    def deny(self, *addresses):
        """Refuses these IP addresses, whatever their credentials. Cannot be mixed with
        `allow`."""
        if self._allowed:
            raise ValueError("allow and deny are exclusive: addresses were allowed already")
        self.log.debug("denying %s", ", ".join(addresses))
        self._denied.update(addresses)

    def configure_plain(self, domain="*", passwords=None):
        """PLAIN: the username -> password dict for `domain` ('*': every domain without its
        own). Without one, PLAIN peers of the domain are refused."""
        if passwords:
            self.passwords[domain] = dict(passwords)
        else:
            self.passwords.pop(domain, None)
        self.log.debug("PLAIN configured for domain %r", domain)

    def configure_curve(self, domain="*", location=""):
        """CURVE: the client keys `domain` accepts, from a directory of public certificates
        (`*.key` files), or `CURVE_ALLOW_ANY` for any key (the handshake itself still needs
        the server's key)."""
        if location == CURVE_ALLOW_ANY:
            self.curve[domain] = CURVE_ALLOW_ANY
        else:
            try:
                self.curve[domain] = load_certificates(location)
            except OSError as e:
                self.log.error("could not load certificates from %r: %s", location, e)
                self.curve[domain] = {}
        self.log.debug("CURVE configured for domain %r", domain)

    def configure_curve_callback(self, domain="*", credentials_provider=None):
        """CURVE: `credentials_provider.callback(domain, client_key)` decides (the key in
        Z85; it may be a coroutine function). Replaces the domain's key list."""
        if credentials_provider is None:
            self.curve.pop(domain, None)
        else:
            self.curve[domain] = credentials_provider

    def curve_user_id(self, client_public_key):
        """The User-Id a CURVE peer gets: its public key in Z85 (replace to map keys to
        names)."""
        return z85.encode(client_public_key).decode("ascii")

    # --- requests ---

    def _for_domain(self, table, domain):
        """A domain's own entry, else the '*' one (an empty domain is '*')."""
        if domain in table:
            return table[domain]
        return table.get("*")

    def _check_address(self, address):
        """Raises _Refused for an address outside the allow list or in the deny list."""
        if self._allowed and address not in self._allowed:
            raise _Refused(b"400", b"Address not allowed")
        if address in self._denied:
            raise _Refused(b"400", b"Address denied")

    def _check_plain(self, domain, username, password):
        passwords = self._for_domain(self.passwords, domain)
        if not passwords:
            raise _Refused(b"400", b"No passwords defined")
        if passwords.get(username) != password:
            raise _Refused(b"400", b"Invalid username or password")
        return username

    async def _check_curve(self, domain, key):
        key_z85 = z85.encode(key)
        rule = self._for_domain(self.curve, domain)
        if rule is None:
            raise _Refused(b"400", b"CURVE not configured")
        if rule == CURVE_ALLOW_ANY:
            ok = True
        elif isinstance(rule, dict):
            ok = key_z85 in rule
        else:
            ok = rule.callback(domain, key_z85)
            if inspect.isawaitable(ok):
                ok = await ok
        if not ok:
            raise _Refused(b"400", b"Unknown key")
        return self.curve_user_id(key)

    async def authenticate(self, domain, address, identity, mechanism, credentials):
        """The decision for one request: (status code, status text, user id), all bytes."""
        try:
            self._check_address(address)
            if mechanism == b"NULL":
                user = ""
            elif mechanism == b"PLAIN":
                if len(credentials) != 2:
                    raise _Refused(b"400", b"PLAIN needs a username and a password")
                username, password = (c.decode(self.encoding, "replace") for c in credentials)
                user = self._check_plain(domain, username, password)
            elif mechanism == b"CURVE":
                if len(credentials) != 1 or len(credentials[0]) != 32:
                    raise _Refused(b"400", b"CURVE needs a 32-byte key")
                user = await self._check_curve(domain, credentials[0])
            else:
                raise _Refused(b"400", b"Unsupported mechanism")
        except _Refused as r:
            self.log.debug("ZAP: refused %s (%s): %s", address, mechanism, r.text)
            return r.code, r.text, b""
        self.log.debug("ZAP: allowed %s (%s) as %r", address, mechanism, user)
        return b"200", b"OK", user.encode(self.encoding)

    async def reply_frames(self, msg):
        """The reply to one request (its frames after REP's envelope): RFC 27's version,
        request id, status code and text, user id and (empty) metadata."""
        if len(msg) < 6:
            self.log.error("ZAP: malformed request of %d frames", len(msg))
            return [VERSION, b"", b"500", b"Malformed request", b"", b""]
        version, request_id, domain, address, identity, mechanism = msg[:6]
        if version != VERSION:
            return [VERSION, request_id, b"400", b"Invalid version", b"", b""]
        code, text, user = await self.authenticate(
            domain.decode(self.encoding, "replace") or "*",
            address.decode(self.encoding, "replace"),
            identity,
            mechanism,
            msg[6:],
        )
        return [VERSION, request_id, code, text, user, b""]

    def handle_zap_message(self, msg):
        """Answers one request (its frames, as the ZAP socket received them). Runs the decision
        on an event loop of the authenticator's own, for a CURVE callback that is a coroutine."""
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
        self.zap_socket.send_multipart(self._loop.run_until_complete(self.reply_frames(msg)))
