"""Small helpers shared by the simulator modules."""

import hashlib
import json
import random
import time
import uuid

_GEN_CHARS = "bcdfghjklmnpqrstvwxz2456789"


def now():
    """RFC 3339 timestamp with second precision, as the API server writes them."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def new_uid():
    """A fresh object uid."""
    return str(uuid.uuid4())


def random_suffix(n=5, rng=random):
    """Random name suffix from the alphabet the real server uses for generateName."""
    return "".join(rng.choice(_GEN_CHARS) for _ in range(n))


def template_hash(template):
    """Deterministic pod-template-hash (10 chars from the real alphabet)."""
    digest = hashlib.sha256(json.dumps(template, sort_keys=True).encode()).digest()
    return "".join(_GEN_CHARS[b % len(_GEN_CHARS)] for b in digest[:10])


class _NotPlain(Exception):
    """A value a JSON round trip would change or refuse."""


_SCALARS = frozenset((str, int, bool, type(None)))


def _copy(v):
    """Structural copy of a plain JSON value (raises _NotPlain for anything a JSON round trip would change)."""
    t = type(v)
    if t is dict:
        out = {}
        for k, item in v.items():
            if type(k) is not str:
                raise _NotPlain
            out[k] = _copy(item)
        return out
    if t is list:
        return [_copy(item) for item in v]
    if t in _SCALARS or (t is float and v == v):
        return v
    raise _NotPlain


def deep(obj):
    """Deep copy of a JSON-like value, exactly what a JSON round trip gives: plain values are copied
    structurally (several times faster); anything else (non-string keys, tuples, NaN, other types)
    takes the round trip itself."""
    try:
        return _copy(obj)
    except (_NotPlain, RecursionError):
        return json.loads(json.dumps(obj))


def dig(obj, *path, default=None):
    """Nested dict lookup that tolerates missing levels."""
    cur = obj
    for p in path:
        if not isinstance(cur, dict) or p not in cur:
            return default
        cur = cur[p]
    return cur
