"""kubeconfig.py: kubeconfig semantics (merging, contexts, relative paths, data over files, options)."""

import base64
import os

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s import kubeconfig as K

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


def test_data_is_decoded():
    cfg = parse(simple(cluster={"server": "https://c", "certificate-authority-data": b64("CA PEM")},
                       user={"client-certificate-data": b64("CERT"), "client-key-data": b64("KEY")}))
    assert (cfg.ca_file, cfg.ca_data) == (None, b"CA PEM")
    assert (cfg.cert_file, cfg.cert_data, cfg.key_data) == (None, b"CERT", b"KEY")
    assert cfg.verify_ssl is True


#: kubeconfigs kubectl 1.32 refuses, and its words (``kubectl auth whoami`` against kube-apiserver v1.36)
REFUSED = [
    ({"certificate-authority": "/ca", "certificate-authority-data": b64("CA")}, None,
     "certificate-authority-data and certificate-authority are both specified for c. certificate-authority-data will override."),
    ({"insecure-skip-tls-verify": True, "certificate-authority-data": b64("CA")}, None,
     "specifying a root certificates file with the insecure flag is not allowed"),
    ({"insecure-skip-tls-verify": "true", "certificate-authority": "/ca"}, None,
     "specifying a root certificates file with the insecure flag is not allowed"),
    ({"proxy-url": "ftp://127.0.0.1:1"}, None,
     "invalid 'proxy-url' \"ftp://127.0.0.1:1\" for cluster \"c\": unsupported scheme \"ftp\", must be http, https, or socks5"),
    (None, {"client-certificate": "/c", "client-certificate-data": b64("C"), "client-key-data": b64("K")},
     "client-cert-data and client-cert are both specified for u. client-cert-data will override."),
    (None, {"client-certificate-data": b64("C"), "client-key": "/k", "client-key-data": b64("K")},
     "client-key-data and client-key are both specified for u; client-key-data will override"),
    (None, {"client-certificate-data": b64("C")},
     "client-key-data or client-key must be specified for u to use the clientCert authentication method."),
    (None, {"token": SECRET, "username": "a", "password": "b"},
     "more than one authentication method found for u; found [token basicAuth], only one is allowed"),
    (None, {"token": SECRET, "as-groups": ["devs"]},
     "requesting uid, groups or user-extra for u without impersonating a user"),
    (None, {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "p", "interactiveMode": "Never"},
            "auth-provider": {"name": "oidc"}},
     "authProvider cannot be provided in combination with an exec plugin for u"),
    (None, {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "p"}},
     "interactiveMode must be specified for u to use exec authentication plugin"),
    (None, {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": "p", "interactiveMode": "Sometimes"}},
     'invalid interactiveMode for u: "Sometimes"'),
    (None, {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1"}},
     "command must be specified for u to use exec authentication plugin"),
    (None, {"exec": {"command": "p", "interactiveMode": "Never"}},
     "apiVersion must be specified for u to use exec authentication plugin"),
    (None, {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": "p", "env": [{"value": "x"}]}},
     "env variable name must be specified for u to use exec authentication plugin"),
]


@pytest.mark.parametrize("cluster, user, reason", REFUSED)
def test_contradictory_kubeconfigs_are_refused_with_kubectls_reason(cluster, user, reason):
    doc = simple(cluster=dict({"server": "https://c"}, **(cluster or {})), user=user)
    with pytest.raises(K.AuthError) as err:
        parse(doc)
    assert str(err.value) == f'Invalid kubeconfig the kubeconfig dictionary (context "ctx"): {reason} (kubectl refuses it too)'
    assert SECRET not in str(err.value)


@pytest.mark.parametrize("cluster, user", [
    ({"insecure-skip-tls-verify": True}, None),  # insecure without a CA
    ({"proxy-url": "socks5://127.0.0.1:1080"}, None),
    ({"proxy-url": "https://proxy:3128"}, None),
    (None, {"token": SECRET, "tokenFile": "/t"}),  # tokenFile wins, kubectl accepts both
    (None, {"token": SECRET, "client-certificate-data": b64("C"), "client-key-data": b64("K")}),
    (None, {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": "p"}}),  # IfAvailable by default
    (None, {"token": SECRET, "as": "jane", "as-groups": ["g"]}),
])
def test_what_kubectl_accepts_is_accepted(cluster, user):
    parse(simple(cluster=dict({"server": "https://c"}, **(cluster or {})), user=user))


def test_only_the_context_in_use_is_checked():
    doc = simple()
    doc["users"].append({"name": "broken", "user": {"token": "t", "username": "u"}})
    doc["clusters"].append({"name": "broken", "cluster": {"server": "https://b", "insecure-skip-tls-verify": True,
                                                          "certificate-authority-data": b64("CA")}})
    doc["contexts"].append({"name": "other", "context": {"cluster": "broken", "user": "broken"}})
    assert parse(doc).token == SECRET
    with pytest.raises(K.AuthError, match=r"insecure flag.*more than one authentication method"):
        parse(doc, "other")


def test_impersonation_in_the_user_entry_and_options_override_it_as_kubectl_flags_do():
    user = {"token": SECRET, "as": "jane", "as-uid": "u-1", "as-groups": ["devs", "ops"],
            "as-user-extra": {"scopes": ["a", "b"], "reason": "x"}}
    cfg = parse(simple(user=user))
    assert K.impersonation(cfg) == {"user": "jane", "uid": "u-1", "groups": ["devs", "ops"],
                                    "extra": {"scopes": ["a", "b"], "reason": ["x"]}}
    # kubectl --as bob keeps the kubeconfig's uid, groups and extra; --as-group replaces the groups only
    assert K.impersonation(cfg, "bob")["user"] == "bob" and K.impersonation(cfg, "bob")["groups"] == ["devs", "ops"]
    assert K.impersonation(cfg, None, ["g1"]) == dict(K.impersonation(cfg), groups=["g1"])
    assert K.impersonation(parse(simple())) is None
    assert K.impersonation(parse(simple()), "sa") == {"user": "sa", "uid": None, "groups": [], "extra": {}}
    with pytest.raises(K.AuthError, match='requesting uid, groups or user-extra for u without impersonating a user'):
        K.impersonation(parse(simple()), None, ["g1"])


def test_exec_plugin_entry_resolves_a_relative_command_against_its_file(tmp_path):
    plugin = {"apiVersion": "client.authentication.k8s.io/v1", "interactiveMode": "Never", "provideClusterInfo": True}
    doc = simple(cluster={"server": "https://c", "certificate-authority-data": b64("CA"), "tls-server-name": "api"},
                 user={"exec": dict(plugin, command="bin/plugin")})
    cfg = parse(doc, path=str(tmp_path / "config"))
    assert cfg.exec["command"] == str(tmp_path / "bin" / "plugin") and cfg.exec["user"] == "u"
    assert cfg.exec["cluster"]["ca_data"] == b"CA" and cfg.exec["cluster"]["tls_server_name"] == "api"
    doc["users"][0]["user"]["exec"]["command"] = "plugin-on-path"  # no separator: looked up on PATH
    assert parse(doc, path=str(tmp_path / "config")).exec["command"] == "plugin-on-path"


def test_insecure_tls_server_name_and_proxy():
    cfg = parse(simple(cluster={"server": "https://10.0.0.1", "insecure-skip-tls-verify": True,
                                "tls-server-name": "api.internal", "proxy-url": "http://proxy:3128"}))
    assert cfg.verify_ssl is False and cfg.tls_server_name == "api.internal" and cfg.proxy == "http://proxy:3128"
    assert parse(simple(cluster={"server": "https://c", "insecure-skip-tls-verify": "false"})).verify_ssl is True


def test_username_password_give_basic_auth():
    cfg = parse(simple(user={"username": "admin", "password": SECRET}))
    assert K.static_authorization(cfg) == "Basic " + b64("admin:" + SECRET)
    assert K.static_authorization(parse(simple(user={}))) is None


def test_credential_plugins_are_kept_for_auth():
    plugin = {"command": "x", "apiVersion": "client.authentication.k8s.io/v1", "interactiveMode": "Never"}
    assert parse(simple(user={"exec": plugin})).exec["command"] == "x"
    assert parse(simple(user={"auth-provider": {"name": "oidc"}})).auth_provider == {"name": "oidc"}
    cfg = parse(simple())
    assert (cfg.exec, cfg.auth_provider, K.has_static_credentials(cfg)) == (None, None, True)


def test_options_override_the_kubeconfig():
    cfg = parse(simple(cluster={"server": "https://c", "certificate-authority-data": b64("CA"), "proxy-url": "http://p"},
                       user={"token": "kubeconfig-token", "client-certificate-data": b64("C"), "client-key-data": b64("K")}))
    K.apply_auth_options(cfg, {"host": "https://opt/", "api_key": "opt-token", "validate_certs": False, "ca_cert": "/ca",
                               "client_cert": "/c", "proxy": "http://opt-proxy", "no_proxy": "x"})
    assert (cfg.host, cfg.token, cfg.verify_ssl, cfg.ca_file, cfg.ca_data) == ("https://opt", "opt-token", False, "/ca", None)
    assert (cfg.cert_file, cfg.cert_data, cfg.proxy, cfg.no_proxy) == ("/c", None, "http://opt-proxy", "x")
    cfg = K.apply_auth_options(parse(simple()), {"username": "me", "password": "pw"})
    assert K.static_authorization(cfg) == "Basic " + b64("me:pw")
