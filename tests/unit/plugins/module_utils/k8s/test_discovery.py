"""discovery.py: unavailable API groups are recorded, and prune decisions get a fresh index."""

import json

from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.discovery import (
    Discovery,
    DiscoveryIndex,
    ResourceInfo,
    parse_aggregated,
    parse_resource_list,
)

CM = ResourceInfo("", "v1", "ConfigMap", "configmaps", True, ("list", "delete", "patch"))
WIDGET = ResourceInfo("example.com", "v1", "Widget", "widgets", True, ("list", "delete", "patch"))


def test_stale_group_versions_are_failed():
    doc = {"items": [
        {"metadata": {"name": "metrics.k8s.io"}, "versions": [{"version": "v1beta1", "freshness": "Stale", "resources": []}]},
        {"metadata": {"name": "apps"}, "versions": [{"version": "v1", "freshness": "Current", "resources": [
            {"resource": "deployments", "responseKind": {"kind": "Deployment"}, "scope": "Namespaced", "verbs": ["list"]}]}]},
    ]}
    failed = set()
    resources = parse_aggregated(doc, failed)
    assert failed == {"metrics.k8s.io/v1beta1"} and [r.kind for r in resources] == ["Deployment"]


class FakeClient:
    server = "https://example:6443"

    def __init__(self, index):
        self.index = index


class CountingDiscovery(Discovery):
    def __init__(self, client, **kw):
        super().__init__(client, **kw)
        self.current = [CM]

    def _fetch(self):
        self.fetches += 1
        return DiscoveryIndex(self.current)


def test_fresh_reads_again_when_the_index_came_from_the_cache(tmp_path):
    first = CountingDiscovery(FakeClient(None), cache_dir=str(tmp_path))
    assert first.index.lookup("example.com", "Widget") is None and first.fetches == 1  # cache written
    # a CRD is created: the next run reads the (stale) cache
    second = CountingDiscovery(FakeClient(None), cache_dir=str(tmp_path))
    second.current = [CM, WIDGET]
    assert second.index.lookup("example.com", "Widget") is None and second.from_cache and second.fetches == 0
    index, changed = second.server_index()
    assert changed and index.lookup("example.com", "Widget") == WIDGET and second.fetches == 1
    # already fresh: no further request
    assert second.server_index() == (index, False) and second.fetches == 1


def test_same_as():
    assert DiscoveryIndex([CM]).same_as(DiscoveryIndex([CM]))
    assert not DiscoveryIndex([CM]).same_as(DiscoveryIndex([CM, WIDGET]))
    assert not DiscoveryIndex([CM]).same_as(DiscoveryIndex([CM], {"metrics.k8s.io/v1beta1"}))


def test_discovery_parsing_and_paths():
    agg = {
        "items": [
            {
                "metadata": {"name": "apps"},
                "versions": [
                    {
                        "version": "v1",
                        "resources": [
                            {"resource": "deployments", "responseKind": {"kind": "Deployment"}, "scope": "Namespaced", "verbs": ["list", "patch", "delete"]}
                        ],
                    }
                ],
            },
            {
                "metadata": {},
                "versions": [
                    {"version": "v1", "resources": [{"resource": "namespaces", "responseKind": {"kind": "Namespace"}, "scope": "Cluster", "verbs": ["list"]}]}
                ],
            },
        ]
    }
    legacy = parse_resource_list(
        "batch",
        "v1",
        {
            "resources": [
                {"name": "jobs", "kind": "Job", "namespaced": True, "verbs": ["list", "delete"]},
                {"name": "jobs/status", "kind": "Job", "namespaced": True, "verbs": ["get"]},
            ]
        },
    )
    index = DiscoveryIndex(parse_aggregated(agg) + legacy)
    dep = index.lookup("apps", "Deployment")
    assert dep.object_path("n", "d") == "/apis/apps/v1/namespaces/n/deployments/d"
    assert dep.collection_path(None) == "/apis/apps/v1/deployments"
    ns = index.lookup("", "Namespace")
    assert not ns.namespaced and ns.object_path("ignored", "x") == "/api/v1/namespaces/x"
    assert index.lookup("apps", "Deployment", "v2") is None and index.lookup("x", "Y") is None
    assert sorted(i.kind for i in index.listable()) == ["Deployment", "Job"]
    assert DiscoveryIndex.from_json(json.loads(json.dumps(index.to_json()))).lookup("batch", "Job") == legacy[0]


class AggregatedDiscoveryServer:
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
    c = AggregatedDiscoveryServer()
    assert Discovery(c, cache_dir=str(tmp_path)).lookup("apps", "Thing") is not None
    assert c.calls == 2
    d2 = Discovery(c, cache_dir=str(tmp_path))
    assert d2.lookup("apps", "Thing") is not None and c.calls == 2  # served from the cache
    assert d2.lookup("apps", "Missing") is None and c.calls == 4  # a miss on cached data reads again, once
    assert d2.lookup("apps", "Missing") is None and c.calls == 4


def test_index_roundtrip():
    info = ResourceInfo("g", "v1", "K", "ks", True, ("list",))
    assert DiscoveryIndex.from_json(DiscoveryIndex([info]).to_json()).lookup("g", "K") == info


def test_kinds_changed_forgets_the_index_and_drops_the_disk_cache(tmp_path):
    d = CountingDiscovery(FakeClient(None), cache_dir=str(tmp_path))
    d.current = [CM, WIDGET]
    assert d.index.lookup("example.com", "Widget") == WIDGET and d.fetches == 1
    assert list(tmp_path.iterdir())  # written
    d.current = [CM]  # the run deleted the Widget CRD
    d.kinds_changed()
    assert not list(tmp_path.iterdir())
    assert d.index.lookup("example.com", "Widget") is None and d.fetches == 2 and not d.from_cache
    # the next run reads what the server serves now, not the kind deleted
    after = CountingDiscovery(FakeClient(None), cache_dir=str(tmp_path))
    assert after.index.lookup("example.com", "Widget") is None and after.from_cache


def test_an_unknown_kind_or_version_names_the_apiversions_the_cluster_serves():
    hpa = [ResourceInfo("autoscaling", v, "HorizontalPodAutoscaler", "horizontalpodautoscalers", True, ("list",))
           for v in ("v2", "v1")]
    ingress = ResourceInfo("networking.k8s.io", "v1", "Ingress", "ingresses", True, ("list",))
    index = DiscoveryIndex([*hpa, ingress, CM])
    assert index.unknown("autoscaling", "HorizontalPodAutoscaler", "v2beta2") == (
        "HorizontalPodAutoscaler.autoscaling is not served in version v2beta2 by this cluster "
        "(it serves apiVersion autoscaling/v2, autoscaling/v1)")
    assert index.unknown("extensions", "Ingress", "v1beta1") == (
        "kind Ingress.extensions is not known to this cluster (no such API group/kind in discovery; "
        "Ingress is served as apiVersion networking.k8s.io/v1)")
    assert index.unknown("example.com", "Widget", "v1") == (
        "kind Widget.example.com is not known to this cluster (no such API group/kind in discovery)")
    # a misspelled kind of a group the cluster serves: the nearest kind of that group
    deploy = ResourceInfo("apps", "v1", "Deployment", "deployments", True, ("list",))
    index = DiscoveryIndex([deploy, CM])
    assert index.unknown("apps", "Deploymnet", "v1") == (
        "kind Deploymnet.apps is not known to this cluster (no such API group/kind in discovery; did you mean "
        "Deployment?)")
    assert index.unknown("", "ConfigMapp", "v1").endswith("; did you mean ConfigMap?)")
    assert index.unknown("", "Nothing", "v1").endswith("(no such API group/kind in discovery)")
