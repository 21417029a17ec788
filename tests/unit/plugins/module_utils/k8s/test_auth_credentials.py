"""auth.py end to end: exec plugins run by the collection, failing plugins fail before any request,
the user entry's impersonation, ``k8s_auth_env``, proxies from the environment, ``kubeconfig`` lists."""

import contextlib
import json
import os
import socket
import stat
import struct
import sys
import textwrap
import threading
from pathlib import Path

import pytest
import yaml
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s import auth as A
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s import execcred

from tests.unit.plugins.module_utils.k8s.test_auth import mtls_server, write  # noqa: F401 - the fixture
from tests.unit.plugins.module_utils.k8s.test_kubeconfig import b64, simple

V1 = "client.authentication.k8s.io/v1"
REVIEW = "/apis/authentication.k8s.io/v1/selfsubjectreviews"


def whoami(client):
    body = client.create(REVIEW, {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    return body["status"]["userInfo"]


def plugin_script(tmp_path, status, name="plugin.py", exit_code=0):
    """An exec plugin printing an ExecCredential with ``status``; it appends a line to ``runs`` at every run."""
    path = tmp_path / name
    answer = json.dumps({"apiVersion": V1, "kind": "ExecCredential", "status": status})
    path.write_text(f"#!{sys.executable}\n" + textwrap.dedent(f"""\
        import json, os, sys
        with open({str(tmp_path / "runs")!r}, "a") as f:
            f.write(os.environ.get("KUBERNETES_EXEC_INFO", "") + "\\n")
        if {exit_code}:
            sys.stderr.write("login expired\\n")
            sys.exit({exit_code})
        print({answer!r})
        """))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def runs(tmp_path):
    path = tmp_path / "runs"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def exec_kubeconfig(sim, tmp_path, plugin, **user):
    doc = yaml.safe_load(Path(sim.kubeconfig).read_text())
    doc["users"][0]["user"] = dict({"exec": dict({"apiVersion": V1, "interactiveMode": "Never"}, **plugin)}, **user)
    return write(tmp_path / "kubeconfig", doc).as_posix()


@pytest.fixture
def sim(kubesim_factory):
    return kubesim_factory(tls=True)


def ours(sim):
    """The requests the simulator got from the collection's client."""
    return [r for r in sim.sim.requests if r["path"] != "/version" or r["authorization"]]


def test_an_exec_plugin_token_is_used_and_cached_until_it_expires(sim, tmp_path):
    command = plugin_script(tmp_path, {"token": sim.token, "expirationTimestamp": "2999-01-01T00:00:00Z"})
    client, namespace = A.build_client({"kubeconfig": exec_kubeconfig(sim, tmp_path, {"command": command})}, environ={})
    assert namespace == "default"
    assert whoami(client)["username"] == "admin" and whoami(client)["username"] == "admin"
    assert len(runs(tmp_path)) == 1  # once, before the first request
    assert runs(tmp_path)[0] == {"apiVersion": V1, "kind": "ExecCredential", "spec": {"interactive": False}}


def test_an_expired_exec_credential_runs_the_plugin_again(sim, tmp_path):
    command = plugin_script(tmp_path, {"token": sim.token, "expirationTimestamp": "2001-01-01T00:00:00Z"})
    client, _ns = A.build_client({"kubeconfig": exec_kubeconfig(sim, tmp_path, {"command": command, "args": ["x"]})},
                                 environ={})
    client.get("/api")
    client.get("/api")
    assert len(runs(tmp_path)) == 3


def test_provide_cluster_info_hands_the_plugin_its_cluster(sim, tmp_path):
    command = plugin_script(tmp_path, {"token": sim.token})
    A.build_client({"kubeconfig": exec_kubeconfig(sim, tmp_path, {"command": command, "provideClusterInfo": True,
                                                                  "args": ["cluster-info"]})}, environ={})
    cluster = runs(tmp_path)[0]["spec"]["cluster"]
    assert cluster["server"] == sim.server and cluster["certificate-authority-data"] == b64(Path(sim.ca_cert).read_bytes())


def test_an_exec_plugin_certificate_is_the_client_certificate(mtls_server, tmp_path):  # noqa: F811
    url, ca, crt, key = mtls_server
    command = plugin_script(tmp_path, {"clientCertificateData": crt.read_text(), "clientKeyData": key.read_text()})
    doc = simple(cluster={"server": url, "certificate-authority-data": b64(ca.read_bytes())},
                 user={"exec": {"apiVersion": V1, "command": command, "interactiveMode": "Never"}})
    client, _ns = A.build_client({"kubeconfig": doc}, environ={})
    assert client.get("/") == {"cn": "client-user", "auth": None}


FAILURES = [
    ("exit", lambda tmp, sim: {"command": plugin_script(tmp, {"token": sim.token}, exit_code=2)},
     "failed with exit code 2; its error output: login expired"),
    ("missing", lambda tmp, sim: {"command": "stacksync-no-such-plugin", "installHint": "brew install the-plugin"},
     "executable stacksync-no-such-plugin not found"),
    ("wrong apiVersion", lambda tmp, sim: {"command": plugin_script(tmp, {"token": sim.token}),
                                           "apiVersion": "client.authentication.k8s.io/v1beta1"},
     "exec plugin is configured to use API version client.authentication.k8s.io/v1beta1, plugin returned version "
     "client.authentication.k8s.io/v1"),
    ("no credentials", lambda tmp, sim: {"command": plugin_script(tmp, {})}, "exec plugin didn't return a token or cert/key pair"),
]


@pytest.mark.parametrize("case, plugin, words", FAILURES, ids=[f[0] for f in FAILURES])
def test_a_failing_exec_plugin_fails_before_any_request(sim, tmp_path, case, plugin, words):
    sim.sim.reset_counters()
    with pytest.raises(A.AuthError) as err:
        A.build_client({"kubeconfig": exec_kubeconfig(sim, tmp_path, plugin(tmp_path, sim))}, environ={"PATH": os.defpath})
    message = str(err.value)
    assert message.startswith('kubeconfig user "admin": getting credentials: ') and words in message, message
    if case == "missing":
        assert message.endswith(execcred.INSTALL_HELP + "\n\nbrew install the-plugin")
    assert sim.token not in message
    assert list(sim.sim.requests) == [], "a request was sent although the credential plugin failed"


def test_a_static_token_wins_over_the_exec_plugin_as_in_kubectl(sim, tmp_path):
    command = plugin_script(tmp_path, {}, exit_code=1)
    client, _ns = A.build_client({"kubeconfig": exec_kubeconfig(sim, tmp_path, {"command": command}, token=sim.token)},
                                 environ={})
    assert whoami(client)["username"] == "admin" and runs(tmp_path) == []
    client, _ns = A.build_client({"kubeconfig": exec_kubeconfig(sim, tmp_path, {"command": command}), "api_key": sim.token},
                                 environ={})
    assert whoami(client)["username"] == "admin" and runs(tmp_path) == []


def test_the_exec_plugin_never_sees_the_jobs_k8s_auth_variables_with_k8s_auth_env_false(sim, tmp_path):
    command = plugin_script(tmp_path, {"token": sim.token})
    path = tmp_path / "plugin.py"
    path.write_text(path.read_text().replace('os.environ.get("KUBERNETES_EXEC_INFO", "")',
                                             'json.dumps(sorted(k for k in os.environ if k.startswith("K8S_AUTH")))'))
    env = {"K8S_AUTH_API_KEY": "job-admin-token", "K8S_AUTH_HOST": "https://job", "OTHER": "x"}
    kubeconfig = exec_kubeconfig(sim, tmp_path, {"command": command})
    A.build_client({"kubeconfig": kubeconfig, "k8s_auth_env": False}, environ=env)
    A.build_client({"kubeconfig": kubeconfig}, environ={"K8S_AUTH_NOT_AN_OPTION": "x"})  # kubectl's way otherwise
    assert runs(tmp_path) == [[], ["K8S_AUTH_NOT_AN_OPTION"]]


def test_impersonation_in_the_user_entry_for_token_and_certificate_users(sim, tmp_path):
    doc = yaml.safe_load(Path(sim.kubeconfig).read_text())
    doc["users"][0]["user"].update({"as": "jane", "as-groups": ["devs"], "as-uid": "u-1",
                                    "as-user-extra": {"scopes": ["a", "b"], "example.com/team": ["x"]}})
    client, _ns = A.build_client({"kubeconfig": doc}, environ={})
    assert whoami(client) == {"username": "jane", "uid": "u-1", "groups": ["devs", "system:authenticated"],
                              "extra": {"scopes": ["a", "b"], "example.com/team": ["x"]}}
    client, _ns = A.build_client({"kubeconfig": doc, "impersonate_user": "bob"}, environ={})  # like kubectl --as bob
    assert whoami(client)["username"] == "bob" and whoami(client)["groups"] == ["devs", "system:authenticated"]
    crt, key = sim.sim.issue_client_certificate("cert-admin", ["system:masters"])
    doc["users"][0]["user"] = {"client-certificate": crt, "client-key": key, "as": "jane"}
    client, _ns = A.build_client({"kubeconfig": doc}, environ={})
    assert whoami(client)["username"] == "jane"


def test_k8s_auth_env_false_reads_no_k8s_auth_variable(sim, tmp_path):
    other = tmp_path / "other"
    env = {"K8S_AUTH_HOST": "https://127.0.0.1:1", "K8S_AUTH_API_KEY": "job-token", "K8S_AUTH_VERIFY_SSL": "no",
           "K8S_AUTH_IMPERSONATE_USER": "job-user", "K8S_AUTH_KUBECONFIG": str(other), "K8S_AUTH_PROXY": "http://p:1"}
    auth = A.resolve_auth_params({"kubeconfig": sim.kubeconfig, "k8s_auth_env": False}, env)
    assert [k for k, v in auth.items() if v not in (None, False)] == ["kubeconfig"]
    client, _ns = A.build_client({"kubeconfig": sim.kubeconfig, "k8s_auth_env": False}, environ=env)
    assert whoami(client)["username"] == "admin"
    assert A.resolve_auth_params({"kubeconfig": sim.kubeconfig}, env)["api_key"] == "job-token"  # the default: kubernetes.core's


def test_proxies_from_the_environment_as_kubectl(tmp_path):
    doc = simple(cluster={"server": "https://api.example.invalid:6443"})
    client, _ns = A.build_client({"kubeconfig": doc}, environ={"HTTPS_PROXY": "http://proxy.example.invalid:3128"})
    assert client._pool.proxy.host == "proxy.example.invalid"
    client, _ns = A.build_client({"kubeconfig": doc}, environ={"HTTPS_PROXY": "http://proxy.example.invalid:3128",
                                                               "NO_PROXY": "example.invalid"})
    assert getattr(client._pool, "proxy", None) is None
    doc["clusters"][0]["cluster"]["proxy-url"] = "http://own.example.invalid:8080"
    client, _ns = A.build_client({"kubeconfig": doc}, environ={"HTTPS_PROXY": "http://proxy.example.invalid:3128"})
    assert client._pool.proxy.host == "own.example.invalid"


def test_a_kubeconfig_option_listing_files_merges_them_like_kubeconfig(tmp_path):
    first = write(tmp_path / "a", simple(namespace="from-a"))
    second = write(tmp_path / "b", {"contexts": [{"name": "other", "context": {"cluster": "c", "user": "u", "namespace": "b"}}]})
    _cfg, namespace = A.load_configuration(A.resolve_auth_params({"kubeconfig": f"{first}{os.pathsep}{second}",
                                                                 "context": "other"}, {}), {})
    assert namespace == "b"


def _pipe(a, b):
    with contextlib.suppress(OSError):
        while True:
            data = a.recv(65536)
            if not data:
                break
            b.sendall(data)
    for s in (a, b):
        with contextlib.suppress(OSError):
            s.shutdown(socket.SHUT_RDWR)


class _Socks5:
    """A minimal SOCKS5 proxy (no authentication, CONNECT only) that records the addresses asked for."""

    def __init__(self):
        self.asked = []
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self._stop = threading.Event()
        self._acceptor = threading.Thread(target=self._serve, daemon=True)
        self._acceptor.start()

    def _serve(self):
        with contextlib.suppress(OSError):
            while True:
                conn = self.sock.accept()[0]
                if self._stop.is_set():  # the connection close() makes to wake this thread
                    conn.close()
                    return
                threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn):
        conn.recv(conn.recv(2)[1])  # greeting: version, number of methods, the methods
        conn.sendall(b"\x05\x00")
        head = conn.recv(4)  # a name (type 3) is resolved here, on the proxy
        host = conn.recv(conn.recv(1)[0]).decode() if head[3] == 3 else socket.inet_ntoa(conn.recv(4))
        port = struct.unpack("!H", conn.recv(2))[0]
        self.asked.append((host, port))
        upstream = socket.create_connection((host, port))
        conn.sendall(b"\x05\x00\x00\x01" + socket.inet_aton("127.0.0.1") + struct.pack("!H", port))
        threading.Thread(target=_pipe, args=(conn, upstream), daemon=True).start()
        _pipe(upstream, conn)

    def close(self):
        # the accept thread ends before its socket is closed: a socket closed under a thread blocked on it can hand
        # that thread the next socket given the same descriptor (a later test's server)
        self._stop.set()
        with contextlib.suppress(OSError):
            socket.create_connection(("127.0.0.1", self.port), timeout=5).close()
        self._acceptor.join(10)
        self.sock.close()


def test_a_socks5_proxy_url_as_kubectl(sim):
    pytest.importorskip("socks", reason="SOCKS5 proxies need PySocks")
    proxy = _Socks5()
    try:
        doc = yaml.safe_load(Path(sim.kubeconfig).read_text())
        cluster = doc["clusters"][0]["cluster"]
        cluster["server"] = cluster["server"].replace("127.0.0.1", "localhost")  # the certificate is for both
        cluster["proxy-url"] = f"socks5://127.0.0.1:{proxy.port}"
        client, _ns = A.build_client({"kubeconfig": doc}, environ={})
        assert whoami(client)["username"] == "admin"
        assert proxy.asked and proxy.asked[0] == ("localhost", sim.sim.port)  # the name resolved by the proxy
    finally:
        proxy.close()
