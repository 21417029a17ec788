"""discovery.py: unavailable API groups are recorded, and prune decisions get a fresh index."""

from ansible_collections.stacksync.k8s.plugins.module_utils.discovery import Discovery, DiscoveryIndex, ResourceInfo, parse_aggregated

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
    index, changed = second.fresh()
    assert changed and index.lookup("example.com", "Widget") == WIDGET and second.fetches == 1
    # already fresh: no further request
    assert second.fresh() == (index, False) and second.fetches == 1


def test_same_as():
    assert DiscoveryIndex([CM]).same_as(DiscoveryIndex([CM]))
    assert not DiscoveryIndex([CM]).same_as(DiscoveryIndex([CM, WIDGET]))
    assert not DiscoveryIndex([CM]).same_as(DiscoveryIndex([CM], {"metrics.k8s.io/v1beta1"}))
