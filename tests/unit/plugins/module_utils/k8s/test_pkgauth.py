"""pkgauth.py: auth-providers refused in kubectl's words, or failing without a token, before any request."""

import os
from pathlib import Path

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s import pkgauth as P
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.kubeconfig import AuthError, ClusterConfig

from tests.unit.plugins.module_utils.k8s.test_kubeconfig import simple


@pytest.mark.parametrize("provider, reason", [
    ({"name": "azure", "config": {}}, P.AZURE_REMOVED),
    ({"name": "foo"}, 'no Auth Provider found for name "foo"'),
    ({}, 'no Auth Provider found for name ""'),
    ({"name": "oidc", "config": {"client-id": "x"}}, "Must provide idp-issuer-url"),
    ({"name": "oidc", "config": {"idp-issuer-url": "https://idp"}}, "Must provide client-id"),
    ({"name": "oidc", "config": {"idp-issuer-url": "https://idp", "client-id": "x"}}, None),
    ({"name": "gcp"}, None),
])
def test_providers_kubectl_refuses(provider, reason):
    assert P.provider_problem(provider) == reason


def _user(provider):
    cfg = ClusterConfig("https://c")
    cfg.user_name, cfg.auth_provider = "u", provider
    return cfg


def test_a_refused_provider_fails_naming_the_user():
    with pytest.raises(AuthError, match=r'^kubeconfig user "u": no Auth Provider found for name "foo"$'):
        P.provider_authorization(_user({"name": "foo"}), {}, "ctx")


def test_an_oidc_provider_without_a_usable_token_fails_instead_of_going_on_anonymous():
    pytest.importorskip("kubernetes")
    provider = {"name": "oidc", "config": {"idp-issuer-url": "https://127.0.0.1:1", "client-id": "x", "id-token": "not-a-jwt"}}
    doc = simple(user={"auth-provider": provider})
    with pytest.raises(AuthError) as err:
        P.provider_authorization(_user(provider), doc, "ctx")
    assert str(err.value) == ('kubeconfig user "u": getting credentials: auth-provider oidc gave no token (an id-token that is '
                              'not a valid token, or that could not be refreshed)')


def test_in_cluster_needs_a_mounted_service_account():
    if os.path.isfile(os.path.join(P.SA_DIR, "token")):
        pytest.skip("this machine runs in a pod")
    assert P.in_cluster({}) is False
    assert P.in_cluster({"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}) is False  # no token file here


# -- what the package loads, with its own loaders (files redirected to the test's directory) ----------------------
def gcp(token="ya29.a-token", expiry="2999-01-01T00:00:00Z"):
    return {"name": "gcp", "config": {"access-token": token, "expiry": expiry}}


def test_a_gcp_provider_with_a_fresh_token_gives_it_as_the_authorization_header(tmp_path):
    pytest.importorskip("kubernetes")
    import yaml

    doc = simple(user={"auth-provider": gcp()})
    header = P.provider_authorization(_user(gcp()), doc, "ctx", persist_config=False)
    assert header() == "Bearer ya29.a-token"
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(doc))
    assert P.provider_authorization(_user(gcp()), str(path), "ctx")() == "Bearer ya29.a-token"  # a file as well


def test_a_provider_the_package_cannot_load_fails_naming_the_user(tmp_path):
    pytest.importorskip("kubernetes")
    with pytest.raises(AuthError, match=r'^kubeconfig user "u": getting credentials: auth-provider gcp: '):
        P.provider_authorization(_user(gcp()), str(tmp_path / "missing"), "ctx")


@pytest.fixture
def service_account(tmp_path, monkeypatch):
    """A mounted service account under tmp_path: what a pod has (the package's and this module's paths point there)."""
    incluster = pytest.importorskip("kubernetes.config.incluster_config")
    from tests.kubesim.simulator import _pki

    directory = tmp_path / "serviceaccount"
    directory.mkdir()
    (directory / "token").write_text("sa-token")  # as the kubelet writes it: no newline
    (directory / "namespace").write_text("team-a\n")
    (directory / "ca.crt").write_bytes(Path(_pki()["ca"]).read_bytes())
    monkeypatch.setattr(P, "SA_DIR", str(directory))
    monkeypatch.setattr(incluster, "SERVICE_TOKEN_FILENAME", str(directory / "token"))
    monkeypatch.setattr(incluster, "SERVICE_CERT_FILENAME", str(directory / "ca.crt"))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    return directory


def test_in_cluster_credentials_are_the_mounted_service_accounts(service_account):
    assert P.in_cluster(os.environ) is True
    cfg = P.in_cluster_config()
    assert cfg.host == "https://10.96.0.1:443" and cfg.verify_ssl is True
    assert cfg.ca_file == str(service_account / "ca.crt")
    assert cfg.authorization() == "bearer sa-token" and cfg.namespace == "team-a"  # the package's spelling


def test_in_cluster_without_a_usable_service_account(service_account, monkeypatch):
    (service_account / "namespace").unlink()
    assert P.sa_namespace() is None
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST")
    assert P.in_cluster_config() is None  # the package says it is not in a cluster
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    (service_account / "token").write_text("")
    assert P.in_cluster_config() is None  # an empty token is no service account either
