"""What the conformance tests share besides their fixtures (``conftest.py``)."""

import secrets
import time


def unique(prefix="conf"):
    """A name no earlier run used: ``prefix`` and 6 hex digits."""
    return f"{prefix}-{secrets.token_hex(3)}"


def poll(fn, timeout=20, interval=0.25):
    """``fn()`` until it returns something truthy; the last value after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(interval)
