"""Manifests sent to a module process (its resources file) or run in process are encoded as Ansible encodes module arguments."""

import datetime
import json

import pytest
from ansible_collections.stacksync.k8s.plugins.plugin_utils.stack_action import ARGS_ENCODER, args_json

datatag = pytest.importorskip("ansible._internal._datatag._tags", reason="data tags: ansible-core >= 2.19")


def ansible_encoded(value):
    return json.dumps(value, cls=ARGS_ENCODER, separators=(",", ":"))


def test_tagged_manifests_are_encoded_as_ansible_encodes_them():
    origin = datatag.Origin(path="/repo/apps/web.yaml", line_num=3)
    name = datatag.TrustedAsTemplate().tag("web")
    manifest = origin.tag({"apiVersion": "v1", "kind": "ConfigMap", "metadata": origin.tag({"name": name}),
                           "data": {"replicas": origin.tag(3), "ratio": 0.5, "ok": True, "none": None,
                                    "text": "é\u2028\"quoted\""}, "list": origin.tag(["a", 1]), "pair": ("x", 2)})
    encoded = args_json([manifest])
    assert encoded == ansible_encoded([manifest])
    assert json.loads(encoded)[0]["metadata"] == {"name": "web"}


def test_values_json_cannot_hold_go_through_ansibles_encoder():
    manifest = {"kind": "ConfigMap", "data": {"when": datetime.date(2026, 12, 3), "set": {"a"}}}
    encoded = args_json([manifest])
    assert encoded == ansible_encoded([manifest])
    assert json.loads(encoded)[0]["data"] == {"when": "2026-12-03", "set": ["a"]}
