"""Network helpers of the tests."""

import contextlib
import socket
import threading
from http.server import ThreadingHTTPServer


def closed_port():
    """A local TCP port nothing listens on (bound once, then released)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@contextlib.contextmanager
def serving(handler):
    """The port of a threaded HTTP server on 127.0.0.1 answering with ``handler`` (a request handler class), shut
    down and closed on exit."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield httpd.server_address[1]
    finally:
        httpd.shutdown()
        httpd.server_close()
