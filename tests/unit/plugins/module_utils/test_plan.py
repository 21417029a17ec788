"""plan.py: which Namespace contents keep it, the prune budget, terminating objects."""

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils import contents
from ansible_collections.stacksync.k8s.plugins.module_utils import plan as p
from ansible_collections.stacksync.k8s.plugins.module_utils.identity import ObjectId

NS = "apps"


def obj(kind, name, uid, owners=(), group=""):
    meta = {"name": name, "namespace": NS, "uid": uid}
    if owners:
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "X", "name": "x", "uid": o} for o in owners]
    return ObjectId(group, kind, NS, name), {"metadata": meta}


def test_a_namespace_with_only_what_goes_with_it_has_no_blockers():
    deploy = obj("Deployment", "web", "u-dep", group="apps")
    objects = [
        deploy,
        obj("ReplicaSet", "web-1", "u-rs", owners=["u-dep"], group="apps"),
        obj("Pod", "web-1-a", "u-pod", owners=["u-rs"]),  # grandchild of what we prune
        obj("ConfigMap", "kube-root-ca.crt", "u-ca"),  # the cluster's own
        obj("ServiceAccount", "default", "u-sa"),
        obj("Secret", "sa-token", "u-tok", owners=["u-sa"]),  # owned by the cluster's own object
    ]
    assert contents.namespace_blockers(NS, objects, {deploy[0]}, {"u-dep"}) == []


def test_an_owner_outside_the_prune_set_keeps_the_namespace():
    # a foreign object whose owner is a foreign cluster-scoped object (the owner is not in the namespace)
    foreign = obj("ConfigMap", "theirs", "u-1", owners=["u-cluster-scoped-foreign"])
    assert contents.namespace_blockers(NS, [foreign], set(), set()) == [foreign[0]]
    # the same object is harmless when its cluster-scoped owner is pruned by this run
    assert contents.namespace_blockers(NS, [foreign], set(), {"u-cluster-scoped-foreign"}) == []


def test_a_chain_through_a_foreign_object_keeps_the_namespace():
    objects = [obj("StatefulSet", "db", "u-db", group="apps"),  # someone else's, no owner: a blocker itself
               obj("Pod", "db-0", "u-pod", owners=["u-db"])]
    blockers = contents.namespace_blockers(NS, objects, set(), set())
    assert sorted(b.name for b in blockers) == ["db", "db-0"]


def test_two_owners_both_must_go():
    mine = obj("Deployment", "mine", "u-mine", group="apps")
    child = obj("ConfigMap", "shared-child", "u-c", owners=["u-mine", "u-other"])
    assert contents.namespace_blockers(NS, [mine, child], {mine[0]}, {"u-mine"}) == [child[0]]


def test_owner_cycle_does_not_loop_and_keeps():
    a = obj("ConfigMap", "a", "u-a", owners=["u-b"])
    b = obj("ConfigMap", "b", "u-b", owners=["u-a"])
    assert sorted(x.name for x in contents.namespace_blockers(NS, [a, b], set(), set())) == ["a", "b"]


def test_incomplete_listing_returns_only_certain_blockers():
    objects = [obj("Pod", "child", "u-p", owners=["u-unknown"]), obj("ConfigMap", "plain", "u-x")]
    assert [b.name for b in contents.namespace_blockers(NS, objects, set(), set(), complete=False)] == ["plain"]
    assert sorted(b.name for b in contents.namespace_blockers(NS, objects, set(), set())) == ["child", "plain"]


def test_endpoints_of_a_pruned_service_do_not_block():
    svc = ObjectId("", "Service", NS, "web")
    ep = obj("Endpoints", "web", "u-ep")
    other = obj("Endpoints", "db", "u-ep2")
    assert contents.namespace_blockers(NS, [ep, other], {svc}, set()) == [other[0]]


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
