"""The collection's kubeconfig loader and HTTP client against kubectl, on the same kubeconfig files and the
same server (the simulator, or a real one with STACKSYNC_TEST_KUBECONFIG): each acts as the same identity
(``SelfSubjectReview``, what ``kubectl auth whoami`` asks), or both refuse, for the same reason.

Covers token users, client-certificate users, exec plugin users (a token or a certificate), impersonation in
the user entry (``as``, ``as-uid``, ``as-groups``, ``as-user-extra``) for each, credential plugins that fail,
the kubeconfigs kubectl refuses as contradictory, and what kubectl accepts although it looks odd (a token and
a ``tokenFile``, a token beside an exec plugin, a certificate beside a token). Each case runs in its own
directory, with relative paths, from another working directory.
"""

import base64
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import yaml
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.auth import AuthError, build_client
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.client import ApiError

from .helpers import poll, unique

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")

V1 = "client.authentication.k8s.io/v1"
RBAC = "/apis/rbac.authorization.k8s.io/v1"
CSR = "/apis/certificates.k8s.io/v1/certificatesigningrequests"


# -- identities on the server ----------------------------------------------------------------------
def client_certificate(kube, directory, user, groups):
    """``(cert PEM, key PEM)`` of a client certificate the cluster authenticates as ``user`` in ``groups``: a
    CertificateSigningRequest approved and signed on a real server, the simulator's CA otherwise."""
    if kube.is_sim:
        crt, key = kube.sim.issue_client_certificate(user, groups)
        return Path(crt).read_text(), Path(key).read_text()
    subject = "/CN=" + user + "".join("/O=" + g for g in groups)
    subprocess.run(["openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", "c.key",
                    "-out", "c.csr", "-subj", subject], cwd=directory, check=True, capture_output=True)
    name = unique("conf-csr")
    body = {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest", "metadata": {"name": name},
            "spec": {"request": base64.b64encode((directory / "c.csr").read_bytes()).decode(), "usages": ["client auth"],
                     "signerName": "kubernetes.io/kube-apiserver-client", "expirationSeconds": 3600}}
    status, created, _ = kube.http.request("POST", CSR, body)
    assert status == 201, created
    created["status"] = {"conditions": [{"type": "Approved", "status": "True", "reason": "Conformance", "message": "test"}]}
    assert kube.http.request("PUT", f"{CSR}/{name}/approval", created)[0] == 200
    cert = poll(lambda: (kube.http.get(f"{CSR}/{name}")[1].get("status") or {}).get("certificate"))
    kube.http.request("DELETE", f"{CSR}/{name}")
    assert cert, "the CSR was not signed"
    return base64.b64decode(cert).decode(), (directory / "c.key").read_text()


def grant_impersonation(kube, name):
    """Let users ``limited`` and ``conf-cert-user`` impersonate user ``jane`` and group ``devs`` (nothing else;
    a real server signs no certificate for group ``system:masters``)."""
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name},
            "rules": [{"apiGroups": [""], "resources": ["users"], "verbs": ["impersonate"], "resourceNames": ["jane"]},
                      {"apiGroups": [""], "resources": ["groups"], "verbs": ["impersonate"], "resourceNames": ["devs"]}]}
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": name},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user} for user in ("limited", "conf-cert-user")]}
    assert kube.http.request("POST", f"{RBAC}/clusterroles", role)[0] == 201
    assert kube.http.request("POST", f"{RBAC}/clusterrolebindings", binding)[0] == 201


# -- the kubeconfig files --------------------------------------------------------------------------
def plugin(directory, name, status=None, version=V1, kind="ExecCredential", exit_code=0):
    """An exec plugin script next to the kubeconfig, printing an ExecCredential (or failing)."""
    answer = json.dumps({"apiVersion": version, "kind": kind, "status": status or {}})
    path = directory / name
    path.write_text(f"#!{sys.executable}\n" + textwrap.dedent(f"""\
        import sys
        if {exit_code}:
            sys.stderr.write("plugin says no: login expired\\n")
            sys.exit({exit_code})
        print({answer!r})
        """))
    path.chmod(0o755)
    return "./" + name  # relative: kubectl resolves it against the kubeconfig's directory


class Files:
    """One directory per case under ``root``, each with a ``kubeconfig`` (a copy of the cluster's admin kubeconfig
    with its own user entry) and whatever files that entry names."""

    def __init__(self, kube, root):
        self.kube, self.root = kube, root
        self.doc = yaml.safe_load(Path(kube.kubeconfig).read_text())
        self.limited_token = yaml.safe_load(Path(kube.limited_kubeconfig).read_text())["users"][0]["user"]["token"]
        self.cluster = self.doc["clusters"][0]["cluster"]

    def write(self, case, user, cluster=None):
        d = self.dir(case)
        doc = json.loads(json.dumps(self.doc))
        doc["users"] = [{"name": "u", "user": user}]
        for c in doc["contexts"]:
            c["context"]["user"] = "u"
        if cluster is not None:
            doc["clusters"][0]["cluster"] = cluster
        (d / "kubeconfig").write_text(yaml.safe_dump(doc))
        return str(d / "kubeconfig")

    def dir(self, case):
        d = self.root / case
        d.mkdir(exist_ok=True)
        return d


def build_files(kube, root):
    f = Files(kube, root)
    admin, limited = f.doc["users"][0]["user"]["token"], f.limited_token
    crt, key = client_certificate(kube, f.dir("cert"), "conf-cert-user", ["team-a", "team-b"])
    for case in ("cert", "cert-as", "cert-bad-token", "exec-cert"):
        (f.dir(case) / "u.crt").write_text(crt)
        (f.dir(case) / "u.key").write_text(key)
    imp = {"as": "jane", "as-uid": "u-1", "as-groups": ["devs", "ops"], "as-user-extra": {"scopes": ["a", "b"], "example.com/team": ["x"]}}
    ok = {"token": {"token": admin}, "limited": {"token": limited},
          "cert": {"client-certificate": "u.crt", "client-key": "u.key"},
          "cert-data": {"client-certificate-data": base64.b64encode(crt.encode()).decode(),
                        "client-key-data": base64.b64encode(key.encode()).decode()},
          "token-as": dict({"token": admin}, **imp), "token-as-sa": {"token": admin, "as": "system:serviceaccount:conf:deployer"},
          "cert-as": {"client-certificate": "u.crt", "client-key": "u.key", "as": "jane", "as-groups": ["devs"]},
          "limited-as-allowed": {"token": limited, "as": "jane", "as-groups": ["devs"]},
          "cert-bad-token": {"client-certificate": "u.crt", "client-key": "u.key", "token": "not-a-valid-token"}}
    paths = dict((case, f.write(case, user)) for case, user in ok.items())
    for case, version in (("exec-v1", V1), ("exec-v1beta1", "client.authentication.k8s.io/v1beta1")):
        command = plugin(f.dir(case), "plugin.py", {"token": admin}, version)
        paths[case] = f.write(case, {"exec": {"apiVersion": version, "command": command, "interactiveMode": "Never"}})
    command = plugin(f.dir("exec-as"), "plugin.py", {"token": admin})
    paths["exec-as"] = f.write("exec-as", dict({"exec": {"apiVersion": V1, "command": command, "interactiveMode": "Never"}}, **imp))
    command = plugin(f.dir("exec-cert"), "plugin.py", {"clientCertificateData": crt, "clientKeyData": key})
    paths["exec-cert"] = f.write("exec-cert", {"exec": {"apiVersion": V1, "command": command, "interactiveMode": "Never"}})
    command = plugin(f.dir("token-beside-exec"), "plugin.py", exit_code=3)
    paths["token-beside-exec"] = f.write("token-beside-exec", {"token": admin, "exec": {
        "apiVersion": V1, "command": command, "interactiveMode": "Never"}})
    (f.dir("token-file") / "token").write_text(limited + "\n")
    paths["token-file"] = f.write("token-file", {"token": admin, "tokenFile": "token"})  # the file wins
    ca = base64.b64decode(f.cluster["certificate-authority-data"]) if f.cluster.get("certificate-authority-data") else None
    if ca:
        (f.dir("ca-file") / "ca.crt").write_bytes(ca)
        paths["ca-file"] = f.write("ca-file", {"token": admin}, {"server": f.cluster["server"], "certificate-authority": "ca.crt"})
    f.dir("insecure")
    paths["insecure"] = f.write("insecure", {"token": admin}, {"server": f.cluster["server"], "insecure-skip-tls-verify": True})
    return f, paths


def failing_files(f):
    """Kubeconfigs both must refuse: ``{case: (path, what kubectl and the collection both say)}``."""
    admin = f.doc["users"][0]["user"]["token"]
    out = {}
    for case, plugin_kw, words in (
            ("exec-exit", {"exit_code": 3}, "getting credentials: exec: executable {dir}/plugin.py failed with exit code 3"),
            ("exec-wrong-version", {"status": {"token": admin}, "version": "client.authentication.k8s.io/v1beta1"},
             "getting credentials: exec plugin is configured to use API version client.authentication.k8s.io/v1, "
             "plugin returned version client.authentication.k8s.io/v1beta1"),
            ("exec-wrong-kind", {"status": {"token": admin}, "kind": "Foo"},
             'getting credentials: decoding stdout: no kind "Foo" is registered for version "client.authentication.k8s.io/v1"'),
            ("exec-no-credentials", {}, "getting credentials: exec plugin didn't return a token or cert/key pair")):
        command = plugin(f.dir(case), "plugin.py", **plugin_kw)
        out[case] = (f.write(case, {"exec": {"apiVersion": V1, "command": command, "interactiveMode": "Never"}}),
                     words.format(dir=f.root / case))
    f.dir("exec-missing")
    out["exec-missing"] = (f.write("exec-missing", {"exec": {"apiVersion": V1, "command": "stacksync-conformance-no-such-plugin",
                                                             "interactiveMode": "Never", "installHint": "Install it from the wiki."}}),
                           "getting credentials: exec: executable stacksync-conformance-no-such-plugin not found")
    f.dir("exec-bad-api")
    out["exec-bad-api"] = (f.write("exec-bad-api", {"exec": {"apiVersion": "client.authentication.k8s.io/v9", "command": "x",
                                                             "interactiveMode": "Never"}}),
                           'exec plugin: invalid apiVersion "client.authentication.k8s.io/v9"')
    server = f.cluster["server"]
    ca_data = f.cluster.get("certificate-authority-data") or base64.b64encode(b"-----BEGIN CERTIFICATE-----").decode()
    contradictions = {
        "insecure-with-ca": ({"token": admin}, {"server": server, "insecure-skip-tls-verify": True, "certificate-authority-data": ca_data},
                             "specifying a root certificates file with the insecure flag is not allowed"),
        "ca-and-ca-data": ({"token": admin}, {"server": server, "certificate-authority": "ca.crt", "certificate-authority-data": ca_data},
                           "certificate-authority-data and certificate-authority are both specified for {cluster}. "
                           "certificate-authority-data will override."),
        "cert-and-cert-data": ({"client-certificate": "u.crt", "client-certificate-data": "QUJD", "client-key-data": "QUJD"}, None,
                               "client-cert-data and client-cert are both specified for u. client-cert-data will override."),
        "key-and-key-data": ({"client-certificate-data": "QUJD", "client-key": "u.key", "client-key-data": "QUJD"}, None,
                             "client-key-data and client-key are both specified for u; client-key-data will override"),
        "cert-without-key": ({"client-certificate-data": "QUJD"}, None,
                             "client-key-data or client-key must be specified for u to use the clientCert authentication method."),
        "token-and-basic": ({"token": admin, "username": "a", "password": "b"}, None,
                            "more than one authentication method found for u; found [token basicAuth], only one is allowed"),
        "groups-without-user": ({"token": admin, "as-groups": ["devs"]}, None,
                                "requesting uid, groups or user-extra for u without impersonating a user"),
        "exec-and-provider": ({"exec": {"apiVersion": V1, "command": "x", "interactiveMode": "Never"}, "auth-provider": {"name": "oidc"}},
                              None, "authProvider cannot be provided in combination with an exec plugin for u"),
        "exec-without-mode": ({"exec": {"apiVersion": V1, "command": "x"}}, None,
                              "interactiveMode must be specified for u to use exec authentication plugin"),
        "bad-proxy-scheme": ({"token": admin}, {"server": server, "certificate-authority-data": ca_data, "proxy-url": "ftp://127.0.0.1:1"},
                             "invalid 'proxy-url' \"ftp://127.0.0.1:1\" for cluster \"{cluster}\": unsupported scheme \"ftp\", "
                             "must be http, https, or socks5"),
    }
    for case, (user, cluster, words) in contradictions.items():
        d = f.dir(case)
        for name in ("u.crt", "u.key", "ca.crt"):
            (d / name).write_text("placeholder\n")
        out[case] = (f.write(case, user, cluster), words.format(cluster=f.doc["clusters"][0]["name"]))
    return out


@pytest.fixture(scope="module")
def files(kube, tmp_path_factory):
    root = tmp_path_factory.mktemp("kubeconfigs")
    name = unique("conf-impersonate")
    grant_impersonation(kube, name)
    try:
        f, paths = build_files(kube, root)
        # RBAC caches of a real server catch up
        poll(lambda: kubectl_whoami(paths["limited-as-allowed"], root)[0], timeout=15)
        yield f, paths, failing_files(f)
    finally:
        kube.http.request("DELETE", f"{RBAC}/clusterrolebindings/{name}")
        kube.http.request("DELETE", f"{RBAC}/clusterroles/{name}")


# -- kubectl and the collection ----------------------------------------------------------------------
def _env(home):
    env = {k: v for k, v in os.environ.items() if not k.startswith("K8S_AUTH_") and k not in ("KUBECONFIG", "HTTPS_PROXY", "https_proxy")}
    return dict(env, HOME=str(home), KUBECACHEDIR=str(home / "cache"))


def kubectl_whoami(path, home):
    """``(True, userInfo)`` or ``(False, kubectl's error output)``; run from another working directory."""
    proc = subprocess.run(["kubectl", "--kubeconfig", path, "auth", "whoami", "-o", "json"], capture_output=True, text=True,
                          env=_env(home), cwd=str(home), timeout=60, stdin=subprocess.DEVNULL)
    if proc.returncode:
        return False, proc.stderr
    return True, json.loads(proc.stdout)["status"]["userInfo"]


def collection_whoami(path, home):
    """``(True, userInfo)`` or ``(False, the collection's error)``, through its loader and client."""
    cwd = os.getcwd()
    os.chdir(home)
    try:
        client, _namespace = build_client({"kubeconfig": path}, environ=_env(home))
        body = client.create("/apis/authentication.k8s.io/v1/selfsubjectreviews",
                             {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
        return True, body["status"]["userInfo"]
    except (AuthError, ApiError) as e:
        return False, str(e)
    finally:
        os.chdir(cwd)


SAME = ["token", "limited", "cert", "cert-data", "token-as", "token-as-sa", "cert-as", "limited-as-allowed", "cert-bad-token",
        "exec-v1", "exec-v1beta1", "exec-as", "exec-cert", "token-beside-exec", "token-file", "ca-file", "insecure"]


@pytest.mark.parametrize("case", SAME)
def test_kubectl_and_the_collection_act_as_the_same_identity(files, case, tmp_path):
    _f, paths, _failing = files
    if case not in paths:
        pytest.skip("the cluster's kubeconfig has no certificate-authority-data")
    theirs = kubectl_whoami(paths[case], tmp_path)
    ours = collection_whoami(paths[case], tmp_path)
    assert theirs[0], theirs[1]
    assert ours == theirs


def test_what_the_identities_are(files, tmp_path):
    """The cases above mean something: impersonation is in effect, a certificate wins over a token, tokenFile wins."""
    _f, paths, _failing = files
    who = dict((case, collection_whoami(paths[case], tmp_path)[1]) for case in
               ("limited", "token-as", "token-as-sa", "cert", "cert-as", "cert-bad-token", "limited-as-allowed", "exec-as", "token-file"))
    assert who["token-as"]["username"] == "jane" and who["token-as"]["uid"] == "u-1"
    assert who["token-as"]["groups"] == ["devs", "ops", "system:authenticated"]
    assert who["token-as"]["extra"] == {"scopes": ["a", "b"], "example.com/team": ["x"]}
    assert who["token-as-sa"]["groups"] == ["system:serviceaccounts", "system:serviceaccounts:conf", "system:authenticated"]
    assert who["cert"]["username"] == "conf-cert-user" and who["cert"]["groups"] == ["team-a", "team-b", "system:authenticated"]
    assert who["cert-bad-token"] == who["cert"]
    assert who["cert-as"]["username"] == who["limited-as-allowed"]["username"] == who["exec-as"]["username"] == "jane"
    assert who["token-file"] == who["limited"]


REFUSED_BY_SERVER = [
    ("limited-as-other", {"as": "bob"}, 'users \\"bob\\" is forbidden: User \\"limited\\" cannot impersonate resource \\"users\\"'),
    ("limited-as-uid", {"as": "jane", "as-uid": "u-1"},
     'uids.authentication.k8s.io \\"u-1\\" is forbidden: User \\"limited\\" cannot impersonate resource \\"uids\\"'),
    ("limited-as-extra", {"as": "jane", "as-user-extra": {"scopes": ["a"]}},
     'userextras.authentication.k8s.io \\"a\\" is forbidden: User \\"limited\\" cannot impersonate resource \\"userextras/scopes\\"'),
]


@pytest.mark.parametrize("case, imp, refusal", REFUSED_BY_SERVER, ids=[c[0] for c in REFUSED_BY_SERVER])
def test_impersonation_the_server_refuses_is_refused_to_both(files, case, imp, refusal, tmp_path):
    f, _paths, _failing = files
    f.dir(case)
    path = f.write(case, dict({"token": f.limited_token}, **imp))
    theirs = kubectl_whoami(path, tmp_path)
    ours = collection_whoami(path, tmp_path)
    assert not theirs[0] and not ours[0], (theirs, ours)
    assert refusal.replace('\\"', '"') in ours[1], ours[1]
    # kubectl auth whoami words any refusal alike; its request's answer (-v=6 and above) is the same Status
    proc = subprocess.run(["kubectl", "--kubeconfig", path, "get", "--raw", "/api"], capture_output=True, text=True,
                          env=_env(tmp_path), timeout=60, stdin=subprocess.DEVNULL)
    assert refusal.replace('\\"', '"') in proc.stderr, proc.stderr


FAILING = ["exec-exit", "exec-wrong-version", "exec-wrong-kind", "exec-no-credentials", "exec-missing", "exec-bad-api",
           "insecure-with-ca", "ca-and-ca-data", "cert-and-cert-data", "key-and-key-data", "cert-without-key", "token-and-basic",
           "groups-without-user", "exec-and-provider", "exec-without-mode", "bad-proxy-scheme"]


@pytest.mark.parametrize("case", FAILING)
def test_kubeconfigs_kubectl_refuses_are_refused_with_its_reason(files, case, tmp_path):
    _f, _paths, failing = files
    path, words = failing[case]
    theirs = kubectl_whoami(path, tmp_path)
    ours = collection_whoami(path, tmp_path)
    assert not theirs[0], f"kubectl accepted {case}"
    assert not ours[0], f"the collection accepted {case}: {ours[1]}"
    assert words in theirs[1], theirs[1]
    assert words in ours[1], ours[1]
    if case == "exec-missing":
        assert "Install it from the wiki." in theirs[1] and "Install it from the wiki." in ours[1]
    if case == "exec-exit":
        assert "plugin says no: login expired" in ours[1]  # kubectl lets it through to its own stderr


def test_a_failing_plugin_sends_nothing(files, kubesim_factory, tmp_path):
    """Before any request: the simulator behind the same failing kubeconfigs receives nothing from either."""
    _f, _paths, failing = files
    sim = kubesim_factory(tls=True)
    for case in ("exec-exit", "exec-wrong-version", "exec-no-credentials", "exec-missing"):
        doc = yaml.safe_load(Path(failing[case][0]).read_text())
        doc["clusters"][0]["cluster"] = {"server": sim.server,
                                         "certificate-authority-data": base64.b64encode(Path(sim.ca_cert).read_bytes()).decode()}
        path = Path(failing[case][0]).with_name("kubeconfig-sim")
        path.write_text(yaml.safe_dump(doc))
        sim.sim.reset_counters()
        assert not collection_whoami(str(path), tmp_path)[0]
        assert [r["path"] for r in sim.sim.requests] == [], case
        started = time.monotonic()
        assert not kubectl_whoami(str(path), tmp_path)[0]
        assert time.monotonic() - started < 30
