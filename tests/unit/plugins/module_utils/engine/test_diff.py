"""diff.py: containment, in-sync check, Secret redaction in diffs."""

import json

from ansible_collections.stacksync.k8s.plugins.module_utils.base.constants import CHECKSUM_ANNOTATION
from ansible_collections.stacksync.k8s.plugins.module_utils.base.identity import ObjectId
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import objects as o
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.diff import contains, in_sync, object_diff, readable, redact_secret

from tests.unit.plugins.module_utils.engine.test_objects import cm


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


# -- the diffs people read ----------------------------------------------------------------------------
def live_deployment(replicas, checksum):
    """A Deployment as the API server sends it: metadata first, its stamps, a status."""
    return {"metadata": {"name": "web", "namespace": "demo", "labels": {"stacksync.io/stack": "demo"},
                         "annotations": {"stacksync.io/checksum": checksum, "stacksync.io/owner": "8052958187ee",
                                         "stacksync.io/record-namespace": "kube-system"}},
            "spec": {"replicas": replicas, "template": {"spec": {"containers": [{"name": "web", "image": "nginx"}]}}},
            "status": {"replicas": 2}, "apiVersion": "apps/v1", "kind": "Deployment"}


def test_a_changed_object_reads_as_yaml_without_our_stamps():
    before = live_deployment(2, "sha256:aaa")
    after = dict(live_deployment(3, "sha256:bbb"))
    after = {"apiVersion": after.pop("apiVersion"), "kind": after.pop("kind"), **after}  # another key order
    (d,) = readable([dict(object_diff(before, after), before_header="x", after_header="x")])
    assert d["before"].splitlines()[:6] == ["apiVersion: apps/v1", "kind: Deployment", "metadata:", "  name: web",
                                            "  namespace: demo", "  labels:"]
    assert d["before"].splitlines()[-2:] == ["status:", "  replicas: 2"]
    changed = [(a, b) for a, b in zip(d["before"].splitlines(), d["after"].splitlines()) if a != b]
    assert changed == [("  replicas: 2", "  replicas: 3")]  # the one line that changed, whatever the key order
    assert "stacksync.io/checksum" not in d["before"] + d["after"] and "annotations" not in d["after"]
    assert "record-namespace" not in d["before"] + d["after"]
    assert "stacksync.io/stack: demo" in d["after"]  # the stack label is the object's, and stays


def test_a_multi_line_value_reads_as_a_block_and_a_secret_stays_redacted():
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"nginx.conf": "a\nb\n"}}
    (d,) = readable([object_diff(None, cm)])
    assert d["before"] == "" and "  nginx.conf: |\n    a\n    b\n" in d["after"]
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {"k": "c2VjcmV0"}}
    (d,) = readable([object_diff(secret, dict(secret, data={"k": "bmV3"}), secret=True)])
    assert "c2VjcmV0" not in d["before"] + d["after"] and "k: <redacted, changed>" in d["after"]
    # a created object summarised in one line stays as it is
    assert readable([{"prepared": "+ ConfigMap c (created, 3 bytes)\n"}]) == [{"prepared": "+ ConfigMap c (created, 3 bytes)\n"}]
