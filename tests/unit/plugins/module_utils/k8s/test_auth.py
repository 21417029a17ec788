"""auth.py: module options, K8S_AUTH_* and kubeconfig files to a client; TLS and credential plugins end to end."""

import importlib.util
import json
import os
import ssl
import subprocess
import sys
import textwrap
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml
from ansible_collections.stacksync.k8s.plugins.module_utils.base.vocabulary import spoken
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s import auth as A
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s import kubeconfig as K
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s import transport as T
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.auth import resolve_auth_params
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.client import ApiError

from tests.conftest import COLLECTIONS_ROOT
from tests.unit.plugins.module_utils.k8s.test_kubeconfig import SECRET, b64, kubeconfig, parse, simple


def write(path, doc):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc))
    return path


def _openssl(cwd, *args):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _ca(d, name):
    _openssl(d, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", name + ".key", "-out", name + ".crt", "-days", "2", "-subj", "/CN=" + name)
    return d / (name + ".crt")


def _signed(d, ca, name, ext=None):
    _openssl(d, "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", name + ".key", "-out", name + ".csr", "-subj", "/CN=" + name)
    cmd = ["x509", "-req", "-in", name + ".csr", "-CA", ca + ".crt", "-CAkey", ca + ".key", "-CAcreateserial",
           "-out", name + ".crt", "-days", "2"]
    if ext:
        (d / (name + ".ext")).write_text(ext)
        cmd += ["-extfile", name + ".ext"]
    _openssl(d, *cmd)
    return d / (name + ".crt"), d / (name + ".key")


class _EchoClientCert(BaseHTTPRequestHandler):
    def do_GET(self):
        cert = self.connection.getpeercert() or {}
        subject = dict(x[0] for x in cert.get("subject", ()))
        body = json.dumps({"cn": subject.get("commonName"), "auth": self.headers.get("Authorization")}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def mtls_server(tmp_path):
    """An HTTPS server that requires a client certificate and echoes its CN: (url, ca path, client cert, client key)."""
    ca = _ca(tmp_path, "ca")
    server_crt, server_key = _signed(tmp_path, "ca", "server", "subjectAltName=IP:127.0.0.1\n")
    client_crt, client_key = _signed(tmp_path, "ca", "client-user")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(server_crt, server_key)
    context.load_verify_locations(ca)
    context.verify_mode = ssl.CERT_REQUIRED
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _EchoClientCert)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{httpd.server_address[1]}", ca, client_crt, client_key
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_read_skips_missing_and_empty_files_of_a_list(tmp_path):
    one = write(tmp_path / "one", simple())
    empty = tmp_path / "empty"
    empty.write_text("")
    docs = A.read_kubeconfigs([str(tmp_path / "missing"), str(empty), str(one)], explicit=False)
    assert [p for p, dummy in docs] == [str(one)]


def test_read_errors_name_the_file_never_the_content(tmp_path):
    with pytest.raises(A.AuthError, match=r"Kubeconfig file not found: .*/nope"):
        A.read_kubeconfigs([str(tmp_path / "nope")], explicit=True)
    with pytest.raises(A.AuthError, match="None of the kubeconfig files exist"):
        A.read_kubeconfigs([str(tmp_path / "a"), str(tmp_path / "b")], explicit=True)
    with pytest.raises(A.AuthError, match="No Kubernetes credentials found"):
        A.read_kubeconfigs([str(tmp_path / "a")], explicit=False)
    bad = tmp_path / "bad"
    bad.write_text(f"users:\n- name: u\n  user: {{token: {SECRET}\n  - : ]\n")
    with pytest.raises(A.AuthError, match="not valid YAML") as err:
        A.read_kubeconfigs([str(bad)], explicit=True)
    assert SECRET not in str(err.value)


def test_context_selection_and_namespace():
    doc = simple(namespace="team")
    doc["contexts"].append({"name": "other", "context": {"cluster": "c", "user": "u"}})
    assert parse(doc).namespace == "team"
    assert parse(doc, "other").namespace is None
    with pytest.raises(A.AuthError, match='Context "prod" not found in the kubeconfig dictionary \\(contexts: ctx, other\\)'):
        parse(doc, "prod")
    del doc["current-context"]
    with pytest.raises(A.AuthError, match="no current-context"):
        parse(doc)


@pytest.mark.parametrize("change, message", [
    (lambda d: d["clusters"].clear(), 'Cluster "c" of context "ctx" not found'),
    (lambda d: d["users"].clear(), 'User "u" of context "ctx" not found'),
    (lambda d: d["clusters"][0]["cluster"].pop("server"), 'Cluster "c" of context "ctx" has no server'),
    (lambda d: d["users"][0]["user"].update({"client-key-data": SECRET + "!"}), 'client-key-data of user "u" is not valid base64'),
])
def test_missing_pieces_give_errors_without_secrets(change, message):
    doc = simple()
    change(doc)
    with pytest.raises(A.AuthError, match=message) as err:
        parse(doc)
    assert SECRET not in str(err.value)


def test_token_file_wins_when_readable(tmp_path):
    (tmp_path / "tok").write_text("from-file\n")
    cfg = parse(simple(user={"token": SECRET, "tokenFile": "tok"}), path=str(tmp_path / "config"))
    A._read_token_file(cfg)
    assert K.static_authorization(cfg) == "Bearer from-file"
    cfg = parse(simple(user={"token": SECRET, "tokenFile": "missing"}), path=str(tmp_path / "config"))
    A._read_token_file(cfg)
    assert cfg.token == SECRET
    cfg = parse(simple(user={"tokenFile": "missing"}), path=str(tmp_path / "config"))
    with pytest.raises(A.AuthError, match=r"Could not read tokenFile .*/missing"):
        A._read_token_file(cfg)


def test_auth_provider_loads_through_the_kubernetes_package_with_the_selected_context(tmp_path, monkeypatch):
    calls = []

    def fake(cfg, kubeconfig, context, persist_config=None):
        calls.append((kubeconfig, context, persist_config))
        return lambda: "Bearer from-provider"

    monkeypatch.setattr(A.pkgauth, "provider_authorization", fake)
    doc = simple(user={"auth-provider": {"name": "oidc", "config": {}}}, namespace="ns")
    path = write(tmp_path / "config", doc)
    cfg, namespace = A.load_configuration(A.resolve_auth_params({"kubeconfig": str(path)}, {}), {})
    assert calls == [(str(path), "ctx", None)]
    assert (cfg.host, namespace, cfg.authorization()) == ("https://c.example:6443", "ns", "Bearer from-provider")


def test_in_cluster_first_only_without_kubeconfig_and_context(tmp_path, monkeypatch):
    calls = []

    def fake():
        calls.append(True)
        return K.ClusterConfig("https://in-cluster")

    monkeypatch.setattr(A.pkgauth, "in_cluster_config", fake)
    monkeypatch.setattr(A.pkgauth, "in_cluster", lambda environ: True)
    env = {"KUBECONFIG": str(write(tmp_path / "config", simple()))}
    assert A.load_configuration(A.resolve_auth_params({}, env), env)[0].host == "https://in-cluster"
    assert A.load_configuration(A.resolve_auth_params({"context": "ctx"}, env), env)[0].host == "https://c.example:6443"
    assert calls == [True]
    monkeypatch.setattr(A.pkgauth, "in_cluster_config", lambda: None)  # service account not usable: kubeconfig
    assert A.load_configuration(A.resolve_auth_params({}, env), env)[0].host == "https://c.example:6443"


def test_host_with_credentials_needs_no_kubeconfig():
    cfg, namespace = A.load_configuration(A.resolve_auth_params({"host": "https://h/", "api_key": "t"}, {}),
                                          {"KUBECONFIG": "/does/not/exist"})
    assert (cfg.host, K.static_authorization(cfg), namespace) == ("https://h", "Bearer t", None)


def test_ca_data_and_token_work_against_the_cluster(kube):
    doc = yaml.safe_load(Path(kube.kubeconfig).read_text())
    cluster = doc["clusters"][0]["cluster"]
    if kube.is_sim:  # what the simulator writes (a real cluster may use anything)
        assert cluster["server"].startswith("https://") and "certificate-authority-data" in cluster
        assert set(doc["users"][0]["user"]) == {"token"}
    client, namespace = A.build_client({"kubeconfig": kube.kubeconfig}, environ={})
    assert "gitVersion" in client.get("/version")
    assert namespace == doc["contexts"][0]["context"].get("namespace")
    assert isinstance(client.list("/api/v1/namespaces/default/configmaps"), list)


@pytest.mark.sim_only
def test_wrong_ca_data_is_rejected(kubesim, tmp_path):
    doc = yaml.safe_load(Path(kubesim.kubeconfig).read_text())
    doc["clusters"][0]["cluster"]["certificate-authority-data"] = b64(_ca(tmp_path, "wrong").read_bytes())
    client, _ns = A.build_client({"kubeconfig": doc}, environ={})
    with pytest.raises(ApiError) as err:
        client.get("/version")
    assert err.value.reason == "TLSError"
    assert ": its TLS certificate was rejected: " in str(err.value)
    assert str(err.value).endswith(
        " (check the cluster's CA certificate: ca_cert or the environment variable K8S_AUTH_SSL_CA_CERT, or "
        "certificate-authority in the kubeconfig)"), str(err.value)
    # said in the words of the run that reports it, wherever it was raised (a read ahead may fail before it speaks)
    with spoken({"ca_cert": "stacksync_ca_cert"}):
        assert "certificate: stacksync_ca_cert or the environment variable K8S_AUTH_SSL_CA_CERT, or" in str(err.value)


@pytest.mark.sim_only
def test_relative_ca_and_token_files_next_to_the_kubeconfig(kubesim, tmp_path, monkeypatch):
    d = tmp_path / "conf"
    d.mkdir()
    (d / "ca.crt").write_bytes(Path(kubesim.ca_cert).read_bytes())
    (d / "token").write_text(kubesim.token + "\n")
    path = write(d / "kubeconfig", kubeconfig([("c", {"server": kubesim.server, "certificate-authority": "ca.crt"})],
                                              [("u", {"tokenFile": "token"})], [("x", {"cluster": "c", "user": "u"})], "x"))
    monkeypatch.chdir(tmp_path)
    client, _ns = A.build_client({"kubeconfig": str(path)}, environ={})
    assert client.get("/api/v1/namespaces/default")["metadata"]["name"] == "default"


@pytest.mark.sim_only
@pytest.mark.parametrize("name, ok", [("localhost", True), ("other.example", False)])
def test_tls_server_name_is_the_name_checked(kubesim, name, ok):
    doc = yaml.safe_load(Path(kubesim.kubeconfig).read_text())
    doc["clusters"][0]["cluster"]["tls-server-name"] = name  # the server certificate is for 127.0.0.1 and localhost
    client, _ns = A.build_client({"kubeconfig": doc}, environ={})
    if ok:
        assert "gitVersion" in client.get("/version")
    else:
        with pytest.raises(ApiError, match="certificate"):
            client.get("/version")


def test_client_certificate_data_never_stays_on_disk(mtls_server, monkeypatch):
    url, ca, crt, key = mtls_server
    created = []
    real_mkstemp = T.tempfile.mkstemp

    def mkstemp(*args, **kwargs):
        fd, path = real_mkstemp(*args, **kwargs)
        created.append((path, os.stat(path).st_mode & 0o777))
        return fd, path

    monkeypatch.setattr(T.tempfile, "mkstemp", mkstemp)
    doc = simple(cluster={"server": url, "certificate-authority-data": b64(ca.read_bytes())},
                 user={"client-certificate-data": b64(crt.read_bytes()), "client-key-data": b64(key.read_bytes())})
    client, _ns = A.build_client({"kubeconfig": doc}, environ={})
    assert [mode for dummy_path, mode in created] == [0o600]
    assert not os.path.exists(created[0][0])
    assert client.get("/") == {"cn": "client-user", "auth": None}


def test_client_certificate_files(mtls_server, tmp_path):
    url, ca, crt, key = mtls_server
    path = write(tmp_path / "kc", simple(cluster={"server": url, "certificate-authority": str(ca)},
                                         user={"client-certificate": crt.name, "client-key": key.name}))
    client, _ns = A.build_client({"kubeconfig": str(path)}, environ={})
    assert client.get("/")["cn"] == "client-user"
    client, _ns = A.build_client({"kubeconfig": str(path), "validate_certs": False}, environ={})  # insecure still sends the cert
    assert client.get("/")["cn"] == "client-user"


def test_unreadable_tls_material_is_an_auth_error(tmp_path):
    doc = simple(cluster={"server": "https://127.0.0.1:1", "certificate-authority-data": b64("not a certificate")})
    with pytest.raises(A.AuthError, match="Could not load the TLS certificates"):
        A.build_client({"kubeconfig": doc}, environ={})


def test_module_utils_and_a_kubeconfig_load_do_not_import_kubernetes(tmp_path):
    path = write(tmp_path / "kc", simple(cluster={"server": "https://127.0.0.1:6443", "certificate-authority-data": b64(
        _ca(tmp_path, "ca").read_bytes())}, namespace="ns"))
    code = textwrap.dedent(f"""\
        import sys
        from ansible_collections.stacksync.k8s.plugins.modules import stack, stack_info  # noqa: F401
        from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.auth import HAS_KUBERNETES, build_client
        client, namespace = build_client({{"kubeconfig": {str(path)!r}}}, environ={{}})
        assert namespace == "ns", namespace
        print(HAS_KUBERNETES, sorted(m for m in sys.modules if m.split(".")[0] == "kubernetes"))
        """)
    env = dict(os.environ, PYTHONPATH=str(COLLECTIONS_ROOT))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.split() == [str(importlib.util.find_spec("kubernetes") is not None), "[]"]


def test_auth_env_precedence_like_kubernetes_core():
    env = {
        "K8S_AUTH_HOST": "https://env",
        "K8S_AUTH_VERIFY_SSL": "no",
        "K8S_AUTH_SSL_CA_CERT": "/ca",
        "K8S_AUTH_IMPERSONATE_GROUPS": "a,b",
        "K8S_AUTH_PROXY_HEADERS_USER_AGENT": "ua",
    }
    auth = resolve_auth_params({"host": "https://param"}, env)
    assert auth["host"] == "https://param" and auth["validate_certs"] is False and auth["ca_cert"] == "/ca"
    assert auth["impersonate_groups"] == ["a", "b"] and auth["proxy_headers"] == {"user_agent": "ua"}
    assert resolve_auth_params({}, {})["proxy_headers"] is None


def test_impersonation_extra_keys_are_escaped_as_client_go_does():
    headers = A.impersonation_headers({"user": "u", "groups": ["g"], "extra": {
        "acme.example/reason": ["ok"], "scopes ü%": ["a", "b"]}})
    assert headers == [("Impersonate-User", "u"), ("Impersonate-Group", "g"),
                       ("Impersonate-Extra-acme.example%2Freason", "ok"),
                       # a space, a non-ASCII letter (its UTF-8 bytes) and the escape character itself
                       ("Impersonate-Extra-scopes%20%C3%BC%25", "a"), ("Impersonate-Extra-scopes%20%C3%BC%25", "b")]
