"""The kubeconfig loader of module_utils/auth.py: pure parsing, real HTTPS, and no ``import kubernetes``."""

import base64
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
from ansible_collections.stacksync.k8s.plugins.module_utils import auth as A
from ansible_collections.stacksync.k8s.plugins.module_utils import kubeconfig as K
from ansible_collections.stacksync.k8s.plugins.module_utils import transport as T
from ansible_collections.stacksync.k8s.plugins.module_utils.client import ApiError

from tests.conftest import COLLECTIONS_ROOT

SECRET = "s3cr3t-T0KEN-value"


def b64(data):
    return base64.b64encode(data if isinstance(data, bytes) else data.encode()).decode()


def kubeconfig(clusters=(), users=(), contexts=(), current=None):
    doc = {"apiVersion": "v1", "kind": "Config",
           "clusters": [{"name": n, "cluster": c} for n, c in clusters],
           "users": [{"name": n, "user": u} for n, u in users],
           "contexts": [{"name": n, "context": c} for n, c in contexts]}
    if current:
        doc["current-context"] = current
    return doc


def simple(cluster=None, user=None, namespace=None):
    ctx = {"cluster": "c", "user": "u"}
    if namespace:
        ctx["namespace"] = namespace
    return kubeconfig([("c", cluster or {"server": "https://c.example:6443"})], [("u", {"token": SECRET} if user is None else user)],
                      [("ctx", ctx)], "ctx")


def parse(doc, context=None, path=None):
    return K.config_from_kubeconfig(K.merge_kubeconfigs([(path, doc)]), context)


def write(path, doc):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc))
    return path


# -- pure parsing ---------------------------------------------------------------------------------
def test_merge_first_file_wins_per_name_and_for_current_context(tmp_path):
    first = kubeconfig([("shared", {"server": "https://first"})], [("u1", {"token": "t1"})],
                       [("a", {"cluster": "shared", "user": "u1"})], "a")
    second = kubeconfig([("shared", {"server": "https://second"}), ("other", {"server": "https://other"})],
                        [("u1", {"token": "ignored"}), ("u2", {"token": "t2"})],
                        [("a", {"cluster": "other", "user": "u2"}), ("b", {"cluster": "other", "user": "u2"})], "b")
    merged = K.merge_kubeconfigs([(str(tmp_path / "one"), first), (str(tmp_path / "two"), second)])
    assert merged["current-context"] == "a"
    cfg = K.config_from_kubeconfig(merged)
    assert (cfg.host, cfg.token) == ("https://first", "t1")
    cfg = K.config_from_kubeconfig(merged, "b")
    assert (cfg.host, cfg.token) == ("https://other", "t2")


def test_current_context_comes_from_the_first_file_that_sets_it(tmp_path):
    without = kubeconfig([("c", {"server": "https://c"})], [("u", {"token": "t"})],
                         [("x", {"cluster": "c", "user": "u"}), ("y", {"cluster": "c", "user": "u", "namespace": "ny"})])
    later = kubeconfig(contexts=[], current="y")
    assert K.config_from_kubeconfig(K.merge_kubeconfigs([("/a", without), ("/b", later)])).namespace == "ny"


def test_kubeconfig_paths_option_then_env_list_then_default(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    env = {"KUBECONFIG": os.pathsep.join(["/one", "", "~/two"])}
    assert K.kubeconfig_paths(None, env) == ["/one", str(tmp_path / "two")]
    assert K.kubeconfig_paths("~/opt", env) == [str(tmp_path / "opt")]
    assert K.kubeconfig_paths(None, {}) == [str(tmp_path / ".kube" / "config")]


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


def test_relative_paths_resolve_against_the_file_that_holds_them(tmp_path):
    clusters = kubeconfig([("c", {"server": "https://c/", "certificate-authority": "pki/ca.crt"})],
                          contexts=[("ctx", {"cluster": "c", "user": "u"})], current="ctx")
    users = kubeconfig(users=[("u", {"client-certificate": "u.crt", "client-key": "/abs/u.key", "tokenFile": "tok"})])
    merged = K.merge_kubeconfigs([(str(tmp_path / "a" / "config"), clusters), (str(tmp_path / "b" / "users"), users)])
    cfg = K.config_from_kubeconfig(merged)
    assert cfg.host == "https://c"
    assert cfg.ca_file == str(tmp_path / "a" / "pki" / "ca.crt")
    assert cfg.cert_file == str(tmp_path / "b" / "u.crt") and cfg.key_file == "/abs/u.key"
    assert cfg.token_file == str(tmp_path / "b" / "tok")
    # a dict has no directory: paths stay as written (relative to the working directory)
    assert parse(clusters | {"users": users["users"]}).ca_file == "pki/ca.crt"


def test_data_wins_over_path_and_is_decoded():
    cfg = parse(simple(cluster={"server": "https://c", "certificate-authority": "/ca", "certificate-authority-data": b64("CA PEM")},
                       user={"client-certificate-data": b64("CERT"), "client-certificate": "/c", "client-key-data": b64("KEY")}))
    assert (cfg.ca_file, cfg.ca_data) == (None, b"CA PEM")
    assert (cfg.cert_file, cfg.cert_data, cfg.key_data) == (None, b"CERT", b"KEY")
    assert cfg.verify_ssl is True


def test_insecure_tls_server_name_and_proxy():
    cfg = parse(simple(cluster={"server": "https://10.0.0.1", "insecure-skip-tls-verify": True,
                                "tls-server-name": "api.internal", "proxy-url": "http://proxy:3128"}))
    assert cfg.verify_ssl is False and cfg.tls_server_name == "api.internal" and cfg.proxy == "http://proxy:3128"
    assert parse(simple(cluster={"server": "https://c", "insecure-skip-tls-verify": "false"})).verify_ssl is True


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


def test_username_password_give_basic_auth():
    cfg = parse(simple(user={"username": "admin", "password": SECRET}))
    assert K.static_authorization(cfg) == "Basic " + b64("admin:" + SECRET)
    assert K.static_authorization(parse(simple(user={}))) is None


@pytest.mark.parametrize("plugin", ["exec", "auth-provider"])
def test_credential_plugins_are_marked_for_the_kubernetes_package(plugin):
    cfg = parse(simple(user={plugin: {"command": "x", "apiVersion": "client.authentication.k8s.io/v1", "name": "oidc"}}))
    assert cfg.needs_kubernetes == plugin
    assert parse(simple()).needs_kubernetes is None


def test_options_override_the_kubeconfig():
    cfg = parse(simple(cluster={"server": "https://c", "certificate-authority-data": b64("CA"), "proxy-url": "http://p"},
                       user={"token": "kubeconfig-token", "client-certificate-data": b64("C")}))
    K.apply_auth_options(cfg, {"host": "https://opt/", "api_key": "opt-token", "validate_certs": False, "ca_cert": "/ca",
                               "client_cert": "/c", "proxy": "http://opt-proxy", "no_proxy": "x"})
    assert (cfg.host, cfg.token, cfg.verify_ssl, cfg.ca_file, cfg.ca_data) == ("https://opt", "opt-token", False, "/ca", None)
    assert (cfg.cert_file, cfg.cert_data, cfg.proxy, cfg.no_proxy) == ("/c", None, "http://opt-proxy", "x")
    cfg = K.apply_auth_options(parse(simple()), {"username": "me", "password": "pw"})
    assert K.static_authorization(cfg) == "Basic " + b64("me:pw")


def test_exec_user_loads_through_the_kubernetes_package_with_the_selected_context(tmp_path, monkeypatch):
    calls = []

    def fake(kubeconfig=None, context=None, persist_config=None, in_cluster=False):
        calls.append((kubeconfig, context, persist_config, in_cluster))
        return K.ClusterConfig("https://from-package")

    monkeypatch.setattr(A, "_kubernetes_config", fake)
    doc = simple(user={"exec": {"command": "x", "apiVersion": "client.authentication.k8s.io/v1"}}, namespace="ns")
    path = write(tmp_path / "config", doc)
    cfg, namespace = A.load_configuration(A.resolve_auth_params({"kubeconfig": str(path)}, {}), {})
    assert calls == [(str(path), "ctx", None, False)]
    assert (cfg.host, namespace) == ("https://from-package", "ns")


def test_in_cluster_first_only_without_kubeconfig_and_context(tmp_path, monkeypatch):
    calls = []

    def fake(kubeconfig=None, context=None, persist_config=None, in_cluster=False):
        calls.append(in_cluster)
        return K.ClusterConfig("https://in-cluster") if in_cluster else None

    monkeypatch.setattr(A, "_kubernetes_config", fake)
    monkeypatch.setattr(A, "_in_cluster", lambda environ: True)
    env = {"KUBECONFIG": str(write(tmp_path / "config", simple()))}
    assert A.load_configuration(A.resolve_auth_params({}, env), env)[0].host == "https://in-cluster"
    assert A.load_configuration(A.resolve_auth_params({"context": "ctx"}, env), env)[0].host == "https://c.example:6443"
    assert calls == [True]
    monkeypatch.setattr(A, "_kubernetes_config", lambda **kwargs: None)  # service account not usable: kubeconfig
    assert A.load_configuration(A.resolve_auth_params({}, env), env)[0].host == "https://c.example:6443"


def test_host_with_credentials_needs_no_kubeconfig():
    cfg, namespace = A.load_configuration(A.resolve_auth_params({"host": "https://h/", "api_key": "t"}, {}),
                                          {"KUBECONFIG": "/does/not/exist"})
    assert (cfg.host, K.static_authorization(cfg), namespace) == ("https://h", "Bearer t", None)


# -- real HTTPS against the simulator -------------------------------------------------------------
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


@pytest.mark.sim_only
def test_exec_plugin_runs_through_the_kubernetes_package_per_request(kubesim, tmp_path):
    pytest.importorskip("kubernetes")
    count = tmp_path / "count"
    plugin = tmp_path / "plugin.py"
    plugin.write_text(textwrap.dedent("""\
        import datetime, json, os, sys
        with open(sys.argv[1], "a") as f:
            f.write("x")
        soon = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(minutes=1)  # inside the 5 min skew
        status = {"token": os.environ["PLUGIN_TOKEN"], "expirationTimestamp": soon.strftime("%Y-%m-%dT%H:%M:%SZ")}
        print(json.dumps({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", "status": status}))
        """))
    doc = yaml.safe_load(Path(kubesim.kubeconfig).read_text())
    doc["users"][0]["user"] = {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": sys.executable,
                                        "args": [str(plugin), str(count)], "interactiveMode": "Never",
                                        "env": [{"name": "PLUGIN_TOKEN", "value": kubesim.token}]}}
    client, namespace = A.build_client({"kubeconfig": write(tmp_path / "kc", doc).as_posix()}, environ={})
    assert namespace == "default"
    client.get("/version")
    client.get("/version")
    assert len(count.read_text()) >= 3  # at load, then again for each request (the token is about to expire)


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


# -- no `import kubernetes` ---------------------------------------------------------------------
def test_module_utils_and_a_kubeconfig_load_do_not_import_kubernetes(tmp_path):
    path = write(tmp_path / "kc", simple(cluster={"server": "https://127.0.0.1:6443", "certificate-authority-data": b64(
        _ca(tmp_path, "ca").read_bytes())}, namespace="ns"))
    code = textwrap.dedent(f"""\
        import sys
        from ansible_collections.stacksync.k8s.plugins.modules import stack, stack_info  # noqa: F401
        from ansible_collections.stacksync.k8s.plugins.module_utils.auth import HAS_KUBERNETES, build_client
        client, namespace = build_client({{"kubeconfig": {str(path)!r}}}, environ={{}})
        assert namespace == "ns", namespace
        print(HAS_KUBERNETES, sorted(m for m in sys.modules if m.split(".")[0] == "kubernetes"))
        """)
    env = dict(os.environ, PYTHONPATH=str(COLLECTIONS_ROOT))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.split() == [str(importlib.util.find_spec("kubernetes") is not None), "[]"]
