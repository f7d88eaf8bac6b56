"""pyzmq's jsonapi: json with bytes out."""

import json


def dumps(o, **kwargs):
    return json.dumps(o, **kwargs).encode("utf8")


def loads(s, **kwargs):
    if isinstance(s, bytes):
        s = s.decode("utf8")
    return json.loads(s, **kwargs)

jsonmod = json
