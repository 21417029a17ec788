"""Unit tests: Secret-safe invocation, auth parameter resolution, discovery cache."""

import json

from ansible_collections.stacksync.k8s.plugins.module_utils.auth import resolve_auth_params
from ansible_collections.stacksync.k8s.plugins.module_utils.common import summarize_resources
from ansible_collections.stacksync.k8s.plugins.module_utils.discovery import Discovery, DiscoveryIndex, ResourceInfo


def test_invocation_lists_objects_by_identity_never_their_content():
    res = [
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "app"},
         "data": {"k": "c2VjcmV0"}, "stringData": {"p": "pw"}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "app"}},
        {"kind": "ConfigMap", "metadata": "not a mapping"},
        None,
    ]
    out = summarize_resources(res)
    assert out == ["v1 Secret app/s", "v1 Namespace app", "ConfigMap", "(NoneType)"]
    assert "c2VjcmV0" not in json.dumps(out) and "pw" not in json.dumps(out)
    assert res[0]["data"]["k"] == "c2VjcmV0"  # input untouched
    assert summarize_resources("not a list") == "not a list"


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


class FakeClient:
    server = "https://cache-test"

    def __init__(self):
        self.calls = 0

    def request(self, method, path, accept=None, raw=False):
        self.calls += 1
        body = {
            "kind": "APIGroupDiscoveryList",
            "items": [
                {
                    "metadata": {"name": "" if path == "/api" else "apps"},
                    "versions": [
                        {"version": "v1", "resources": [{"resource": "things", "responseKind": {"kind": "Thing"}, "scope": "Namespaced", "verbs": ["list"]}]}
                    ],
                }
            ],
        }
        return 200, {"Content-Type": "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"}, json.dumps(body).encode()


def test_discovery_cache_is_shared_and_refreshed_on_miss(tmp_path):
    c = FakeClient()
    assert Discovery(c, cache_dir=str(tmp_path)).lookup("apps", "Thing") is not None
    assert c.calls == 2
    d2 = Discovery(c, cache_dir=str(tmp_path))
    assert d2.lookup("apps", "Thing") is not None and c.calls == 2  # served from the cache
    assert d2.lookup("apps", "Missing") is None and c.calls == 4  # a miss on cached data reads again, once
    assert d2.lookup("apps", "Missing") is None and c.calls == 4


def test_index_roundtrip():
    info = ResourceInfo("g", "v1", "K", "ks", True, ("list",))
    assert DiscoveryIndex.from_json(DiscoveryIndex([info]).to_json()).lookup("g", "K") == info
