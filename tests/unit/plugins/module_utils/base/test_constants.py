"""constants.py: the metadata keys the collection writes and reads -- valid Kubernetes keys, under its own domain, and
the stamps (``STAMPED_KEYS``) exactly what the engine stamps and leaves out of an object's checksum."""

import copy
from pathlib import Path

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.base import constants as K
from ansible_collections.stacksync.k8s.plugins.module_utils.base.identity import ObjectId
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.objects import checksum, stamp
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.validation import valid_label_key, valid_label_value

REPO = Path(__file__).resolve().parents[5]
KEYS = sorted(v for n, v in vars(K).items() if n.endswith(("_LABEL", "_ANNOTATION")))


def test_the_keys_are_the_collections_own_and_valid():
    assert len(KEYS) == 11 and len(set(KEYS)) == len(KEYS)
    for key in KEYS:
        assert key.startswith(K.DOMAIN + "/") and valid_label_key(key), key
    assert valid_label_value(K.DEFAULT_FIELD_MANAGER)


@pytest.mark.parametrize("key", [K.IGNORE_ANNOTATION, K.PRUNE_ANNOTATION, K.SSA_ANNOTATION, K.RECREATE_ANNOTATION,
                                 K.STACK_LABEL, K.RECORD_LABEL])
def test_the_keys_people_set_or_select_on_are_documented(key):
    docs = "\n".join(p.read_text() for p in [REPO / "README.md", *(REPO / "docs").glob("*.md")])
    assert key in docs


def test_stamped_keys_are_what_the_engine_stamps_and_none_of_them_changes_a_checksum():
    manifest = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "n",
                                                                      "labels": {"app": "x"}}, "data": {"a": "1"}}
    oid = ObjectId("", "ConfigMap", "n", "c")
    digest = checksum(manifest, oid)
    stamped = copy.deepcopy(manifest)
    stamp(stamped, "web", oid, digest)
    meta = stamped["metadata"]
    added = (set(meta["labels"]) - {"app"}) | set(meta.get("annotations") or {})
    assert added <= set(K.STAMPED_KEYS) and {K.STACK_LABEL, K.CHECKSUM_ANNOTATION, K.OWNER_ANNOTATION} <= added
    meta["annotations"][K.RECORD_NAMESPACE_ANNOTATION] = "kube-system"
    meta["annotations"][K.SOURCE_ANNOTATION] = "apps/web.yaml#1"
    assert checksum(stamped, oid) == digest  # our own stamps never change what the object is
    meta["annotations"][K.IGNORE_ANNOTATION] = "true"  # a person's annotation does
    assert checksum(stamped, oid) != digest
