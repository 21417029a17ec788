"""diff.py: containment, in-sync check, Secret redaction in diffs."""

import json

from ansible_collections.stacksync.k8s.plugins.module_utils import objects as o
from ansible_collections.stacksync.k8s.plugins.module_utils.constants import CHECKSUM_ANNOTATION
from ansible_collections.stacksync.k8s.plugins.module_utils.diff import contains, in_sync, object_diff, redact_secret
from ansible_collections.stacksync.k8s.plugins.module_utils.identity import ObjectId

from tests.unit.plugins.module_utils.test_objects import cm


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


def test_secret_diff_shows_a_changed_key_on_both_sides_with_different_markers():
    """Ansible prints only the lines that differ: a changed key marked the same on both sides was invisible."""
    before = {"kind": "Secret", "data": {"same": "QQ==", "changed": "Qg==", "removed": "Rg=="}}
    after = {"kind": "Secret", "data": {"same": "QQ==", "changed": "Qw==", "added": "RA=="}}
    d = object_diff(before, after, secret=True)
    assert d["before"]["data"]["same"] == d["after"]["data"]["same"] == "<redacted>"
    assert d["before"]["data"]["changed"] != d["after"]["data"]["changed"]
    assert d["before"]["data"] == {"same": "<redacted>", "changed": "<redacted, old value>", "removed": "<redacted, old value>"}
    assert d["after"]["data"] == {"same": "<redacted>", "changed": "<redacted, changed>", "added": "<redacted, changed>"}
    for value in ("QQ==", "Qg==", "Qw==", "RA==", "Rg=="):
        assert value not in json.dumps(d)
