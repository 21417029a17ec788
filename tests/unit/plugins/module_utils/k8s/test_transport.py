"""transport.py: proxies as kubectl chooses them, and connection errors in plain words."""

import importlib.util
import socket
import struct
import threading
from http.server import BaseHTTPRequestHandler

import pytest
import urllib3
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s import transport as T
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.kubeconfig import AuthError, ClusterConfig

from tests.tools import net


@pytest.mark.parametrize("no_proxy, host, bypassed", [
    ("*", "https://api.example.com:6443", True),
    ("example.com", "https://api.example.com:6443", True),  # a domain matches itself and its subdomains
    ("example.com", "https://example.com", True),
    (".example.com", "https://example.com", False),  # a leading dot: subdomains only
    (".example.com", "https://api.example.com", True),
    ("*.example.com", "https://api.example.com", True),
    ("ample.com", "https://api.example.com", False),
    ("example.com:6443", "https://api.example.com:6443", True),
    ("example.com:443", "https://api.example.com:6443", False),
    ("example.com:443", "https://api.example.com", True),  # the scheme's default port
    ("10.0.0.0/8", "https://10.1.2.3:6443", True),
    ("10.0.0.0/8", "https://11.1.2.3:6443", False),
    ("10.1.2.3", "https://10.1.2.3:6443", True),
    ("10.1.2.3:6443", "https://10.1.2.3:6443", True),
    ("[fd00::1]:6443", "https://[fd00::1]:6443", True),
    ("fd00::/8", "https://[fd00::1]:6443", True),
    (" other.org , API.EXAMPLE.COM ", "https://api.example.com", True),
    ("", "https://api.example.com", False),
])
def test_no_proxy_follows_gos_rules(no_proxy, host, bypassed):
    assert T.bypass_proxy(host, no_proxy) is bypassed


def test_environment_proxies_as_kubectl_takes_them():
    env = {"HTTPS_PROXY": "proxy.corp:3128", "http_proxy": "http://plain:80", "NO_PROXY": ".internal"}
    assert T.environment_proxy("https://api.example.com:6443", env) == "http://proxy.corp:3128"
    assert T.environment_proxy("http://api.example.com", env) == "http://plain:80"
    assert T.environment_proxy("https://api.cluster.internal", env) is None
    assert T.environment_proxy("https://127.0.0.1:6443", env) is None  # loopback: never from the environment
    assert T.environment_proxy("https://localhost:6443", env) is None
    assert T.environment_proxy("https://[::1]:6443", env) is None
    assert T.environment_proxy("https://api.example.com", {"https_proxy": "socks5://s:1080"}) == "socks5://s:1080"
    assert T.environment_proxy("https://api.example.com", {"HTTP_PROXY": "http://p"}) is None  # not for https


def test_choose_proxy_option_or_kubeconfig_first_then_environment():
    cfg = ClusterConfig("https://api.example.com")
    env = {"HTTPS_PROXY": "http://env-proxy:3128"}
    assert T.choose_proxy(cfg, env) == "http://env-proxy:3128"
    cfg.proxy = "http://own-proxy:3128"
    assert T.choose_proxy(cfg, env) == "http://own-proxy:3128"
    cfg.no_proxy = "example.com"
    assert T.choose_proxy(cfg, env) is None
    cfg.no_proxy, cfg.proxy = None, "ftp://p"
    with pytest.raises(AuthError, match='proxy p: unsupported scheme "ftp", must be http, https, or socks5'):
        T.choose_proxy(cfg, {})


@pytest.mark.skipif(importlib.util.find_spec("socks") is not None, reason="PySocks is installed")
def test_a_socks5_proxy_without_pysocks_names_the_package():
    with pytest.raises(AuthError) as err:
        T.pool_manager("socks5://user:s3cret@socks.example:1080", None, {})
    assert str(err.value) == "proxy socks.example is a SOCKS5 proxy, which needs the Python package PySocks (pip install PySocks)"


@pytest.mark.skipif(importlib.util.find_spec("socks") is None, reason="needs PySocks")
def test_a_socks5_proxy_resolves_names_on_the_proxy_as_kubectl():
    manager = T.pool_manager("socks5://socks.example:1080", None, {})
    assert manager.proxy_url.startswith("socks5h://socks.example:1080")


# -- connection errors ---------------------------------------------------------------------------
def _error(url, manager=None):
    manager = manager or urllib3.PoolManager(timeout=urllib3.Timeout(connect=2, read=0.3))
    with pytest.raises(urllib3.exceptions.HTTPError) as err:
        manager.request("GET", url, retries=False)
    return err.value


@pytest.fixture
def closed_port():
    return net.closed_port()


@pytest.fixture
def plain_http():
    class Quiet(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

    with net.serving(Quiet) as port:
        yield port


@pytest.fixture
def silent():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    yield s.getsockname()[1]
    s.close()


def test_connection_refused(closed_port):
    assert T.connection_words(_error(f"https://127.0.0.1:{closed_port}/")) == "connection refused"


def test_dns_failure():
    words = T.connection_words(_error("https://stacksync-no-such-host.invalid:6443/"))
    assert words.startswith("the server's host name does not resolve (DNS: ")


def test_tls_to_a_plain_http_server(plain_http):
    words = T.connection_words(_error(f"https://127.0.0.1:{plain_http}/"))
    assert words == "TLS handshake failed: wrong version number (is it an http:// server?)"


def test_silent_server(silent):
    words = T.connection_words(_error(f"http://127.0.0.1:{silent}/"))
    assert words == "the server did not answer within 0.3 s (request_timeout)"


def _serve_once(answer):
    """A server that accepts one connection, reads the request and then ``answer(connection)``."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(1)

    def serve():
        conn, _ = s.accept()
        conn.recv(65536)
        answer(conn)
        s.close()

    threading.Thread(target=serve, daemon=True).start()
    return s.getsockname()[1]


def test_server_closes_without_answering():
    # http.client's RemoteDisconnected is a ConnectionResetError: it gets its own words, not a reset's
    port = _serve_once(lambda conn: conn.close())
    assert T.connection_words(_error(f"http://127.0.0.1:{port}/")) == "the server closed the connection without answering"


def test_server_resets_the_connection():
    def reset(conn):
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        conn.close()

    port = _serve_once(reset)
    assert T.connection_words(_error(f"http://127.0.0.1:{port}/")) == "the server reset the connection"


def test_dns_failure_without_urllib3_2s_error_class(monkeypatch):
    # urllib3 1.26 (allowed by the requirements) has no NameResolutionError: the gaierror cause says it
    error = _error("https://stacksync-no-such-host.invalid:6443/")
    monkeypatch.delattr(urllib3.exceptions, "NameResolutionError", raising=False)
    monkeypatch.setattr(T, "_NAME_RESOLUTION_ERROR", getattr(urllib3.exceptions, "NameResolutionError", ()))
    assert T.connection_words(error).startswith("the server's host name does not resolve (DNS: ")


def test_proxy_refused(closed_port):
    manager = urllib3.ProxyManager(f"http://127.0.0.1:{closed_port}", timeout=2)
    assert T.connection_words(_error("https://api.example.com/", manager)) == "cannot connect through the proxy: connection refused"


def test_untrusted_certificate(kubesim):
    words = T.connection_words(_error(kubesim.server + "/version"))  # the simulator's CA is not in the default store
    assert words.startswith("its TLS certificate was rejected: ") and "_ssl.c" not in words and "[SSL" not in words


def test_unreachable_message():
    assert T.unreachable("https://127.0.0.1:6443", "connection refused", 6, 4.2) == (
        "cannot reach https://127.0.0.1:6443: connection refused (6 tries in 4 s)")
    assert T.unreachable("https://u:pw@h", "x", 1, 0.01) == "cannot reach https://********@h: x (1 try in 0 s)"
    assert T.unreachable("https://h", "its TLS certificate was rejected: y") == "cannot reach https://h: its TLS certificate was rejected: y"
