"""kubeconfig.py: kubeconfig semantics (merging, contexts, relative paths, data over files, options)."""

import base64
import os

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils import kubeconfig as K

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
