"""plan.py: the prune decision on a live object, apply stages, the prune budget, terminating objects."""

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.base.constants import IGNORE_ANNOTATION
from ansible_collections.stacksync.k8s.plugins.module_utils.base.identity import ObjectId
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import objects as o
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import plan as p

NS = "apps"


@pytest.mark.parametrize("max_prune,total,limit", [
    (None, 0, 10), (None, 15, 10), (None, 21, 11), (None, 1000, 500),
    ("25", 1000, 25), (7, 3, 7), ("0", 10, 0),
    ("30%", 10, 3), ("33%", 10, 4), ("100%", 1234, 1234), ("0%", 50, 0), (" 50% ", 3, 2),
])
def test_prune_limit(max_prune, total, limit):
    assert p.prune_limit(max_prune, total) == limit


@pytest.mark.parametrize("bad", ["-1", "abc", "150%", "1.5", "%", "-5%"])
def test_prune_limit_rejects_nonsense(bad):
    with pytest.raises(ValueError, match="max_prune"):
        p.prune_limit(bad, 10)


def test_budget_message_lists_what_would_be_deleted():
    ids = [ObjectId("", "ConfigMap", NS, f"c{i:02d}") for i in range(25)]
    assert p.prune_budget_problem(ids[:10], 12, None) is None
    msg = p.prune_budget_problem(ids, 30, None)
    assert "refusing to prune 25 of the stack's 30 objects" in msg and "default: half, at least 10" in msg
    assert "ConfigMap apps/c00" in msg and "ConfigMap apps/c19" in msg and "and 5 more" in msg
    assert "c20" not in msg
    assert "max_prune allows (5 = 5)" in p.prune_budget_problem(ids[:6], 30, "5")


def test_terminating():
    assert p.is_terminating({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}})
    assert not p.is_terminating({"metadata": {}})


def cm(name="c", ns=None, **data):
    meta = {"name": name}
    if ns:
        meta["namespace"] = ns
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data or {"a": "1"}}


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


def test_facts_keep_what_cannot_be_proven_ours_to_delete_and_a_claim_still_releases():
    from ansible_collections.stacksync.k8s.plugins.module_utils.base.identity import identity_digest
    from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.discovery import ResourceInfo

    info = ResourceInfo("", "v1", "ConfigMap", "configmaps", True, ("list", "delete", "patch"))
    ids = [ObjectId("", "ConfigMap", "n", name) for name in ("gone", "unknown", "claimed")]
    ours = {oid: (info, live(oid)) for oid in ids}
    unreadable = p.Reason(p.RECORDS_UNREADABLE, "cannot read them")
    kept = {ids[1]: unreadable, ids[2]: unreadable}
    from ansible_collections.stacksync.k8s.plugins.module_utils.engine.record import Claim

    declared = {identity_digest(ids[2]): [Claim("t", "rec-t2"), Claim("t", "rec-t1")]}
    plan = p.prune_plan(ours, "s", set(), set(), declared, {}, kept)
    assert [c[0] for c in plan.candidates] == [ids[0]]
    assert [(k[0], k[3].code) for k in plan.kept] == [(ids[1], p.RECORDS_UNREADABLE)]
    assert [(r[0], r[3]) for r in plan.releases] == [(ids[2], "t")]  # handing it over deletes nothing
    assert type(plan.releases[0][3]) is str and plan.release_namespaces == {ids[2]: "rec-t1"}  # plain str in results
    assert plan.rules == ("s", set(), set()) and plan.facts[2] is kept  # what a re-read object is decided by again
