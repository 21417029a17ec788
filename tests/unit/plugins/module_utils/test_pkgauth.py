"""pkgauth.py: auth-providers refused in kubectl's words, or failing without a token, before any request."""

import os

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils import pkgauth as P
from ansible_collections.stacksync.k8s.plugins.module_utils.kubeconfig import AuthError, ClusterConfig

from tests.unit.plugins.module_utils.test_kubeconfig import simple


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
