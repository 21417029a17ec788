"""Unit tests for the stack module's pure logic: checksums, ownership, drift, redaction, plan."""

import base64
import json

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils import contents
from ansible_collections.stacksync.k8s.plugins.module_utils import objects as o
from ansible_collections.stacksync.k8s.plugins.module_utils import plan as p
from ansible_collections.stacksync.k8s.plugins.module_utils import validation as v
from ansible_collections.stacksync.k8s.plugins.module_utils.constants import (
    CHECKSUM_ANNOTATION,
    IGNORE_ANNOTATION,
    OWNER_ANNOTATION,
    SOURCE_ANNOTATION,
    STACK_LABEL,
)
from ansible_collections.stacksync.k8s.plugins.module_utils.diff import contains, in_sync, object_diff, redact_secret
from ansible_collections.stacksync.k8s.plugins.module_utils.discovery import (
    DiscoveryIndex,
    ResourceInfo,
    parse_aggregated,
    parse_resource_list,
)
from ansible_collections.stacksync.k8s.plugins.module_utils.identity import ObjectId

CM = ResourceInfo("", "v1", "ConfigMap", "configmaps", True, ("get", "list", "patch", "delete"))
CR = ResourceInfo("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", False, ("list", "patch", "delete"))


def cm(name="c", ns=None, **data):
    meta = {"name": name}
    if ns:
        meta["namespace"] = ns
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data or {"a": "1"}}


# -- identity and checksums -------------------------------------------------------------------
def test_resolve_identity_uses_discovery_scope():
    m = cm()
    oid, warning = o.resolve_identity(m, CM, "dflt")
    assert oid == ObjectId("", "ConfigMap", "dflt", "c") and warning is None and m["metadata"]["namespace"] == "dflt"
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "r", "namespace": "x"}}
    oid, warning = o.resolve_identity(role, CR, "dflt")
    assert oid.namespace == "" and "namespace" not in role["metadata"] and "cluster-scoped" in warning


def test_checksum_covers_content_and_identity_only():
    oid = ObjectId("", "ConfigMap", "ns", "c")
    base = o.checksum(cm(ns="ns"), oid)
    assert base.startswith("sha256:")
    noisy = cm(ns="other")
    noisy["metadata"].update(
        resourceVersion="5", uid="u", managedFields=[{}], labels={STACK_LABEL: "s"}, annotations={CHECKSUM_ANNOTATION: "x", OWNER_ANNOTATION: "y"}
    )
    noisy["status"] = {"phase": "x"}
    assert o.checksum(noisy, oid) == base  # server-set, our own metadata, status, namespace field: excluded
    assert o.checksum(cm(ns="ns", a="2"), oid) != base
    assert o.checksum(cm(ns="ns"), oid._replace(namespace="ns2")) != base  # identity included
    # key order does not matter
    m = cm(ns="ns", a="1", b="2")
    m2 = json.loads(json.dumps({"data": {"b": "2", "a": "1"}, "metadata": m["metadata"], "kind": "ConfigMap", "apiVersion": "v1"}))
    assert o.checksum(m, oid) == o.checksum(m2, oid)


def test_secret_checksum_is_keyed():
    oid = ObjectId("", "Secret", "ns", "s")
    s = o.normalize_secret({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "stringData": {"p": "x"}})
    assert s["data"] == {"p": base64.b64encode(b"x").decode()} and "stringData" not in s
    k1, k2 = o.checksum(s, oid, b"k1"), o.checksum(s, oid, b"k2")
    assert k1.startswith("hmac-sha256:") and k1 != k2 and k1 != o.checksum(s, oid)


def test_owner_mark_is_bound_to_identity():
    oid = ObjectId("", "ConfigMap", "ns", "c")
    live = o.stamp(cm(ns="ns"), "stack", oid, "sha256:x")
    assert o.owned_by(live, "stack", oid)
    assert not o.owned_by(live, "other", oid)
    assert not o.owned_by(live, "stack", oid._replace(name="copy"))  # annotations copied onto another object
    assert len(live["metadata"]["annotations"][OWNER_ANNOTATION]) == o.MARK_LENGTH


@pytest.mark.parametrize(
    "manifest,message",
    [
        ("x", "not a mapping"),
        ({"kind": "ConfigMap", "metadata": {"name": "a"}}, "apiVersion"),
        ({"apiVersion": "v1", "metadata": {"name": "a"}}, "kind"),
        ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}, "metadata.name"),
        ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "a-"}}, "generateName"),
        ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "labels": {"x": "y" * 64}}}, "label value"),
        ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "labels": {"x": 1}}}, "must be a string"),
        ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "Bad_NS"}}, "namespace"),
    ],
)
def test_validate_manifest(manifest, message):
    with pytest.raises(v.ManifestError, match=message):
        v.validate_manifest(manifest, 0)


def test_strip_source_does_not_touch_input():
    m = cm()
    m["metadata"]["annotations"] = {SOURCE_ANNOTATION: "a.yaml#0"}
    out = o.strip_source(m)
    assert "annotations" not in out["metadata"] and m["metadata"]["annotations"]


def test_prepared_copy_never_changes_input():
    """strip_source copies only metadata; what the engine then changes in place must stay off the input."""
    m = {"apiVersion": "v1", "kind": "Secret",
         "metadata": {"name": "s", "labels": {"a": "b"}, "annotations": {SOURCE_ANNOTATION: "a.yaml#0", "x": "y"}},
         "data": {"k": "dg=="}, "stringData": {"p": "x"}}
    before = json.loads(json.dumps(m))
    out = o.strip_source(m)
    oid = ObjectId("", "Secret", "default", "s")
    out["metadata"]["namespace"] = "default"
    o.normalize_secret(out)
    o.stamp(out, "st", oid, o.checksum(out, oid, b"k"))
    assert m == before
    assert out["data"] == {"k": "dg==", "p": "eA=="} and "stringData" not in out
    assert out["metadata"]["labels"]["a"] == "b" and SOURCE_ANNOTATION not in out["metadata"]["annotations"]


# -- drift check and diff ---------------------------------------------------------------------
def test_contains():
    live = {"a": 1, "b": {"c": [1, 2], "d": "x"}, "e": [{"name": "n1", "v": 1, "extra": 0}, {"name": "n2", "v": 2}]}
    assert contains({"a": 1, "b": {"d": "x"}}, live)
    assert not contains({"a": 2}, live)
    assert not contains({"z": 1}, live)
    assert not contains({"b": {"c": [1]}}, live)
    assert contains({"e": [{"name": "n2", "v": 2}, {"name": "n1", "v": 1}]}, live)  # merge key, any order
    assert not contains({"e": [{"name": "n1", "v": 9}, {"name": "n2", "v": 2}]}, live)
    assert contains({"z": None, "y": {}, "x": []}, live)  # empty / null == absent
    assert not contains({"a": True}, {"a": 1})


def test_in_sync_needs_checksum_and_content():
    desired = o.stamp(cm(ns="n"), "s", ObjectId("", "ConfigMap", "n", "c"), "sha256:1")
    live = json.loads(json.dumps(desired))
    live["metadata"]["uid"] = "u"
    assert in_sync(desired, live, CHECKSUM_ANNOTATION)
    live["data"]["a"] = "edited"
    assert not in_sync(desired, live, CHECKSUM_ANNOTATION)
    live["data"]["a"] = "1"
    live["metadata"]["annotations"][CHECKSUM_ANNOTATION] = "sha256:old"
    assert not in_sync(desired, live, CHECKSUM_ANNOTATION)
    assert not in_sync(desired, None, CHECKSUM_ANNOTATION)


def test_secret_redaction_marks_changed_keys_only():
    before = {
        "kind": "Secret",
        "data": {"a": "QQ==", "b": "Qg=="},
        "metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{secret}"}},
    }
    after = {"kind": "Secret", "data": {"a": "QQ==", "b": "Qw==", "c": "RA=="}}
    d = object_diff(before, after, secret=True)
    text = json.dumps(d)
    for value in ("QQ==", "Qg==", "Qw==", "RA==", "{secret}"):
        assert value not in text
    assert d["after"]["data"] == {"a": "<redacted>", "b": "<redacted, changed>", "c": "<redacted, changed>"}
    assert redact_secret(None) is None


# -- plan -------------------------------------------------------------------------------------
def live(oid, stack="s", checksum="sha256:old", **meta_extra):
    obj = o.stamp(cm(oid.name, oid.namespace), stack, oid, checksum)
    obj["metadata"].update(meta_extra)
    return obj


def test_prune_decision():
    oid = ObjectId("", "ConfigMap", "n", "c")
    assert p.prune_decision(live(oid), oid, "s", set(), set()) is None
    assert p.prune_decision(live(oid), oid, "s", {oid}, set()) == "still desired"
    assert "checksum" in p.prune_decision(live(oid), oid, "s", set(), {"sha256:old"})
    assert "not owned" in p.prune_decision(live(oid, stack="t"), oid, "s", set(), set())
    assert "not owned" in p.prune_decision(live(oid), oid._replace(name="copy"), "s", set(), set())
    assert "ownerReferences" in p.prune_decision(live(oid, ownerReferences=[{"uid": "x"}]), oid, "s", set(), set())
    ignored = live(oid)
    ignored["metadata"]["annotations"][IGNORE_ANNOTATION] = "true"
    assert "ignore" in p.prune_decision(ignored, oid, "s", set(), set())


def test_stages_order_prerequisites_first_and_prune_reverses():
    ids = [
        ObjectId("apps", "Deployment", "n", "d"),
        ObjectId("", "Namespace", "", "n"),
        ObjectId("admissionregistration.k8s.io", "ValidatingWebhookConfiguration", "", "w"),
        ObjectId("rbac.authorization.k8s.io", "Role", "n", "r"),
        ObjectId("apiextensions.k8s.io", "CustomResourceDefinition", "", "x.y"),
        ObjectId("y", "X", "n", "cr"),
    ]
    stages = p.by_stage(ids)
    assert [s for s, _ in stages] == [0, 1, 2, 3]
    assert set(stages[0][1]) == {ids[1], ids[4]} and ids[5] in stages[2][1]


def test_namespace_blockers_ignore_what_the_cluster_puts_there():
    ns = "n"
    prune = {ObjectId("", "ConfigMap", ns, "mine"), ObjectId("", "Service", ns, "svc")}
    objs = [
        (ObjectId("", "ServiceAccount", ns, "default"), {}),
        (ObjectId("", "ConfigMap", ns, "kube-root-ca.crt"), {}),
        (ObjectId("", "ConfigMap", ns, "openshift-service-ca.crt"), {}),
        (ObjectId("", "Event", ns, "e"), {}),
        (ObjectId("", "ConfigMap", ns, "mine"), {}),
        (ObjectId("", "Service", ns, "svc"), {"metadata": {"uid": "svc-uid"}}),
        (ObjectId("", "Endpoints", ns, "svc"), {}),
        # owned by the Service being pruned (an owner that stays would keep the namespace: test_plan.py)
        (ObjectId("discovery.k8s.io", "EndpointSlice", ns, "svc-x"), {"metadata": {"ownerReferences": [{"uid": "svc-uid"}]}}),
        (ObjectId("", "ConfigMap", ns, "users"), {}),
        (ObjectId("", "ServiceAccount", ns, "robot"), {}),
    ]
    assert contents.namespace_blockers(ns, objs, prune) == [ObjectId("", "ConfigMap", ns, "users"), ObjectId("", "ServiceAccount", ns, "robot")]


# -- discovery --------------------------------------------------------------------------------
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


def test_readiness_rules():
    from ansible_collections.stacksync.k8s.plugins.module_utils.wait import NotReady, compile_conditions, is_ready

    dep = ObjectId("apps", "Deployment", "n", "d")
    live_dep = {"metadata": {"generation": 2}, "spec": {"replicas": 2}, "status": {"observedGeneration": 2, "updatedReplicas": 2, "availableReplicas": 1}}
    assert not is_ready(dep, live_dep)
    live_dep["status"]["availableReplicas"] = 2
    assert is_ready(dep, live_dep)
    live_dep["metadata"]["generation"] = 3
    assert not is_ready(dep, live_dep)
    job = ObjectId("batch", "Job", "n", "j")
    assert is_ready(job, {"status": {"conditions": [{"type": "Complete", "status": "True"}]}})
    with pytest.raises(NotReady):
        is_ready(job, {"status": {"conditions": [{"type": "Failed", "status": "True"}]}})
    crd = ObjectId("apiextensions.k8s.io", "CustomResourceDefinition", "", "x")
    assert not is_ready(crd, {"status": {}})
    assert is_ready(ObjectId("", "ConfigMap", "n", "c"), {})  # nothing to wait for
    rules = compile_conditions([{"kind": "ConfigMap", "group": None, "expression": "data.ok == 'yes'"}])
    assert not is_ready(ObjectId("", "ConfigMap", "n", "c"), {"data": {}}, rules)
    assert is_ready(ObjectId("", "ConfigMap", "n", "c"), {"data": {"ok": "yes"}}, rules)


def test_namespace_scan_rounds_skip_events_and_put_likely_holders_first():
    verbs = ("list", "delete")
    infos = [ResourceInfo("", "v1", "Event", "events", True, verbs),
             ResourceInfo("events.k8s.io", "v1", "Event", "events", True, verbs),
             ResourceInfo("", "v1", "ConfigMap", "configmaps", True, verbs),
             ResourceInfo("", "v1", "Namespace", "namespaces", False, verbs),
             ResourceInfo("example.com", "v1", "Widget", "widgets", True, verbs),
             ResourceInfo("apps", "v1", "Deployment", "deployments", True, verbs)]
    first, rest = contents.namespace_scan_rounds(infos)
    assert [i.kind for i in first] == ["ConfigMap", "Deployment"] and [i.kind for i in rest] == ["Widget"]
