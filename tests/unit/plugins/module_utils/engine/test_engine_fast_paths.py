"""The engine's fast paths (issue 18, 10,000 objects) decide exactly what the plain definitions decide:
the one-walk drift check, the prune plan's ordering, the owner-mark cache, the garbage collector
pause, and messages that name a manifest as it was written."""

import gc
import random

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.base.identity import ObjectId, identity_digest
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import drift, objects, plan
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.manager import ChangeSet, StackError, StackManager
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.discovery import DiscoveryIndex, ResourceInfo

VERBS = ("create", "delete", "get", "list", "patch", "update", "watch")
CONFIGMAPS = ResourceInfo("", "v1", "ConfigMap", "configmaps", True, VERBS)
NAMESPACES = ResourceInfo("", "v1", "Namespace", "namespaces", False, VERBS)


# -- drift: one walk of the manifest and the fieldsV1 tree ----------------------------------------
def owned_by_definition(fields, path):
    """The definition: ``path`` is in the tree, or below a field owned as a whole (no children recorded)."""
    node = fields
    for name in path:
        if not isinstance(node, dict) or ("f:" + name) not in node:
            return False
        node = node["f:" + name]
        if not node:
            return True
    return True


def value_at(manifest, path):
    for name in path:
        manifest = manifest[name]
    return manifest


def lost_by_definition(manifest, fields):
    """Every path the manifest sets that the tree does not hold, but a ``[]`` (no other manager owns anything, and
    these manifests are of a built-in kind: an empty set or map list records nothing, so it is never lost here)."""
    return [".".join(p) for p in drift.wanted(manifest) if not owned_by_definition(fields, p) and value_at(manifest, p) != []]


def applied(manifest, fields, *others):
    entries = [{"manager": "stacksync", "operation": "Apply", "fieldsV1": fields}]
    entries += [{"manager": "stacksync", "operation": "Apply", "fieldsV1": f} for f in others]
    return {"metadata": {"managedFields": entries}}


DEPLOYMENT = {
    "apiVersion": "apps/v1", "kind": "Deployment", "status": {"replicas": 1},
    "metadata": {"name": "web", "namespace": "ns", "labels": {"app": "web", "team": "a"}, "annotations": None},
    "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "paused": None, "strategy": {},
             "template": {"metadata": {"labels": {"app": "web"}},
                          "spec": {"containers": [{"name": "app", "image": "nginx"}], "nodeSelector": {"a": "b"}}}},
}
FIELD_TREES = [
    {},  # nothing of ours
    {"f:metadata": {"f:labels": {"f:app": {}}}},  # partly ours
    {"f:metadata": {"f:labels": {"f:app": {}, "f:team": {}}},  # all of it, the atomic map as a whole
     "f:spec": {"f:replicas": {}, "f:selector": {}, "f:strategy": {}, "f:template": {
         "f:metadata": {"f:labels": {"f:app": {}}}, "f:spec": {"f:containers": {"k:{\"name\":\"app\"}": {}},
                                                             "f:nodeSelector": {}}}}},
    {"f:spec": {"f:template": {"f:spec": {"f:nodeSelector": {"f:a": {}}}, "f:metadata": "unexpected"}}},
    {"f:spec": {"f:selector": {"f:matchLabels": {".": {}}}, "f:strategy": {"f:type": {}}}},
    {"f:metadata": {"f:name": {}, "f:labels": 1}},
]


@pytest.mark.parametrize("fields", FIELD_TREES)
def test_lost_fields_as_defined(fields):
    expected = lost_by_definition(DEPLOYMENT, fields)
    assert drift.lost(DEPLOYMENT, applied(DEPLOYMENT, fields), "stacksync") == expected


def test_lost_fields_as_defined_for_random_trees():
    rng = random.Random(18)
    for _ in range(300):
        manifest = random_tree(rng, 3)
        fields = random_fields(rng, manifest, 3)
        assert drift.lost(manifest, applied(manifest, fields), "stacksync") == lost_by_definition(manifest, fields)


def test_lost_fields_of_several_apply_entries_are_their_union():
    first = {"f:metadata": {"f:labels": {"f:app": {}}}, "f:spec": {"f:replicas": {}}}
    second = {"f:metadata": {"f:labels": {"f:team": {}}}}
    missing = drift.lost(DEPLOYMENT, applied(DEPLOYMENT, first, second), "stacksync")
    assert missing == lost_by_definition(DEPLOYMENT, drift.union(first, second))
    assert "metadata.labels.app" not in missing and "metadata.labels.team" not in missing
    assert "spec.template.spec.containers" in missing and "spec.replicas" not in missing


def test_lost_is_none_without_an_apply_entry_of_ours():
    live = {"metadata": {"managedFields": [{"manager": "kubectl-edit", "operation": "Update", "fieldsV1": {}}]}}
    assert drift.lost(DEPLOYMENT, live, "stacksync") is None


def test_drift_reads_the_entries_once_and_reports_as_before():
    taken = {"manager": "kubectl-label", "operation": "Update", "fieldsV1": {"f:metadata": {"f:labels": {"f:team": {}}}}}
    live = applied(DEPLOYMENT, {"f:metadata": {"f:labels": {"f:app": {}}}})
    live["metadata"]["managedFields"].append(taken)
    found = drift.drift(DEPLOYMENT, live, "stacksync", drift.compile_patterns(None))
    assert found[0] == {"manager": "kubectl-label", "operation": "Update", "fields": ["metadata.labels.team"]}
    assert found[1]["fields"] == lost_by_definition(DEPLOYMENT, {"f:metadata": {"f:labels": {"f:app": {}}}})
    assert drift.to_take(live, "stacksync", drift.compile_patterns(None)) == [taken]


def random_tree(rng, depth):
    out = {}
    for i in range(rng.randint(0, 4)):
        roll = rng.random()
        if depth and roll < 0.4:
            out[f"k{i}"] = random_tree(rng, depth - 1)
        elif roll < 0.5:
            out[f"k{i}"] = None
        elif roll < 0.6:
            out[f"k{i}"] = []
        else:
            out[f"k{i}"] = "v"
    if depth == 3 and rng.random() < 0.5:
        out["metadata"] = {"name": "n", "namespace": "ns", "labels": {"a": "b"}}
    return out


def random_fields(rng, manifest, depth):
    out = {}
    for key, value in manifest.items():
        roll = rng.random()
        if roll < 0.3:
            continue
        if isinstance(value, dict) and depth and roll < 0.8:
            out["f:" + key] = random_fields(rng, value, depth - 1)
        else:
            out["f:" + key] = {}
    if rng.random() < 0.2:
        out["f:extra"] = {}
    return out


# -- the prune plan: identity order, whatever order the lists came in ------------------------------
def live(oid, stack="s", **meta):
    annotations = {"stacksync.io/owner": objects.owner_mark(stack, oid), "stacksync.io/checksum": "sha256:" + oid.name}
    annotations.update(meta.pop("annotations", {}))
    return {"metadata": dict(name=oid.name, namespace=oid.namespace, labels={"stacksync.io/stack": stack},
                             annotations=annotations, **meta)}


def test_prune_plan_lists_objects_in_identity_order():
    oids = [ObjectId("", "ConfigMap", f"ns{i % 3}", f"c{i:02d}") for i in range(30)]
    oids += [ObjectId("", "Namespace", "", f"ns{i}") for i in range(6)]
    ours = {}
    for i, oid in enumerate(oids):
        info = NAMESPACES if oid.kind == "Namespace" else CONFIGMAPS
        extra = {}
        if i % 5 == 1:
            extra["annotations"] = {"stacksync.io/ignore": "true"}
        if i % 7 == 2:
            extra["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        ours[oid] = (info, live(oid, **extra))
    items = list(ours.items())
    random.Random(7).shuffle(items)
    shuffled = dict(items)
    desired = set(oids[::4])
    declared = {identity_digest(oids[3]): ["other"], identity_digest(oids[7]): ["other"]}
    result = plan.prune_plan(shuffled, "s", desired, set(), declared, contents=None)
    reference = plan.prune_plan(dict(sorted(ours.items())), "s", desired, set(), declared, contents=None)
    for name in ("candidates", "kept", "terminating", "releases", "holders"):
        got = getattr(result, name)
        assert got == getattr(reference, name), name
        ids = [e if isinstance(e, ObjectId) else e[0] for e in got]
        assert ids == sorted(ids), name
    assert result.candidates and result.kept and result.terminating and result.holders and len(result.releases) == 2
    assert result.owned == reference.owned == len(oids)


# -- owner marks --------------------------------------------------------------------------------
def test_owner_mark_is_remembered_and_unchanged():
    oid = ObjectId("apps", "Deployment", "ns", "web")
    assert objects.owner_mark("s", oid) == objects.owner_mark.__wrapped__("s", oid)
    assert objects.owner_mark("s", oid) != objects.owner_mark("t", oid)
    hits = objects.owner_mark.cache_info().hits
    objects.owner_mark("s", oid)
    assert objects.owner_mark.cache_info().hits == hits + 1
    assert objects.owner_mark.cache_info().maxsize == objects.OWNER_MARK_CACHE


# -- the garbage collector pause ------------------------------------------------------------------
@pytest.fixture
def collector():
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_engine_steps_run_with_the_collector_paused(collector):
    seen = []

    class Discovery:
        index = DiscoveryIndex([CONFIGMAPS])

        def resolve(self, group, kind, version=None):
            seen.append(gc.isenabled())
            return CONFIGMAPS

        def invalidate(self):
            pass

    manager = StackManager(object(), "s", namespace="ns", discovery=Discovery())
    manager.prepare([{"apiVersion": "example.com/v1", "kind": "Blob", "metadata": {"name": "b"}}], ChangeSet())
    assert seen == [False] and gc.isenabled()


# -- messages name the manifest as written ---------------------------------------------------------
def test_a_refused_manifest_is_named_without_the_default_namespace():
    class Discovery:
        index = DiscoveryIndex([CONFIGMAPS])

        def invalidate(self):
            pass

    big = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big"}, "data": {"v": "x" * (2 << 20)}}
    with pytest.raises(StackError) as e:
        StackManager(object(), "s", namespace="ns", discovery=Discovery()).sync([big])
    assert "ConfigMap big (resources[0])" in str(e.value) and "too large" in str(e.value)
    assert big["metadata"] == {"name": "big"}  # the caller's manifest is not changed
