# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""HTTP/1.1 requests written and answers read by the collection, on connections urllib3 opens.

A request through ``urllib3.PoolManager.request`` costs about 1 ms of CPU in the client (URL parsing, a
``Retry`` and a ``Timeout`` per request, http.client's header parsing with the ``email`` package, the
response object), four times what the API server's answer takes to read. A run of 10,000 objects sends
10,000 requests or more: that is seconds. :class:`Lane` keeps what only urllib3 should do -- opening a
connection: DNS, the TCP options, TLS with the CA, client certificate, SNI and host-name check of the
pool's settings (``pool._new_conn()`` + ``connect()``) -- and does the rest itself: it writes the request
(Host, ``Accept-Encoding: identity``, Content-Length; header names and values and the target checked as
http.client checks them), reads the answer (status line, at most 100 headers of at most 64 KiB,
``Transfer-Encoding: chunked``, Content-Length or read to the close, 1xx answers skipped, no body for
HEAD, 204 and 304; any other transfer or content coding refused) and keeps connections for the next
request (at most ``maxsize``, the last used first; one the server closed while idle is dropped, as
urllib3 drops it). Its errors are urllib3's, so that :mod:`.transport` words them and the client retries
them as it did: ``ReadTimeoutError``, ``SSLError``, ``ProtocolError("Connection aborted.", cause)``, and
the connection errors urllib3 raises itself.

A server reached through a proxy keeps urllib3's whole request (:func:`lane_for` gives None): tunnels and
SOCKS are urllib3's. A lane is its client's own: its connections carry that client's TLS identity and
are never shared with another client. Forked processes drop the connections of their parent.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import contextlib
import os
import re
import socket
import threading

try:
    import http.client as httplib
except ImportError:  # pragma: no cover - Python 2 is not supported, keeps sanity happy
    import httplib  # type: ignore

try:
    import urllib3
    from urllib3.util.url import parse_url
    from urllib3.util.wait import wait_for_read
except ImportError:  # pragma: no cover - checked with CLIENT_REQUIREMENTS before anything runs
    urllib3 = parse_url = wait_for_read = None

#: what a header line or the status line may hold, and how many header lines an answer may have (http.client's limits)
MAX_LINE = 65536
MAX_HEADERS = 100
#: the characters of a header name (an RFC 9110 token)
TOKEN_CHARS = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
_TOKEN = re.compile("^[%s]+$" % re.escape(TOKEN_CHARS))
#: what a header value may not hold (http.client refuses CR and LF; NUL ends a C string on the server)
_BAD_VALUE = re.compile(r"[\r\n\x00]")
#: a request target that needs no percent-encoding (else urllib3's parse_url encodes it, as a request through
#: urllib3 did)
_PLAIN_TARGET = re.compile(r"^/[A-Za-z0-9\-._~!$&'()*+,;=:@/%?]*$")
_HEX = re.compile(rb"^[0-9A-Fa-f]+$")
_DIGITS = re.compile(rb"^[0-9]+$")
_DIGITS_TEXT = re.compile(r"^[0-9]+$")
_NO_BODY_STATUSES = (204, 304)


class _Headers(dict):
    """An answer's headers: lower-case names, ``get`` in any case (repeated headers joined with ``, ``)."""

    def get(self, name, default=None):
        return dict.get(self, name.lower(), default)

    def __getitem__(self, name):
        return dict.__getitem__(self, name.lower())

    def __contains__(self, name):
        return dict.__contains__(self, name.lower())


class _Connection:
    """An open socket and its buffered reader."""

    __slots__ = ("reader", "sock")

    def __init__(self, sock):
        self.sock = sock
        self.reader = sock.makefile("rb")

    def close(self):
        for part in (self.reader, self.sock):
            with contextlib.suppress(Exception):
                part.close()


def lane_for(manager, server, maxsize, read_timeout, proxy=None):
    """The :class:`Lane` of a client of ``server`` whose requests went through ``manager`` (a urllib3
    ``PoolManager``); None when the server is reached through ``proxy`` (urllib3 keeps those requests)."""
    if proxy or urllib3 is None:
        return None
    # a server URL may hold a path (a proxy to several clusters: https://rancher.example/k8s/clusters/c-m-1): every
    # request's path goes under it, as kubectl sends it
    prefix = (parse_url(server).path or "").rstrip("/")
    return Lane(manager.connection_from_url(server), maxsize, read_timeout, prefix)


class Lane:
    """Requests to one server on connections opened by a urllib3 connection ``pool`` (its settings: TLS,
    timeouts, socket options); at most ``maxsize`` at once (a request waits for a free one, as urllib3's
    ``block=True`` pool waits); every target under the server URL's path ``prefix``. Thread-safe."""

    def __init__(self, pool, maxsize, read_timeout, prefix=""):
        self._pool = pool
        self._prefix = prefix
        self._maxsize = max(int(maxsize), 1)
        self._read_timeout = read_timeout
        self._lock = threading.Lock()
        self._reset()
        port = pool.port
        default = 443 if pool.scheme == "https" else 80
        host = "[%s]" % pool.host if ":" in pool.host and not pool.host.startswith("[") else pool.host
        self._host = host if port in (None, default) else "%s:%d" % (host, port)
        self._origin = "%s://%s" % (pool.scheme, self._host)

    def _reset(self):
        self._slots = threading.BoundedSemaphore(self._maxsize)
        self._idle = []
        self._generation = 0
        self._pid = os.getpid()

    # -- connections ------------------------------------------------------------------------------
    def _take(self):
        """An idle connection the server has not closed, else a new one."""
        while True:
            with self._lock:
                conn = self._idle.pop() if self._idle else None
            if conn is None:
                return self._open()
            try:
                dropped = wait_for_read(conn.sock, timeout=0.0)  # readable while idle: closed (or garbage)
            except (OSError, ValueError):
                dropped = True
            if not dropped:
                return conn
            conn.close()

    def _open(self):
        opener = self._pool._new_conn()  # pylint: disable=protected-access
        try:
            opener.connect()
        except urllib3.exceptions.HTTPError:
            raise
        except Exception as e:  # pylint: disable=broad-except
            raise _urllib3_error(e, self._pool, self._read_timeout) from e
        sock = opener.sock
        opener.sock = None  # the lane owns it now
        sock.settimeout(self._read_timeout)
        return _Connection(sock)

    def _give_back(self, conn, generation):
        with self._lock:
            keep = generation == self._generation and len(self._idle) < self._maxsize
            if keep:
                self._idle.append(conn)
        if not keep:
            conn.close()

    def close(self):
        """Close the idle connections; those in use are closed when their request ends. The lane stays usable."""
        with self._lock:
            idle, self._idle = self._idle, []
            self._generation += 1
        for conn in idle:
            conn.close()

    # -- one exchange -----------------------------------------------------------------------------
    def exchange(self, method, target, headers, body=None):
        """Send one request; ``(status, headers, body bytes)`` of its answer (all of it read).

        :param target: the path and query (percent-encoded here where needed, as urllib3 encodes it).
        :param headers: ``(name, value)`` pairs (Host, Accept-Encoding and Content-Length are added here).
        """
        target = self._prefix + target
        request = _request_bytes(method, target, self._host, headers, body)
        if self._pid != os.getpid():  # a forked process: the parent's connections are the parent's
            with self._lock:
                if self._pid != os.getpid():
                    self._reset()
        slots = self._slots
        slots.acquire()
        try:
            generation = self._generation
            conn = self._take()
            try:
                status, answer, data, keep = self._send(conn, method, request, target)
            except Exception:
                conn.close()
                raise
            if keep:
                self._give_back(conn, generation)
            else:
                conn.close()
            return status, answer, data
        finally:
            slots.release()

    def _send(self, conn, method, request, target):
        try:
            # as urllib3: the server may have answered and closed; the answer is read below
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                conn.sock.sendall(request)
            return read_response(conn.reader, method)
        except urllib3.exceptions.HTTPError:
            raise
        except Exception as e:  # pylint: disable=broad-except
            # the URL without its query, for messages
            raise _urllib3_error(e, self._pool, self._read_timeout, self._origin + target.split("?", 1)[0]) from e


def _urllib3_error(error, pool, read_timeout, url=None):
    """The urllib3 exception a request through urllib3 (``retries=False``) raised for ``error``."""
    if isinstance(error, socket.timeout) or (
            error.__class__.__name__.startswith("SSL") and "timed out" in str(error)):
        return urllib3.exceptions.ReadTimeoutError(pool, url, "Read timed out. (read timeout=%s)" % read_timeout)
    # ssl's errors and the host-name check's CertificateError (ssl's or urllib3's own class of that name)
    if error.__class__.__name__.startswith("SSL") or error.__class__.__name__ == "CertificateError":
        return urllib3.exceptions.SSLError(error)
    return urllib3.exceptions.ProtocolError("Connection aborted.", error)


# -- the request ----------------------------------------------------------------------------------
def _request_bytes(method, target, host, headers, body):
    """The bytes of one HTTP/1.1 request; ValueError for a header or target http.client would refuse (the
    message never holds a header's value: it may be a credential)."""
    if not _PLAIN_TARGET.match(target):
        if not target.startswith("/"):
            raise ValueError("the request target must start with /")
        target = parse_url(target).request_uri
        if re.search(r"[\x00-\x20\x7f]", target):
            raise ValueError("the request target holds control characters")
    lines = ["%s %s HTTP/1.1" % (method, target), "Host: " + host, "Accept-Encoding: identity"]
    for name, value in headers:
        value = str(value)
        if not _TOKEN.match(name):
            raise ValueError("invalid header name %r" % name)
        if _BAD_VALUE.search(value):
            raise ValueError("invalid value of header %s: it holds a line break or NUL" % name)
        lines.append("%s: %s" % (name, value))
    if body is not None:
        lines.append("Content-Length: %d" % len(body))
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    return head + body if body else head


# -- the answer -----------------------------------------------------------------------------------
def _line(reader):
    line = reader.readline(MAX_LINE + 1)
    if len(line) > MAX_LINE:
        raise httplib.LineTooLong("header line")
    return line


def read_response(reader, method):
    """``(status, headers, body, keep)`` of the answer on ``reader`` (a binary buffered reader);
    ``keep``: the connection may carry another request. Raises http.client's exceptions."""
    while True:
        line = _line(reader)
        if not line:
            raise httplib.RemoteDisconnected("Remote end closed connection without response")
        parts = line.split(None, 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/") or not _DIGITS.match(parts[1]) or len(parts[1]) != 3:
            raise httplib.BadStatusLine(line.decode("latin-1", "replace")[:100])
        status, version = int(parts[1]), parts[0]
        headers = read_headers(reader)
        if 100 <= status < 200:  # an interim answer (100 Continue, 103 Early Hints): the real one follows
            continue
        break
    data, close_delimited = read_body(reader, method, status, headers)
    connection = headers.get("connection", "").lower()
    keep = not close_delimited and (
        "close" not in connection if version == b"HTTP/1.1" else "keep-alive" in connection)
    return status, headers, data, keep


def read_headers(reader):
    """The header lines up to the empty line, as :class:`_Headers`."""
    headers, last = _Headers(), None
    for _count in range(MAX_HEADERS + 1):
        line = _line(reader)
        if line in (b"\r\n", b"\n"):
            return headers
        if not line:
            raise httplib.IncompleteRead(b"", None)
        if line[:1] in (b" ", b"\t") and last is not None:  # an obsolete folded continuation
            dict.__setitem__(headers, last, headers[last] + " " + line.strip().decode("latin-1"))
            continue
        name, sep, value = line.partition(b":")
        if not sep:
            raise httplib.HTTPException("header line without a colon")
        last = name.strip().decode("latin-1").lower()
        value = value.strip().decode("latin-1")
        previous = dict.get(headers, last)
        dict.__setitem__(headers, last, value if previous is None else previous + ", " + value)
    raise httplib.HTTPException("got more than %d headers" % MAX_HEADERS)


def read_body(reader, method, status, headers):
    """``(body, close_delimited)``: the answer's body, read as its headers say."""
    coding = headers.get("content-encoding", "identity").strip().lower()
    if coding not in ("identity", ""):
        raise httplib.HTTPException("unrequested Content-Encoding %s" % coding)
    if method == "HEAD" or status in _NO_BODY_STATUSES:
        return b"", False
    transfer = headers.get("transfer-encoding")
    if transfer is not None:
        if transfer.strip().lower() != "chunked":
            raise httplib.HTTPException("unsupported Transfer-Encoding %s" % transfer)
        return read_chunked(reader), False
    length = headers.get("content-length")
    if length is not None:
        length = length.strip()
        if "," in length:  # repeated: must all be the same
            values = set(v.strip() for v in length.split(","))
            if len(values) != 1:
                raise httplib.HTTPException("conflicting Content-Length")
            length = values.pop()
        if not _DIGITS_TEXT.match(length):
            raise httplib.HTTPException("invalid Content-Length")
        size = int(length)
        data = reader.read(size) if size else b""
        if len(data) < size:
            raise httplib.IncompleteRead(data, size - len(data))
        return data, False
    return reader.read(), True  # neither: the body ends when the server closes the connection


def read_chunked(reader):
    parts = []
    while True:
        line = _line(reader)
        size_text = line.split(b";", 1)[0].strip()
        if not _HEX.match(size_text):
            raise httplib.IncompleteRead(b"".join(parts)) if not line else httplib.HTTPException("invalid chunk size")
        size = int(size_text, 16)
        if size == 0:
            break
        chunk = reader.read(size)
        if len(chunk) < size:
            raise httplib.IncompleteRead(b"".join(parts) + chunk, size - len(chunk))
        parts.append(chunk)
        if _line(reader) not in (b"\r\n", b"\n"):
            raise httplib.HTTPException("a chunk does not end with CRLF")
    for _count in range(MAX_HEADERS + 1):  # trailers, up to the empty line
        line = _line(reader)
        if line in (b"\r\n", b"\n"):
            return b"".join(parts)
        if not line:
            raise httplib.IncompleteRead(b"".join(parts))
    raise httplib.HTTPException("got more than %d trailers" % MAX_HEADERS)
