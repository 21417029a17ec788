"""record.py: state object names, the record's owner check, the Lease lock (injected clock)."""

import itertools
import re

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.base.constants import RECORD_LABEL, RECORD_NAMESPACE_ANNOTATION
from ansible_collections.stacksync.k8s.plugins.module_utils.base.identity import ObjectId
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.record import (
    RecordError,
    StackKey,
    StackRecord,
    bound_elsewhere,
    could_be_state,
    is_state_object,
    is_unbound,
    object_name,
    read_records,
)
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.client import ApiError

DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


class FakeApi:
    """Objects by path with resourceVersions: create (409 if present), get, replace (409 on a stale
    resourceVersion), delete, apply, list. ``fail`` maps a method to an ApiError raised once per entry."""

    def __init__(self):
        self.objects = {}
        self.rv = itertools.count(1)
        self.fail = {}
        self.forbidden = set()  # collections whose list answers 403 ("/api/v1/configmaps": cluster-wide)

    def _maybe_fail(self, method):
        errors = self.fail.get(method)
        if errors:
            raise errors.pop(0)

    def _store(self, path, body):
        body = dict(body)
        body["metadata"] = dict(body.get("metadata") or {}, resourceVersion=str(next(self.rv)), uid="uid-" + path)
        self.objects[path] = body
        return body

    def create(self, collection, body):
        self._maybe_fail("create")
        path = collection + "/" + body["metadata"]["name"]
        if path in self.objects:
            raise ApiError(409, "AlreadyExists")
        return self._store(path, body)

    def get_or_none(self, path):
        return self.objects.get(path)

    def replace(self, path, body):
        self._maybe_fail("replace")
        current = self.objects.get(path)
        if current is None:
            raise ApiError(404, "NotFound")
        if current["metadata"]["resourceVersion"] != body["metadata"].get("resourceVersion"):
            raise ApiError(409, "Conflict", "the object has been modified")
        return self._store(path, body)

    def apply(self, path, body, field_manager, force=False):
        return self._store(path, body)

    def delete(self, path, preconditions=None, **_kw):
        self.objects.pop(path, None)

    def list(self, collection, label_selector=None, limit=None):
        if collection in self.forbidden:
            raise ApiError(403, "Forbidden", "configmaps is forbidden")
        wide = re.fullmatch(r"/api/v1/(\w+)", collection)
        pattern = re.compile(rf"/api/v1/namespaces/[^/]+/{wide.group(1)}/[^/]+") if wide else None
        return [o for p, o in self.objects.items() if (pattern.fullmatch(p) if pattern else p.startswith(collection + "/"))
                and (label_selector is None or label_selector in ((o.get("metadata") or {}).get("labels") or {}))]


# -- names ------------------------------------------------------------------------------------------
def test_plain_stack_names_are_kept():
    assert object_name("apps") == "stacksync-apps"
    assert object_name("apps", "-key") == "stacksync-apps-key"


@pytest.mark.parametrize("stack", ["Foo", "foo_bar", "A", "X" * 63, "Foo.Bar_baz-1"])
def test_derived_names_are_valid_and_cannot_equal_a_plain_one(stack):
    name = object_name(stack)
    assert DNS_SUBDOMAIN.fullmatch(name) and len(name) <= 253
    # longer than any "stacksync-" + a 63-character label value: no plain stack can produce it
    assert len(name) > len("stacksync-") + 63
    assert DNS_SUBDOMAIN.fullmatch(object_name(stack, "-key"))


def test_distinct_stack_names_never_share_a_record():
    # the old scheme mapped "Foo" and "foo-<8 hex>" to the same record
    old_style = "foo-" + object_name("Foo").rsplit("-", 1)[1][:8]
    names = ["Foo", "foo", "FOO", "foo_", old_style, "f-o-o", "Foo.", "foo.x"]
    assert len({object_name(n) for n in names if n}) == len([n for n in names if n])


def test_state_objects():
    rn = "kube-system"
    assert is_state_object(ObjectId("", "ConfigMap", rn, "stacksync-other"), rn)
    assert is_state_object(ObjectId("", "Secret", rn, "stacksync-other-key"), rn)
    assert is_state_object(ObjectId("coordination.k8s.io", "Lease", rn, "stacksync-x"), rn)
    assert not is_state_object(ObjectId("", "ConfigMap", "apps", "stacksync-other"), rn)
    assert not is_state_object(ObjectId("", "ConfigMap", rn, "settings"), rn)
    assert not is_state_object(ObjectId("apps", "Deployment", rn, "stacksync-x"), rn)


# -- the record ---------------------------------------------------------------------------------------
def test_record_round_trip_and_owner_check():
    api = FakeApi()
    rec = StackRecord(api, "ns", "apps", "stacksync")
    assert rec.load() is None
    rec.save(group_kinds={("", "ConfigMap")}, objects="aa,bb")
    again = StackRecord(api, "ns", "apps", "stacksync")
    assert again.load()["stack"] == "apps" and again.group_kinds == {("", "ConfigMap")}
    # a record that says it is another stack's (written by hand, or by another stack) is refused
    api.objects[rec.path]["data"] = dict(api.objects[rec.path]["data"], stack="intruder")
    with pytest.raises(RecordError, match="does not belong to stack 'apps'"):
        StackRecord(api, "ns", "apps", "stacksync").load()
    api.objects[rec.path]["data"]["stack"] = "apps"
    api.objects[rec.path]["metadata"]["labels"] = {RECORD_LABEL: "intruder"}
    with pytest.raises(RecordError):
        StackRecord(api, "ns", "apps", "stacksync").load()


def test_key_owner_check():
    api = FakeApi()
    key = StackKey(api, "ns", "apps", "stacksync")
    created = key.create()
    assert key.load() == created
    api.objects[key.path]["metadata"]["labels"] = {RECORD_LABEL: "other"}
    with pytest.raises(RecordError, match="key Secret"):
        key.load()


def test_claims_are_read_from_the_records_of_every_namespace():
    api = FakeApi()
    StackRecord(api, "ns", "a", "m").save(objects="d1,d2")
    StackRecord(api, "ns", "b", "m").save(objects="d2,d3")
    StackRecord(api, "other", "c", "m").save(objects="d3,d5")  # a record in another record namespace counts too
    StackRecord(api, "tenant", "a", "m").save(objects="d1,d6")  # so does a stack of the same name kept there
    forged = StackRecord(api, "ns", "e", "m")
    forged.save(objects="d4")
    api.objects[forged.path]["data"]["stack"] = "not-e"  # a record whose fields disagree is ignored
    records = read_records(api, ["ns"])
    assert records.cluster_wide and not records.missing
    claims = records.claims("a", "ns")
    assert claims == {"d1": ["a"], "d2": ["b"], "d3": ["b", "c"], "d5": ["c"], "d6": ["a"]}
    assert [c.record_namespace for c in claims["d3"]] == ["ns", "other"] and claims["d1"][0].record_namespace == "tenant"
    assert records.namesakes("a", "ns") == ["tenant"] and records.namesakes("b", "ns") == []


def test_without_the_right_to_list_records_cluster_wide_each_known_namespace_is_read_and_gaps_named():
    api = FakeApi()
    StackRecord(api, "ns", "b", "m").save(objects="d2")
    StackRecord(api, "other", "c", "m").save(objects="d3")
    StackRecord(api, "hidden", "h", "m").save(objects="d4")
    api.forbidden = {"/api/v1/configmaps", "/api/v1/namespaces/other/configmaps"}
    records = read_records(api, ["ns", "other", "ns"])
    assert not records.cluster_wide
    assert records.missing == ["list configmaps in namespace other"]
    assert records.claims("a", "ns") == {"d2": ["b"]}  # not d4: a namespace nobody named is not read
    api.forbidden = {"/api/v1/configmaps"}
    assert not read_records(api, ["ns", "other"]).missing

    def broken(*_a, **_kw):
        raise ApiError(500, "InternalError")

    api.list = broken
    with pytest.raises(ApiError):  # not a missing right: the run fails rather than guess
        read_records(api, ["ns"])


def test_state_objects_of_every_known_record_namespace_and_bindings():
    oid = ObjectId("", "ConfigMap", "tenant-b", "stacksync-b")
    assert not is_state_object(oid, "tenant-a") and is_state_object(oid, ["tenant-a", "tenant-b"])
    assert could_be_state(oid) and could_be_state(ObjectId("coordination.k8s.io", "Lease", "x", "stacksync-b"))
    assert not could_be_state(ObjectId("", "ConfigMap", "x", "b-stacksync"))
    bound = {"metadata": {"annotations": {RECORD_NAMESPACE_ANNOTATION: "tenant-b"}}}
    assert bound_elsewhere(bound, "tenant-a") == "tenant-b" and bound_elsewhere(bound, "tenant-b") is None
    assert bound_elsewhere({"metadata": {}}, "tenant-a") is None and is_unbound({"metadata": {}}) and not is_unbound(bound)
