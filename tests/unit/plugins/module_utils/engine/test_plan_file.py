"""plan_file.py: a check's plan -- its decision fingerprints, digests, compact lists and size."""

import copy
import json
import uuid

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.base.constants import (
    CHECKSUM_ANNOTATION,
    IGNORE_ANNOTATION,
    OWNER_ANNOTATION,
    PRUNE_ANNOTATION,
    PRUNE_MARK_ANNOTATION,
    STACK_LABEL,
)
from ansible_collections.stacksync.k8s.plugins.module_utils.base.identity import ObjectId
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import objects as o
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import plan_file as pf
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.observe import Snapshot
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.plan import Plan, PrunePlan
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.discovery import ResourceInfo

CM = ResourceInfo("", "v1", "ConfigMap", "configmaps", True, ("list", "delete", "patch"))
DEPLOY = ResourceInfo("apps", "v1", "Deployment", "deployments", True, ("list", "delete", "patch"))
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def live(name, ns="web", info=CM, uid=None, rv="7"):
    oid = ObjectId(info.group, info.kind, ns, name)
    obj = o.stamp({"apiVersion": info.api_version, "kind": info.kind, "metadata": {"name": name, "namespace": ns}},
                  "apps", oid, "sha256:" + "0" * 64)
    obj["metadata"].update(uid=uid or str(uuid.uuid5(uuid.NAMESPACE_URL, name)), resourceVersion=rv)
    return oid, info, obj


def test_the_fingerprint_is_what_decides_a_prune_not_status_or_resource_version():
    _oid, _info, obj = live("c")
    fp = pf.fingerprint(obj)
    same = copy.deepcopy(obj)
    same["metadata"]["resourceVersion"] = "99"  # a controller's bump
    same["status"] = {"phase": "whatever"}
    same["data"] = {"k": "v"}
    same["metadata"]["labels"]["app"] = "x"  # a label that decides nothing
    same["metadata"]["annotations"]["deployment.kubernetes.io/revision"] = "3"
    same["metadata"]["managedFields"] = [{"manager": "kube-controller-manager"}]
    assert pf.fingerprint(same) == fp and len(fp) == pf.FP_LENGTH

    def changed(edit):
        other = copy.deepcopy(obj)
        edit(other["metadata"])
        return pf.fingerprint(other)

    for edit in (lambda m: m.update(uid="another"),
                 lambda m: m["labels"].update({STACK_LABEL: "other"}),
                 lambda m: m["annotations"].update({OWNER_ANNOTATION: "x"}),
                 lambda m: m["annotations"].update({CHECKSUM_ANNOTATION: "sha256:1"}),
                 lambda m: m["annotations"].update({IGNORE_ANNOTATION: "true"}),
                 lambda m: m["annotations"].update({PRUNE_ANNOTATION: "disabled"}),
                 lambda m: m["annotations"].update({PRUNE_MARK_ANNOTATION: "2026-05-01T10:00:00Z"}),
                 lambda m: m.update(ownerReferences=[{"kind": "ReplicaSet", "name": "r", "uid": "u"}]),
                 lambda m: m.update(deletionTimestamp="2026-05-01T10:00:00Z")):
        assert changed(edit) != fp


def test_digests_are_canonical():
    assert pf.digest({"b": [1, "é"], "a": None}) == pf.digest({"a": None, "b": [1, "é"]})
    assert pf.digest({"a": 1}) != pf.digest({"a": "1"})
    assert pf.digest({}).startswith("sha256:") and len(pf.digest({})) == 71


def plan_of(candidates=(), marks=(), waiting=(), to_apply=(), ours=None):
    prune = PrunePlan()
    prune.candidates, prune.marks, prune.waiting = list(candidates), list(marks), list(waiting)
    snap = Snapshot()
    snap.ours = ours or {}
    return Plan(snap, list(to_apply), [], [], prune)


def test_a_stack_entry_lists_deletions_marks_and_waiting_objects_compactly():
    c1, c2, d = live("c1"), live("c2", ns="api"), live("front", info=DEPLOY)
    m, w = live("m"), live("w")
    entry = pf.stack_entry(plan_of([c1, c2, d], [(*m, 1777629600.0)], [(*w, None)]), "github.com/acme/apps#deploy",
                           COMMIT, "kube-system")
    assert entry["prune"] == {
        "v1 ConfigMap": {"web": [["c1", c1[2]["metadata"]["uid"], "7", pf.fingerprint(c1[2])]],
                         "api": [["c2", c2[2]["metadata"]["uid"], "7", pf.fingerprint(c2[2])]]},
        "apps/v1 Deployment": {"web": [["front", d[2]["metadata"]["uid"], "7", pf.fingerprint(d[2])]]}}
    assert entry["mark"]["v1 ConfigMap"]["web"][0][4] == "2026-05-01T10:00:00Z"
    assert entry["wait"]["v1 ConfigMap"]["web"][0][4] is None
    assert (entry["source"], entry["commit"], entry["record_namespace"]) == ("github.com/acme/apps#deploy", COMMIT,
                                                                            "kube-system")
    assert entry["apply"] == {"create": 0, "change": 0, "digest": pf.digest([])}
    assert pf.count(entry, "prune") == 3 and pf.count(entry, "mark") == 1
    assert pf.seal(entry) == entry  # sealed: its digest is over the rest
    # a stack the gate did not let prune lists no deletion
    assert pf.stack_entry(plan_of([c1]), pruning=False)["prune"] == {}


def test_the_plan_digest_covers_every_stack_and_the_host():
    a = pf.stack_entry(plan_of([live("c1")]))
    b = pf.stack_entry(plan_of())
    doc = pf.document({"a": a, "b": b}, "prod-1")
    assert doc["format"] == pf.FORMAT and doc["host"] == "prod-1" and doc["stacks"] == {"a": a, "b": b}
    assert doc["digest"] == pf.plan_digest(doc)
    assert pf.document({"a": a, "b": b}, "prod-2")["digest"] != doc["digest"]
    assert pf.document({"a": a}, "prod-1")["digest"] != doc["digest"]


def test_a_stack_entry_of_two_runs_takes_the_applies_of_one_and_the_deletions_of_the_other():
    apply_run = pf.stack_entry(plan_of(to_apply=[]), commit=COMMIT)
    prune_run = pf.stack_entry(plan_of([live("c1")]), commit=COMMIT, over_budget=True)
    out = pf.merged(apply_run, prune_run)
    assert out["apply"] == apply_run["apply"] and out["prune"] == prune_run["prune"] and out["over_budget"]
    assert pf.merged(apply_run, None)["prune"] == {} and "over_budget" not in pf.merged(apply_run, None)


def test_artifact_keys_are_one_per_host_and_valid_variable_names():
    assert pf.artifact_key("prod-1.example.com") == "stacksync_plan_prod_1_example_com"
    assert pf.artifact_key("localhost") == "stacksync_plan_localhost"


@pytest.mark.parametrize("objects", [10000])
def test_the_plan_of_10000_deletions_stays_under_900_kb(objects):
    """docs/awx.md states the figure: about 85 bytes per deletion (names of 16 characters), creates and changes cost
    nothing per object (counts and a digest)."""
    prune = [live(f"app-config-{i:05d}", ns=f"team-{i % 10:02d}", uid=str(uuid.uuid4()), rv=str(1000000 + i))
             for i in range(objects)]
    doc = pf.document({"apps": pf.stack_entry(plan_of(prune), "github.com/acme/apps#deploy", COMMIT, "kube-system")},
                      "prod-1")
    size = len(json.dumps(doc, separators=(",", ":")))
    assert 780000 < size < 900000, size
