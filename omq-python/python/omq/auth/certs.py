"""CURVE certificates in ZeroMQ's text format (ZPL), as czmq and pyzmq write them.

A certificate is a `curve` section with a Z85 `public-key` and, in the secret file only, a
`secret-key`, plus an optional `metadata` section:

    metadata
        name = "value"
    curve
        public-key = "..."
        secret-key = "..."

`name.key` holds the public half (safe to hand out), `name.key_secret` both halves.
"""

import datetime
import os

from .._omq import curve_keypair

__all__ = ["create_certificates", "load_certificate", "load_certificates"]


def _quote(value):
    if isinstance(value, bytes):
        value = value.decode("utf-8")
    return '"%s"' % str(value).replace('"', "'")


def _write_certificate(path, public, secret, metadata, what):
    lines = [
        "#   %s CURVE certificate, written by omq on %s"
        % (what, datetime.datetime.now().isoformat(timespec="seconds")),
    ]
    if secret is not None:
        lines.append("#   Keep this file private: it holds the secret key.")
    lines.append("")
    if metadata:
        lines.append("metadata")
        for name, value in metadata.items():
            lines.append("    %s = %s" % (name, _quote(value)))
    lines.append("curve")
    lines.append("    public-key = %s" % _quote(public))
    if secret is not None:
        lines.append("    secret-key = %s" % _quote(secret))
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


def create_certificates(key_dir, name, metadata=None):
    """Makes a new key pair and writes `name.key` (public) and `name.key_secret` (both) in
    `key_dir`; returns the two paths. The secret file is readable by its owner only."""
    public, secret = curve_keypair()
    public_file = os.path.join(key_dir, name + ".key")
    secret_file = os.path.join(key_dir, name + ".key_secret")
    _write_certificate(public_file, public, None, metadata, "Public")
    _write_certificate(secret_file, public, secret, metadata, "Secret")
    os.chmod(secret_file, 0o600)
    return public_file, secret_file


def _value(line):
    """The value of a ZPL `name = value` line, without its quotes."""
    value = line.split("=", 1)[1].strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        value = value[1:-1]
    return value.encode("ascii")


def load_certificate(filename):
    """(public key, secret key or None) of a certificate file, both Z85 bytes. Raises
    ValueError when the file has no public key (it is not a certificate)."""
    public = secret = None
    with open(filename, encoding="utf-8") as f:
        for raw in f:
            line = raw.strip()  # no trailing comments: '#' is a Z85 digit
            if not line or line.startswith("#") or "=" not in line:
                continue
            key = line.split("=", 1)[0].strip()
            if key == "public-key":
                public = _value(line)
            elif key == "secret-key":
                secret = _value(line)
    if public is None:
        raise ValueError("no public key in %s" % filename)
    return public, secret


def load_certificates(directory="."):
    """The public keys of the `*.key` certificates in `directory`, as a dict key -> True
    (a set, kept a dict as pyzmq has it). Files that are not certificates are skipped."""
    if not os.path.isdir(directory):
        raise OSError("invalid certificate directory: %s" % directory)
    keys = {}
    for entry in sorted(os.listdir(directory)):
        if not entry.endswith(".key"):
            continue
        try:
            public, _ = load_certificate(os.path.join(directory, entry))
        except (OSError, ValueError, UnicodeError):
            continue
        keys[public] = True
    return keys
