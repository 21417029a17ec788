"""Unit tests for StackManager.prepare: errors name the source file, and objects too large for the API
server fail the whole run before anything is written."""

import base64

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.base.constants import SOURCE_ANNOTATION
from ansible_collections.stacksync.k8s.plugins.module_utils.base.identity import ObjectId
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import objects as o
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import validation as v
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.manager import ChangeSet, StackError, StackManager
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.discovery import DiscoveryIndex, ResourceInfo, UnknownKind

VERBS = ("create", "delete", "get", "list", "patch", "update", "watch")
INFOS = [
    ResourceInfo("", "v1", "ConfigMap", "configmaps", True, VERBS),
    ResourceInfo("", "v1", "Secret", "secrets", True, VERBS),
    ResourceInfo("", "v1", "Namespace", "namespaces", False, VERBS),
    ResourceInfo("example.com", "v1", "Blob", "blobs", True, VERBS),
    ResourceInfo("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", False, VERBS),
]


class FakeDiscovery:
    def __init__(self):
        self.index = DiscoveryIndex(INFOS)

    def resolve(self, group, kind, version=None):
        info = self.index.lookup(group, kind, version)
        if info is None:
            raise UnknownKind(f"kind {kind} is not known to this cluster")
        return info

    def invalidate(self):
        """A failed run drops a disk cache; this index has none."""


class NoWrites:
    """A client the run must not reach: prepare fails first."""

    def __getattr__(self, name):
        raise AssertionError(f"the client was used ({name}) although prepare should have failed")


def manager():
    return StackManager(NoWrites(), "s", namespace="ns", discovery=FakeDiscovery())


def doc(kind="ConfigMap", name="c", source=None, api_version="v1", **fields):
    meta = {"name": name}
    if source:
        meta["annotations"] = {SOURCE_ANNOTATION: source, "keep": "me"}
    out = {"apiVersion": api_version, "kind": kind, "metadata": meta}
    out.update(fields)
    return out


def sync_error(resources):
    with pytest.raises(StackError) as e:
        manager().sync(resources)
    return str(e.value)


# -- errors name the file ---------------------------------------------------------------------
def test_unknown_kind_names_the_source_file():
    msg = sync_error([doc(), doc("Nope", "x", source="apps/bad.yaml#2", api_version="example.com/v1")])
    assert "apps/bad.yaml#2" in msg and "Nope" in msg and "resources[" not in msg


def test_invalid_manifest_names_the_source_file():
    msg = sync_error([doc(name="Bad_Name", source="apps/bad.yaml#0")])
    assert "apps/bad.yaml#0" in msg and "Bad_Name" in msg


def test_duplicate_names_both_files():
    msg = sync_error([doc(source="a.yaml#0"), doc(source="b/c.yaml#3")])
    assert "duplicate" in msg and "a.yaml#0" in msg and "b/c.yaml#3" in msg
    # default namespace and explicit namespace are the same object; without the lookup: indexes
    msg = sync_error([doc(), doc(metadata={"name": "c", "namespace": "ns"})])
    assert "duplicate" in msg and "resources[0]" in msg and "resources[1]" in msg


def test_without_source_errors_give_the_index():
    msg = sync_error([doc(), doc("Nope", "x", api_version="example.com/v1")])
    assert "resources[1]" in msg


def test_cluster_scoped_namespace_warning_names_the_file():
    cs = ChangeSet()
    role = doc("ClusterRole", "r", source="rbac.yaml#1", api_version="rbac.authorization.k8s.io/v1")
    role["metadata"]["namespace"] = "x"
    manager().prepare([role], cs)
    assert any("cluster-scoped" in w and "rbac.yaml#1" in w for w in cs.warnings), cs.warnings


def test_source_is_stripped_after_preparation_only():
    raw = doc(source="a.yaml#0", data={"a": "1"})
    (d,) = manager().prepare([raw], ChangeSet())
    assert d.manifest["metadata"]["annotations"] == {"keep": "me"} and d.source == "a.yaml#0"
    assert raw["metadata"]["annotations"][SOURCE_ANNOTATION] == "a.yaml#0"  # input untouched
    plain = manager().prepare([doc(data={"a": "1"})], ChangeSet())[0]
    plain.manifest["metadata"]["annotations"] = {"keep": "me"}
    assert o.checksum(d.manifest, d.oid) == o.checksum(plain.manifest, plain.oid)


def test_the_renders_manifests_are_not_checked_again_and_any_others_are(monkeypatch):
    checked = []
    real = p.validate_manifest
    monkeypatch.setattr(p, "validate_manifest", lambda m, i=None: checked.append(i) or real(m, i))
    rendered = p.Rendered([doc(source="a.yaml#0"), None, doc("Secret", "s", source="b.yaml#0", type="Opaque")])
    desired = manager().prepare(rendered, ChangeSet())
    assert checked == [] and [d.oid.name for d in desired] == ["c", "s"] and desired[0].source == "a.yaml#0"
    manager().prepare(list(rendered), ChangeSet())  # the same manifests from anywhere else: each checked
    assert checked == [0, 2]
    assert "Bad_Name" in sync_error([doc(name="Bad_Name")])  # and refused


# -- sizes --------------------------------------------------------------------------------------
MIB = 1024 * 1024


def test_configmap_data_limit_is_the_servers():
    # the server counts values only (UTF-8 bytes for data, decoded bytes for binaryData), at most 1 MiB
    at_limit = doc(data={"v": "x" * (MIB - 2), "w": "é"})
    assert manager().prepare([at_limit], ChangeSet())
    binary = doc(data={"v": "x" * (MIB - 3)}, binaryData={"b": base64.b64encode(b"123").decode()})
    assert manager().prepare([binary], ChangeSet())
    binary["binaryData"]["b"] = base64.b64encode(b"1234").decode()
    msg = sync_error([binary])
    assert "too large" in msg and "1048576 bytes" in msg
    msg = sync_error([doc(), doc(name="big", source="cfg/big.yaml#0", data={"v": "é" * (MIB // 2 + 1)})])
    assert "ConfigMap ns/big" in msg or "ConfigMap big" in msg
    assert "cfg/big.yaml#0" in msg and "too large" in msg


def test_secret_data_counts_decoded_bytes_and_string_data():
    ok = doc("Secret", "s", data={"k": base64.b64encode(b"x" * MIB).decode()})
    assert manager().prepare([ok], ChangeSet())  # 1 MiB decoded, ~1.33 MiB of base64: accepted
    msg = sync_error([doc("Secret", "s", source="s.yaml#0", data={"k": base64.b64encode(b"x" * MIB).decode()},
                          stringData={"p": "1"})])
    assert "s.yaml#0" in msg and "too large" in msg and "1048576" in msg


def test_whole_object_size_limits():
    # a custom resource is limited by the request body (3 MiB) and, first, by what etcd stores (1.5 MiB)
    blob = doc("Blob", "b", source="blobs/b.yaml#0", api_version="example.com/v1", spec={"v": "x" * (3 * MIB)})
    msg = sync_error([doc(source="ok.yaml#0"), blob])
    assert "blobs/b.yaml#0" in msg and "too large" in msg and "3145728 bytes" in msg and "ok.yaml" not in msg
    blob["spec"]["v"] = "x" * (2 * MIB)
    msg = sync_error([blob])
    assert "too large" in msg and "etcd" in msg
    blob["spec"]["v"] = "x" * MIB
    assert manager().prepare([blob], ChangeSet())


def test_size_counts_the_body_as_sent_and_the_object_as_stored():
    # the client sends ASCII JSON (a non-ASCII character becomes a 6-byte escape); etcd stores UTF-8
    oid = ObjectId("example.com", "Blob", "ns", "b")
    blob = {"apiVersion": "example.com/v1", "kind": "Blob", "metadata": {"name": "b"}, "spec": {"v": "\u00e9" * (MIB // 2)}}
    assert "request size limit" in v.size_problem(blob, oid)
    blob["spec"]["v"] = "\u00e9" * (MIB // 3)  # 2 MiB sent, 0.67 MiB stored: fine
    assert v.size_problem(blob, oid) is None
    blob["spec"]["v"] = "e" * (MIB // 3)
    assert v.size_problem(blob, oid) is None


# -- prepare.py's own functions (the manager calls them) ----------------------------------------------------
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import prepare as p  # noqa: E402
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.options import StackOptions  # noqa: E402

CRD = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "gadgets.x.io"},
       "spec": {"group": "x.io", "names": {"kind": "Gadget", "plural": "gadgets"}, "scope": "Namespaced",
                "versions": [{"name": "v1", "served": True}, {"name": "v2", "served": False}]}}


class WithCRDs(FakeDiscovery):
    def __init__(self):
        self.index = DiscoveryIndex([*INFOS, ResourceInfo("apiextensions.k8s.io", "v1", "CustomResourceDefinition",
                                                          "customresourcedefinitions", False, VERBS)])


def test_a_custom_resource_of_a_crd_of_the_same_set_is_resolved_from_the_crd():
    desired = p.prepare([CRD, doc("Gadget", "g", api_version="x.io/v1")], WithCRDs(), StackOptions("s", namespace="ns"),
                        lambda m: None)
    gadget = desired[1]
    assert gadget.from_crd and gadget.oid == ObjectId("x.io", "Gadget", "ns", "g") and gadget.info.plural == "gadgets"
    assert list(p.crd_kinds([(0, None, CRD)])) == [("x.io", "Gadget", "v1")]  # the versions it serves
    with pytest.raises(p.PrepareError, match="Gadget"):  # a version the CRD does not serve is not resolved from it
        p.prepare([CRD, doc("Gadget", "g", api_version="x.io/v2")], WithCRDs(), StackOptions("s"), lambda m: None)


def test_the_stacks_state_cannot_be_declared_and_record_namespaces_come_own_first():
    opts = StackOptions("s", record_namespace="ops", record_namespaces=["team-b", "ops", ""])
    assert p.record_namespaces(opts) == ["ops", "team-b"]
    with pytest.raises(p.PrepareError, match=r"this is \(or could be\) the state of a stack"):
        p.prepare([dict(doc(name="stacksync-other"), metadata={"name": "stacksync-other", "namespace": "team-b"})],
                  FakeDiscovery(), opts, lambda m: None)


def test_stamping_keys_secret_checksums_and_names_the_record_namespace():
    opts = StackOptions("s", namespace="ns", record_namespace="ops")
    cm, secret = p.prepare([doc(name="c", data={"a": "1"}), doc("Secret", "pw", stringData={"p": "x"})], FakeDiscovery(),
                           opts, lambda m: None)
    p.stamp_all([cm, secret], "s", None)
    unkeyed = secret.checksum
    assert cm.manifest["metadata"]["annotations"]["stacksync.io/record-namespace"] == "ops"
    p.stamp_all([secret], "s", b"k" * 32)
    assert secret.checksum != unkeyed  # a Secret's checksum depends on the stack's key (never matches without it)
    assert cm.named() == "ConfigMap ns/c" and cm.api_version == "v1"
    assert p.prepare(None, FakeDiscovery(), opts, lambda m: None) == []
    with pytest.raises(p.PrepareError, match="resources must be a list of manifests"):
        p.prepare({"kind": "ConfigMap"}, FakeDiscovery(), opts, lambda m: None)


# -- the checksums of a kept render: made once, taken while the identity is the same -------------------------------

def counted_payloads(monkeypatch):
    made = []
    real = p.checksum_payload
    monkeypatch.setattr(p, "checksum_payload", lambda m, oid: made.append(oid.name) or real(m, oid))
    return made


def stamped(desired):
    p.stamp_all(desired, "s", b"k" * 32)
    return [(d.oid, d.checksum, d.manifest) for d in desired]


def kept_render():
    return [doc(name="a", data={"x": "1"}), None, doc("Namespace", "team", namespace="ignored"),
            doc("Secret", "pw", stringData={"p": "x"}), doc(name="b", source="b.yaml#0", data={"y": "2"})]


def test_a_renders_checksums_are_made_once_and_taken_while_the_identity_is_the_same(monkeypatch):
    made = counted_payloads(monkeypatch)
    opts = StackOptions("s", namespace="ns")
    first = p.Rendered(kept_render())
    expected = stamped(p.prepare(first, FakeDiscovery(), opts, lambda m: None))
    assert made == ["a", "team", "pw", "b"] and first.added
    # index -> identity, payload length, plain checksum; never a Secret's (keyed)
    assert sorted(first.checksums) == ["0", "2", "4"]
    assert first.checksums["0"][:4] == ["", "ConfigMap", "ns", "a"] and first.checksums["0"][5].startswith("sha256:")
    del made[:]
    again = p.Rendered(kept_render(), checksums=first.checksums)
    assert stamped(p.prepare(again, FakeDiscovery(), opts, lambda m: None)) == expected
    assert made == ["pw"] and not again.added  # the Secret only: its checksum is keyed
    # another default namespace: other identities, made again (and remembered instead)
    del made[:]
    other = p.Rendered(kept_render(), checksums=dict(first.checksums))
    moved = stamped(p.prepare(other, FakeDiscovery(), StackOptions("s", namespace="ns2"), lambda m: None))
    assert made == ["a", "pw", "b"] and other.added and other.checksums["0"][2] == "ns2"
    plain = stamped(p.prepare(kept_render(), FakeDiscovery(), StackOptions("s", namespace="ns2"), lambda m: None))
    assert moved == plain


def test_a_remembered_checksum_still_has_the_size_checked_and_a_malformed_entry_is_not_taken(monkeypatch):
    opts = StackOptions("s", namespace="ns")
    first = p.Rendered([doc(name="a", data={"x": "1"})])
    p.prepare(first, FakeDiscovery(), opts, lambda m: None)
    entry = first.checksums["0"]
    big = p.Rendered([doc(name="a", data={"x": "é" * MIB})], checksums={"0": entry})
    with pytest.raises(p.PrepareError, match="too large"):  # the data's size is the manifest's, not the memo's
        p.prepare(big, FakeDiscovery(), opts, lambda m: None)
    made = counted_payloads(monkeypatch)
    for bad in (entry[:5], [*entry[:4], "12", entry[5]], "text", [*entry[:3], None, 1, entry[5]]):
        odd = p.Rendered([doc(name="a", data={"x": "1"})], checksums={"0": bad})
        (d,) = p.prepare(odd, FakeDiscovery(), opts, lambda m: None)
        assert d.checksum == entry[5]
    assert made == ["a"] * 4


def test_keep_hands_the_checksums_to_the_action_once_and_only_when_added():
    kept = []
    rendered = p.Rendered([doc(name="a")], keep=kept.append)
    rendered.keep()
    assert kept == []
    p.prepare(rendered, FakeDiscovery(), StackOptions("s", namespace="ns"), lambda m: None)
    rendered.keep()
    rendered.keep()
    assert len(kept) == 1 and list(kept[0]) == ["0"]
