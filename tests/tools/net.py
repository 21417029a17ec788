"""Network helpers of the tests."""

import socket


def closed_port():
    """A local TCP port nothing listens on (bound once, then released)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port
