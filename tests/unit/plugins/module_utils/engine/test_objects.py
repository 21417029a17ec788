"""objects.py: identity from discovery, checksums, the owner mark, the source annotation."""

import base64
import json

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.base.constants import (
    CHECKSUM_ANNOTATION,
    OWNER_ANNOTATION,
    SOURCE_ANNOTATION,
    STACK_LABEL,
)
from ansible_collections.stacksync.k8s.plugins.module_utils.base.identity import (
    ObjectId,
    group_of,
)
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import objects as o
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import validation as v
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.objects import resolve_identity
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.discovery import ResourceInfo
from hypothesis import given, settings
from hypothesis import strategies as st

CM = ResourceInfo("", "v1", "ConfigMap", "configmaps", True, ("get", "list", "patch", "delete"))


CR = ResourceInfo("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", False, ("list", "patch", "delete"))


def cm(name="c", ns=None, **data):
    meta = {"name": name}
    if ns:
        meta["namespace"] = ns
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data or {"a": "1"}}


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


def test_identity_uses_group_not_version():
    v1 = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "prod"}}
    beta = {"apiVersion": "apps/v1beta1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "prod"}}
    info_v1 = ResourceInfo("apps", "v1", "Deployment", "deployments", True, ())
    info_beta = ResourceInfo("apps", "v1beta1", "Deployment", "deployments", True, ())
    assert resolve_identity(v1, info_v1, "default")[0] == resolve_identity(beta, info_beta, "default")[0] == ObjectId(
        "apps", "Deployment", "prod", "web")
    assert group_of("v1") == ""


def test_scope_comes_from_discovery_not_the_manifest():
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "prod", "namespace": "stray"}}
    oid, warning = resolve_identity(ns, ResourceInfo("", "v1", "Namespace", "namespaces", False, ()), "default")
    assert oid == ObjectId("", "Namespace", "", "prod") and "cluster-scoped" in warning
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    assert resolve_identity(cm, ResourceInfo("", "v1", "ConfigMap", "configmaps", True, ()), "y")[0].namespace == "y"


# -- issue 32: the checksum payload computed once, and the request size bounded by it -------------------------------
_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=30)
_VALUES = st.recursive(st.none() | st.booleans() | st.integers() | _TEXT,
                       lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4), max_leaves=20)


@st.composite
def manifests(draw):
    meta = {"name": "n", "namespace": draw(st.sampled_from(["", "ns", "a" * 63]))}
    for field in ("labels", "annotations"):
        if draw(st.booleans()):
            meta[field] = draw(st.dictionaries(st.sampled_from(["a", "b/c", STACK_LABEL, CHECKSUM_ANNOTATION, OWNER_ANNOTATION]),
                                               _TEXT, max_size=3))
    if draw(st.booleans()):
        meta["resourceVersion"] = draw(_TEXT)
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}
    body.update(draw(st.dictionaries(st.sampled_from(["data", "spec", "status", "binaryData"]), _VALUES, max_size=3)))
    return body


@settings(max_examples=300, deadline=None)
@given(manifests())
def test_the_size_bound_is_never_below_the_request_or_the_stored_object(m):
    oid = ObjectId("", "ConfigMap", m["metadata"]["namespace"], "n")
    payload = o.checksum_payload(m, oid)
    bound = o.sent_size_bound(m, payload)
    if bound is not None:
        assert bound >= len(json.dumps(m, separators=(",", ":")))
        assert bound >= len(json.dumps(m, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))
    assert o.checksum_of(payload) == o.checksum(m, oid)
    assert o.checksum_of(payload, b"k") == o.checksum(m, oid, b"k")


def test_the_size_bound_leaves_out_nothing_the_payload_does_not_hold():
    oid = ObjectId("", "ConfigMap", "ns", "c")
    big = "x" * (2 * 1024 * 1024)
    for m in ({**cm("c", "ns"), "status": {"v": big}},
              cm("c", "ns") | {"metadata": {"name": "c", "namespace": "ns", "managedFields": [{"v": big}]}},
              cm("c", "ns") | {"metadata": {"name": "c", "namespace": "ns", "annotations": {CHECKSUM_ANNOTATION: big}}}):
        payload = o.checksum_payload(m, oid)
        assert len(payload) < 1000 and o.sent_size_bound(m, payload) is None  # what the payload leaves out is big
        assert "too large" in v.size_problem(m, oid, o.sent_size_bound(m, payload))


def test_a_bounded_size_check_says_what_the_full_one_says():
    oid = ObjectId("example.com", "Blob", "ns", "b")
    for value in ("e" * 1000, "e" * (1024 * 1024), "\u00e9" * (1024 * 1024 // 2), "\U0001F600" * 100000):
        blob = {"apiVersion": "example.com/v1", "kind": "Blob", "metadata": {"name": "b"}, "spec": {"v": value}}
        bound = o.sent_size_bound(blob, o.checksum_payload(blob, oid))
        assert v.size_problem(blob, oid, bound) == v.size_problem(blob, oid)


@pytest.mark.parametrize("kind, field, value, too_large", [
    ("ConfigMap", "data", "e" * 1000, False),
    ("ConfigMap", "data", "e" * (1024 * 1024 + 1), True),
    ("ConfigMap", "data", "\u00e9" * (1024 * 1024 // 2 + 1), True),  # 2 bytes each in UTF-8
    ("ConfigMap", "data", "\U0001F600" * (1024 * 1024 // 4 + 1), True),  # 4 bytes each
    ("ConfigMap", "data", "\U0001F600" * (1024 * 1024 // 4 - 1), False),
    ("ConfigMap", "binaryData", "QUJD" * (1024 * 1024 // 3 + 1), True),  # 3 bytes decoded per 4
    ("Secret", "data", "QUJD" * (1024 * 1024 // 3 - 1), False),
    ("Secret", "data", "QUJD" * (1024 * 1024 // 3 + 1), True),
])
def test_a_bounded_size_check_finds_the_data_too_large_as_the_full_one(kind, field, value, too_large):
    oid = ObjectId("", kind, "ns", "c")
    m = {"apiVersion": "v1", "kind": kind, "metadata": {"name": "c", "namespace": "ns"}, field: {"k": value}}
    bound = o.sent_size_bound(m, o.checksum_payload(m, oid))
    problem = v.size_problem(m, oid, bound)
    assert problem == v.size_problem(m, oid)
    assert ("data is too large" in (problem or "")) is too_large


def test_stamp_changes_the_manifests_own_maps_in_place():
    m = o.strip_source({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labels": {"a": "1"}}})
    labels = m["metadata"]["labels"]
    o.stamp(m, "st", ObjectId("", "ConfigMap", "ns", "c"), "sha256:x")
    assert m["metadata"]["labels"] is labels and labels == {"a": "1", STACK_LABEL: "st"}
    assert m["metadata"]["annotations"][CHECKSUM_ANNOTATION] == "sha256:x"
    bare = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labels": None}}
    o.stamp(bare, "st", ObjectId("", "ConfigMap", "ns", "c"), "sha256:x")
    assert bare["metadata"]["labels"] == {STACK_LABEL: "st"}
