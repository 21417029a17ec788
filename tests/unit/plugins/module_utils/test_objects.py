"""objects.py: identity from discovery, checksums, the owner mark, the source annotation."""

import base64
import json

from ansible_collections.stacksync.k8s.plugins.module_utils import objects as o
from ansible_collections.stacksync.k8s.plugins.module_utils.constants import (
    CHECKSUM_ANNOTATION,
    OWNER_ANNOTATION,
    SOURCE_ANNOTATION,
    STACK_LABEL,
)
from ansible_collections.stacksync.k8s.plugins.module_utils.discovery import ResourceInfo
from ansible_collections.stacksync.k8s.plugins.module_utils.identity import (
    ObjectId,
    group_of,
)
from ansible_collections.stacksync.k8s.plugins.module_utils.objects import resolve_identity

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
