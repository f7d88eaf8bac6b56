"""Generates a CURVE key pair (Z85): python -m omq.curve_keygen [--secret KEY] [--json]."""

import argparse
import json
import sys

from omq._omq import curve_keypair, curve_public


def main(argv=None):
    p = argparse.ArgumentParser(
        prog="python3 -m zmq.curve_keygen", description="Generate a CURVE key pair (Z85)."
    )
    p.add_argument("--secret", help="derive the public key of this secret key (Z85)")
    p.add_argument("--json", action="store_true", help="print JSON")
    args = p.parse_args(argv)
    if args.secret:
        secret = args.secret.encode()
        public = curve_public(secret)
    else:
        public, secret = curve_keypair()
    if args.json:
        print(json.dumps({"public": public.decode(), "secret": secret.decode()}))
    else:
        print("== CURVE PUBLIC KEY ==")
        print(public.decode())
        print("== CURVE SECRET KEY ==")
        print(secret.decode())


if __name__ == "__main__":
    sys.exit(main())
