"""The collection's HTTP/1.1 on urllib3's connections (module_utils/k8s/wire.py): the bytes of a request, the
reading of answers (against a scripted TCP server and in-memory readers), connections kept, bounded and dropped,
and urllib3's errors for what goes wrong."""

import contextlib
import http.client as httplib
import io
import os
import socket
import threading
import time

import pytest
import urllib3
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s import transport as T
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s import wire as W
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.client import ApiError, KubeClient


# -- the request's bytes ------------------------------------------------------------------------------
def test_request_bytes():
    got = W._request_bytes("PATCH", "/api/v1/namespaces/a/configmaps/b?fieldManager=x", "h:6443",
                           [("User-Agent", "stacksync.k8s"), ("Impersonate-Group", "a"), ("Impersonate-Group", "b")], b'{"x":1}')
    assert got == (b"PATCH /api/v1/namespaces/a/configmaps/b?fieldManager=x HTTP/1.1\r\nHost: h:6443\r\n"
                   b"Accept-Encoding: identity\r\nUser-Agent: stacksync.k8s\r\nImpersonate-Group: a\r\nImpersonate-Group: b\r\n"
                   b"Content-Length: 7\r\n\r\n{\"x\":1}")
    # no body: no Content-Length; an empty one says 0
    assert W._request_bytes("GET", "/api", "h", [], None) == b"GET /api HTTP/1.1\r\nHost: h\r\nAccept-Encoding: identity\r\n\r\n"
    assert W._request_bytes("DELETE", "/x", "h", [], b"").endswith(b"Content-Length: 0\r\n\r\n")


def test_target_percent_encoded_as_urllib3_encodes_it():
    got = W._request_bytes("GET", "/api/v1/namespaces/a b/configmaps/\u00fc?x=1 2", "h", [], None)
    assert got.split(b"\r\n")[0] == b"GET /api/v1/namespaces/a%20b/configmaps/%C3%BC?x=1%202 HTTP/1.1"
    assert urllib3.util.parse_url("https://h/api/v1/namespaces/a b/configmaps/\u00fc?x=1 2").request_uri == \
        "/api/v1/namespaces/a%20b/configmaps/%C3%BC?x=1%202"
    with pytest.raises(ValueError):
        W._request_bytes("GET", "api", "h", [], None)


@pytest.mark.parametrize("value", ["Bearer abc\r\nX-Evil: 1", "Bearer abc\n", "Bearer\x00abc"])
def test_header_values_with_line_breaks_are_refused_without_showing_them(value):
    with pytest.raises(ValueError) as err:
        W._request_bytes("GET", "/api", "h", [("Authorization", value)], None)
    assert "abc" not in str(err.value) and "Authorization" in str(err.value)


@pytest.mark.parametrize("name", ["Bad Name", "X:Y", "", "N\u00e4me"])
def test_header_names_must_be_tokens(name):
    with pytest.raises(ValueError):
        W._request_bytes("GET", "/api", "h", [(name, "v")], None)


# -- reading answers ----------------------------------------------------------------------------------
def read(raw, method="GET"):
    return W.read_response(io.BufferedReader(io.BytesIO(raw)), method)


def test_content_length_answer_and_headers_in_any_case():
    status, headers, body, keep = read(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n"
                                       b"Date: Mon, 07 Dec 2026 16:00:00 GMT\r\n\r\n{}NEXT")
    assert (status, body, keep) == (200, b"{}", True)
    assert headers.get("content-type") == headers.get("Content-Type") == headers["CONTENT-TYPE"] == "application/json"
    assert "date" in headers and headers.get("Retry-After") is None


def test_chunked_answer_with_extensions_and_trailers():
    raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n1\r\n \r\na\r\n0123456789\r\n0\r\nX-T: 1\r\n\r\n"
    assert read(raw)[2:] == (b"hello 0123456789", True)


def test_answer_read_to_the_close_is_not_kept():
    assert read(b"HTTP/1.1 200 OK\r\n\r\nall of it")[2:] == (b"all of it", False)


@pytest.mark.parametrize("raw, keep", [
    (b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", False),
    (b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", False),
    (b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n", True),
    (b"HTTP/1.1 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n", True),
])
def test_connection_kept_as_the_answer_says(raw, keep):
    assert read(raw)[3] is keep


def test_no_body_for_head_204_and_304_and_interim_answers_skipped():
    assert read(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n", "HEAD")[2:] == (b"", True)
    assert read(b"HTTP/1.1 204 No Content\r\n\r\n")[2:] == (b"", True)
    assert read(b"HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\n")[2:] == (b"", True)
    status, headers, body, _keep = read(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: x\r\n\r\n"
                                        b"HTTP/1.1 201 Created\r\nContent-Length: 1\r\n\r\nx")
    assert (status, body, headers.get("Link")) == (201, b"x", None)


def test_repeated_and_folded_headers():
    _s, headers, _b, _k = read(b"HTTP/1.1 200 OK\r\nWarning: a\r\nWarning: b\r\nX-Long: one\r\n two\r\nContent-Length: 0\r\n\r\n")
    assert (headers.get("Warning"), headers.get("X-Long")) == ("a, b", "one two")
    assert read(b"HTTP/1.1 200 OK\r\nContent-Length: 1, 1\r\n\r\nx")[2] == b"x"


@pytest.mark.parametrize("raw, error", [
    (b"", httplib.RemoteDisconnected),
    (b"SSH-2.0-OpenSSH\r\n", httplib.BadStatusLine),
    (b"HTTP/1.1 2000 OK\r\n\r\n", httplib.BadStatusLine),
    (b"HTTP/1.1 200 OK\r\n" + b"X-A: 1\r\n" * 101 + b"\r\n", httplib.HTTPException),
    (b"HTTP/1.1 200 OK\r\nX-A: " + b"a" * 70000 + b"\r\n\r\n", httplib.LineTooLong),
    (b"HTTP/1.1 200 OK\r\nNo colon here\r\n\r\n", httplib.HTTPException),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", httplib.IncompleteRead),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 1, 2\r\n\r\nx", httplib.HTTPException),
    (b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", httplib.HTTPException),
    (b"HTTP/1.1 200 OK\r\nContent-Length: \xb2\r\n\r\nx", httplib.HTTPException),  # a digit to str.isdigit
    (b"HTTP/1.1 200 OK\r\nContent-Length: \r\n\r\n", httplib.HTTPException),
    (b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 1\r\n\r\nx", httplib.HTTPException),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", httplib.HTTPException),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", httplib.HTTPException),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel", httplib.IncompleteRead),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX\r\n0\r\n\r\n", httplib.HTTPException),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n", httplib.IncompleteRead),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n", httplib.IncompleteRead),
])
def test_answers_refused(raw, error):
    with pytest.raises(error):
        read(raw)


# -- a lane on a scripted server -----------------------------------------------------------------------
class Server:
    """A TCP server answering each request with ``answer(request bytes, connection number)`` (bytes, or None: close
    the connection without answering; ``"hang"``: never answer; ``("close", bytes)``: answer, then close without
    saying so); it counts connections and requests."""

    def __init__(self, answer):
        self.answer, self.connections, self.requests = answer, 0, []
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.open_now, self.most_open = 0, 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._conns, self._threads = [], []
        self._acceptor = threading.Thread(target=self._accept, daemon=True)
        self._acceptor.start()

    def _accept(self):
        while True:
            try:
                conn, _addr = self.sock.accept()
            except OSError:
                return
            if self._stop.is_set():  # the connection close() makes to wake this thread
                conn.close()
                return
            with self._lock:
                self.connections += 1
                self.open_now += 1
                self.most_open = max(self.most_open, self.open_now)
                number = self.connections
                self._conns.append(conn)
                thread = threading.Thread(target=self._serve, args=(conn, number), daemon=True)
                self._threads.append(thread)
            thread.start()

    def _serve(self, conn, number):
        reader = conn.makefile("rb")
        try:
            while True:
                head = b""
                while not head.endswith(b"\r\n\r\n"):
                    line = reader.readline()
                    if not line:
                        return
                    head += line
                length = [int(h.split(b":")[1]) for h in head.split(b"\r\n") if h.lower().startswith(b"content-length:")]
                request = head + (reader.read(length[0]) if length else b"")
                with self._lock:
                    self.requests.append((number, request))
                out = self.answer(request, number)
                if out == "hang":
                    self._stop.wait(10)
                    return
                if out is None:
                    return
                if isinstance(out, tuple):  # ("close", answer): answer, then close
                    conn.sendall(out[1])
                    return
                conn.sendall(out)
        except OSError:
            return
        finally:
            with self._lock:
                self.open_now -= 1
            reader.close()
            conn.close()

    def close(self):
        """Stop, and let every thread end before the sockets are closed: a socket closed under a thread blocked on it
        can hand that thread the next socket given the same descriptor -- another server's (the simulator of a later
        test in this process), whose connections it would then take and never answer."""
        self._stop.set()
        with contextlib.suppress(OSError):
            socket.create_connection(("127.0.0.1", self.port), timeout=5).close()  # wakes accept()
        self._acceptor.join(10)
        with self._lock:
            conns, threads = list(self._conns), list(self._threads)
        for conn in conns:  # their threads see the end of their reads, and close them
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        for thread in threads:
            thread.join(10)
        assert not self._acceptor.is_alive() and not any(t.is_alive() for t in threads)
        self.sock.close()


@pytest.fixture
def serve():
    servers = []

    def start(answer):
        servers.append(Server(answer))
        return servers[-1]

    yield start
    for s in servers:
        s.close()


def ok(body=b"{}"):
    return b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)


def lane(port, maxsize=4, read_timeout=5.0):
    manager = urllib3.PoolManager(maxsize=maxsize, block=True, timeout=urllib3.Timeout(connect=2, read=read_timeout))
    return W.lane_for(manager, f"http://127.0.0.1:{port}", maxsize, read_timeout)


def test_a_connection_is_kept_for_the_next_request(serve):
    server = serve(lambda request, n: ok(b'{"n":%d}' % n))
    ln = lane(server.port)
    answers = [ln.exchange("GET", "/api/v1/x", [("Accept", "application/json")]) for _ in range(3)]
    assert [a[2] for a in answers] == [b'{"n":1}'] * 3 and server.connections == 1
    assert server.requests[0][1].startswith(b"GET /api/v1/x HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n" % server.port)


def test_post_body_and_its_length_reach_the_server(serve):
    server = serve(lambda request, n: ok(request.split(b"\r\n\r\n", 1)[1]))
    body = '{"name":"\u00e9t\u00e9"}'.encode("utf-8")  # bytes, not characters, are counted
    assert lane(server.port).exchange("POST", "/x", [("Content-Type", "application/json")], body)[2] == body


def test_at_most_maxsize_connections_at_once(serve):
    def slow(request, n):
        time.sleep(0.05)
        return ok()

    server = serve(slow)
    ln = lane(server.port, maxsize=3)
    threads = [threading.Thread(target=lambda: [ln.exchange("GET", "/x", []) for _ in range(4)]) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(server.requests) == 32 and server.connections == 3 and server.most_open == 3


def test_a_connection_the_server_closed_while_idle_is_dropped_not_used(serve):
    # the server answers without saying it will close, and closes: the next request opens another connection
    server = serve(lambda request, n: ("close", ok(b"%d" % n)))
    ln = lane(server.port)
    assert ln.exchange("GET", "/x", [])[2] == b"1" and len(ln._idle) == 1
    time.sleep(0.2)  # the server's close reaches the idle connection
    assert ln.exchange("GET", "/x", [])[2] == b"2" and server.connections == 2


def test_an_answer_that_closes_is_not_kept(serve):
    server = serve(lambda request, n: b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\n%d" % n)
    ln = lane(server.port)
    assert [ln.exchange("GET", "/x", [])[2] for _ in range(2)] == [b"1", b"2"] and ln._idle == []


def test_no_answer_in_time_is_urllib3s_read_timeout(serve):
    server = serve(lambda request, n: "hang")
    ln = lane(server.port, read_timeout=0.3)
    with pytest.raises(urllib3.exceptions.ReadTimeoutError) as err:
        ln.exchange("GET", "/api/v1/secrets?labelSelector=a", [])
    assert T.connection_words(err.value) == "the server did not answer within 0.3 s (request_timeout)"
    assert "labelSelector" not in str(err.value) and ln._idle == []


def test_a_server_closing_without_answering_is_a_protocol_error(serve):
    server = serve(lambda request, n: None)
    with pytest.raises(urllib3.exceptions.ProtocolError) as err:
        lane(server.port).exchange("GET", "/x", [])
    assert T.connection_words(err.value) == "the server closed the connection without answering"


def test_connection_refused_is_urllib3s():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    with pytest.raises(urllib3.exceptions.NewConnectionError) as err:
        lane(port).exchange("GET", "/x", [])
    assert T.connection_words(err.value) == "connection refused"


def test_a_garbled_answer_closes_its_connection(serve):
    server = serve(lambda request, n: b"garbage\r\n\r\n" if n == 1 else ok(b"%d" % n))
    ln = lane(server.port)
    with pytest.raises(urllib3.exceptions.ProtocolError):
        ln.exchange("GET", "/x", [])
    assert ln.exchange("GET", "/x", [])[2] == b"2" and server.connections == 2


def test_close_closes_idle_connections_and_the_lane_stays_usable(serve):
    server = serve(lambda request, n: ok(b"%d" % n))
    ln = lane(server.port)
    assert ln.exchange("GET", "/x", [])[2] == b"1"
    ln.close()
    assert ln._idle == [] and ln.exchange("GET", "/x", [])[2] == b"2"


def test_a_forked_process_does_not_use_its_parents_connections(serve):
    server = serve(lambda request, n: ok(b"%d" % n))
    ln = lane(server.port)
    assert ln.exchange("GET", "/x", [])[2] == b"1"
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        try:
            code = 0 if ln.exchange("GET", "/x", [])[2] == b"2" else 3
        finally:
            os._exit(code)
    _pid, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert ln.exchange("GET", "/x", [])[2] == b"1" and server.connections == 2  # the parent's is its own still


def test_a_proxied_server_keeps_urllib3():
    manager = urllib3.ProxyManager("http://127.0.0.1:9")
    assert W.lane_for(manager, "https://h", 4, 1.0, proxy="http://127.0.0.1:9") is None


# -- the client on its lane ----------------------------------------------------------------------------
def test_the_client_sends_its_headers_and_reads_json_on_the_lane(serve):
    server = serve(lambda request, n: ok(b'{"kind":"Status","n":%d}' % n))
    c = KubeClient(f"http://127.0.0.1:{server.port}", auth=lambda: {"Authorization": "Bearer t"},
                   headers=[("User-Agent", "stacksync.k8s"), ("Authorization", "old")], impersonate_groups=["g1", "g2"])
    assert c._lane is not None
    assert c.get("/api/v1/namespaces/a/configmaps", params={"limit": 5, "continue": None}) == {"kind": "Status", "n": 1}
    head = server.requests[0][1].decode().split("\r\n")
    assert head[0] == "GET /api/v1/namespaces/a/configmaps?limit=5 HTTP/1.1"
    assert [h for h in head if h.split(":")[0] in ("Authorization", "Impersonate-Group", "User-Agent", "Accept")] == [
        "User-Agent: stacksync.k8s", "Impersonate-Group: g1", "Impersonate-Group: g2", "Accept: application/json",
        "Authorization: Bearer t"]


@pytest.mark.parametrize("lane_on", [True, False])
def test_a_server_url_with_a_path_keeps_it_before_every_request(serve, lane_on):
    # a proxy to several clusters (Rancher: https://rancher.example/k8s/clusters/c-m-1), as kubectl sends it
    server = serve(lambda request, n: ok())
    c = KubeClient(f"http://127.0.0.1:{server.port}/k8s/clusters/c-m-1/")
    if not lane_on:
        c._lane = None  # urllib3's whole request, as for a server behind a proxy
    c.get("/api/v1/namespaces", params={"limit": 1})
    assert server.requests[0][1].split(b"\r\n")[0] == b"GET /k8s/clusters/c-m-1/api/v1/namespaces?limit=1 HTTP/1.1"


def test_the_client_retries_a_connection_the_server_dropped(serve):
    server = serve(lambda request, n: None if n == 1 else ok(b'{"n":%d}' % n))
    c = KubeClient(f"http://127.0.0.1:{server.port}")
    c.sleep = lambda s: None
    assert c.get("/x") == {"n": 2} and c.counts == {"GET": 2}


def test_the_client_names_a_timeout_and_keeps_the_query_out_of_its_error(serve):
    server = serve(lambda request, n: "hang")
    c = KubeClient(f"http://127.0.0.1:{server.port}", timeout=0.3, retry_budget=0)
    with pytest.raises(ApiError) as err:
        c.get("/api/v1/secrets", params={"labelSelector": "app=x"})
    assert str(err.value).startswith(f"cannot reach http://127.0.0.1:{server.port}: the server did not answer within 0.3 s")
    assert "labelSelector" not in str(err.value) and err.value.path == "/api/v1/secrets"
