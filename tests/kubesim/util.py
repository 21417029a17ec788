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


def deep(obj):
    """Deep copy of a JSON-like value (a JSON round trip is several times faster than copy.deepcopy)."""
    return json.loads(json.dumps(obj))


def dig(obj, *path, default=None):
    """Nested dict lookup that tolerates missing levels."""
    cur = obj
    for p in path:
        if not isinstance(cur, dict) or p not in cur:
            return default
        cur = cur[p]
    return cur
