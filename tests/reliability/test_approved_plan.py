"""A plan you can approve (issue 29): a check emits the plan, a run given it deletes exactly its deletions, and every
way the plan goes stale either fails the run before any write or skips what no longer applies.

The engine runs in-process against ``kube``: the simulator, or a real kube-apiserver (``make test-real``).
"""

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.base.constants import IGNORE_ANNOTATION
from ansible_collections.stacksync.k8s.plugins.module_utils.runner import plan_of

from . import helpers as H

NS_PREFIX = "ap"


def cm(name, ns, value="1"):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns}, "data": {"k": value}}


def run(admin, ns, resources, **options):
    """``(manager, changeset, error)`` of one engine run of stack ``apps`` (its record in ``ns``)."""
    m = H.manager(admin, "apps", record_namespace=ns, namespace=ns, **options)
    try:
        return m, m.sync(resources), None
    except H.StackError as e:
        return m, e.changeset, e


def check(admin, ns, resources, **options):
    """The plan a check of ``resources`` emits (``emit_plan``)."""
    warnings = []
    m, _cs, error = run(admin, ns, resources, check_mode=True, emit_plan=True, **options)
    assert error is None, error
    return plan_of(m, m.opts, {"emit_plan": True}, warnings.append), warnings


def uid_of(admin, ns, name):
    obj = admin.get_or_none(f"/api/v1/namespaces/{ns}/configmaps/{name}")
    return obj and obj["metadata"]["uid"]


def names(refs):
    return sorted(r["name"] for r in refs)


@pytest.fixture
def synced(admin, ns):
    """Stack ``apps`` synced with 12 ConfigMaps; ``keep`` stays in git, ``c1`` .. ``c11`` leave it."""
    resources = [cm("keep", ns)] + [cm(f"c{i}", ns) for i in range(1, 12)]
    _m, _cs, error = run(admin, ns, resources)
    assert error is None, error
    return [cm("keep", ns, "2")]


def test_an_approved_plan_over_the_budget_deletes_exactly_its_deletions(admin, ns, synced):
    # without a plan the budget refuses: 11 of 12 is more than half
    _m, _cs, error = run(admin, ns, synced)
    assert error is not None and "refusing to prune 11 of the stack's 12 objects" in str(error)
    plan, warnings = check(admin, ns, synced)
    assert any("the plan deletes 11 of the stack's 12 objects, more than max_prune allows (10)" in w for w in warnings)
    entry = plan["stacks"]["apps"]
    listed = {row[0]: row[1] for rows in entry["prune"]["v1 ConfigMap"].values() for row in rows}
    assert sorted(listed) == sorted(f"c{i}" for i in range(1, 12)) and entry["over_budget"]
    assert entry["apply"]["change"] == 1 and entry["apply"]["create"] == 0
    assert listed == {n: uid_of(admin, ns, n) for n in listed}  # uid-exact
    with H.recording(admin) as writes:
        _m, cs, error = run(admin, ns, synced, approved_plan=plan)
    assert error is None, error
    assert names(cs.pruned) == sorted(listed) and [r["name"] for r in cs.applied if r["action"] == "configured"] == ["keep"]
    deletes = sorted(path.rsplit("/", 1)[1] for method, path in writes if method == "DELETE" and "/configmaps/" in path)
    assert deletes == sorted(listed) and all(uid_of(admin, ns, n) is None for n in listed)


def test_a_new_prune_candidate_fails_the_run_before_any_write(admin, ns, synced):
    # c11 is protected by the ignore annotation when the plan is made, and loses it before the run
    H.merge_patch(admin, H.oid_of(admin.get(f"/api/v1/namespaces/{ns}/configmaps/c11")),
                  {"metadata": {"annotations": {IGNORE_ANNOTATION: "true"}}})
    plan, _w = check(admin, ns, synced)
    assert "c11" not in [r[0] for rows in plan["stacks"]["apps"]["prune"]["v1 ConfigMap"].values() for r in rows]
    H.merge_patch(admin, H.oid_of(admin.get(f"/api/v1/namespaces/{ns}/configmaps/c11")),
                  {"metadata": {"annotations": {IGNORE_ANNOTATION: None}}})
    with H.recording(admin) as writes:
        _m, _cs, error = run(admin, ns, synced, approved_plan=plan)
    assert error is not None and writes == []
    assert "the approved plan does not match what this run would do, so nothing was written" in str(error)
    assert f"ConfigMap {ns}/c11 would be deleted, and the plan does not list its deletion" in str(error)
    assert uid_of(admin, ns, "c1") and uid_of(admin, ns, "keep")


def test_an_object_changed_since_the_plan_fails_the_run_before_any_write(admin, ns, synced):
    synced = [cm("keep", ns)]  # as it is: nothing to apply
    plan, _w = check(admin, ns, synced)
    assert plan["stacks"]["apps"]["apply"]["change"] == 0
    # c5 is deleted and created again with the stack's labels (a restore from a backup): another object
    old = admin.get(f"/api/v1/namespaces/{ns}/configmaps/c5")
    admin.delete(f"/api/v1/namespaces/{ns}/configmaps/c5")
    meta = dict((k, old["metadata"][k]) for k in ("name", "namespace", "labels", "annotations"))
    admin.create(f"/api/v1/namespaces/{ns}/configmaps", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta,
                                                       "data": old["data"]})
    # and someone edits what git sets on `keep` (the run would write it back, which the plan did not say)
    H.merge_patch(admin, H.oid_of(admin.get(f"/api/v1/namespaces/{ns}/configmaps/keep")), {"data": {"k": "edited"}})
    with H.recording(admin) as writes:
        _m, _cs, error = run(admin, ns, synced, approved_plan=plan)
    assert error is not None and writes == [], (error, writes)
    text = str(error)
    assert f"ConfigMap {ns}/c5 is another object than the plan's (uid {uid_of(admin, ns, 'c5')}" in text
    assert "the objects to apply changed since the plan: 0 to create and 1 to change (the plan: 0 and 0)" in text


def test_what_does_not_decide_a_prune_does_not_make_the_plan_stale(admin, ns, synced):
    plan, _w = check(admin, ns, synced, max_prune="100%")
    # a label nobody decides on bumps the resourceVersion of c3; a controller-like manager writes a field of c4
    H.merge_patch(admin, H.oid_of(admin.get(f"/api/v1/namespaces/{ns}/configmaps/c3")),
                  {"metadata": {"labels": {"team": "web"}}})
    H.merge_patch(admin, H.oid_of(admin.get(f"/api/v1/namespaces/{ns}/configmaps/c4")), {"data": {"extra": "1"}},
                  field_manager="some-controller")
    _m, cs, error = run(admin, ns, synced, approved_plan=plan)
    assert error is None, error
    assert names(cs.pruned) == sorted(f"c{i}" for i in range(1, 12))


def test_deletions_that_no_longer_apply_are_skipped_and_reported(admin, ns, synced):
    plan, _w = check(admin, ns, synced)
    admin.delete(f"/api/v1/namespaces/{ns}/configmaps/c2")  # gone meanwhile
    # c3 is declared again (the stack module is given it: same manifest, nothing to apply)
    again = [*synced, cm("c3", ns)]
    _m, cs, error = run(admin, ns, again, approved_plan=plan)
    assert error is None, error
    assert names(cs.pruned) == sorted(f"c{i}" for i in range(1, 12) if i not in (2, 3))
    skipped = dict((r["name"], r) for r in cs.skipped if r["code"] == "plan-skipped")
    assert sorted(skipped) == ["c2", "c3"]
    assert skipped["c2"]["reason"].endswith("it is gone (or no longer the stack's)")
    assert skipped["c3"]["reason"].endswith("it is declared again") and uid_of(admin, ns, "c3")
    assert any(f"ConfigMap {ns}/c3: the approved deletion no longer applies" in w for w in cs.warnings)


def test_a_plan_only_narrows_and_its_digest_detects_accidents(admin, ns, synced):
    # a plan listing a deletion the run would not compute (keep, in git) deletes nothing more
    plan, _w = check(admin, ns, [*synced, *[cm(f"c{i}", ns) for i in range(1, 11)]])
    assert [r[0] for rows in plan["stacks"]["apps"]["prune"]["v1 ConfigMap"].values() for r in rows] == ["c11"]
    forged = plan  # made for another desired set: c1..c10 declared, c11 to go
    _m, _cs, error = run(admin, ns, synced, approved_plan=forged)
    assert error is not None and f"ConfigMap {ns}/c1 would be deleted, and the plan does not list" in str(error)
    # an edited plan (another deletion added, the digest left as it was) is refused before any request
    edited = {**plan, "stacks": {"apps": dict(plan["stacks"]["apps"], prune={"v1 ConfigMap": {ns: [
        ["keep", uid_of(admin, ns, "keep"), "1", "0" * 12]]}})}}
    with H.recording(admin, methods=("GET", "POST", "PUT", "PATCH", "DELETE")) as requests, \
            pytest.raises(H.StackError, match="the approved plan's digest does not match its content"):
        H.manager(admin, "apps", record_namespace=ns, namespace=ns, approved_plan=edited)
    assert requests == [] and uid_of(admin, ns, "keep")


def test_a_stack_not_in_the_plan_or_not_approved(admin, ns, synced):
    plan, _w = check(admin, ns, synced)
    other = dict(plan, stacks={"web": plan["stacks"]["apps"]})
    other.pop("digest")
    _m, _cs, error = run(admin, ns, synced, approved_plan=other)
    assert error is not None and "stack apps is not in the approved plan (it plans web)" in str(error)
    not_approved = dict(plan, approved=[])
    _m, cs, error = run(admin, ns, synced, approved_plan=not_approved)
    assert error is None and cs.pruned == [] and uid_of(admin, ns, "c1")  # its applies still go as planned
    assert [r["name"] for r in cs.applied if r["action"] == "configured"] == ["keep"]


def test_an_object_changed_in_what_decides_its_prune_during_the_run_is_not_deleted(admin, kube, ns, synced):
    plan, _w = check(admin, ns, synced)
    client = H.client_for(kube.kubeconfig)
    real, edited = client.request, []

    def request(method, path, *args, **kwargs):
        # just before the run's DELETE of c1, someone changes its checksum annotation: the DELETE's preconditions
        # fail, the run reads it again, and its fingerprint is no longer the plan's
        if method == "DELETE" and path.endswith("/configmaps/c1") and not edited:
            edited.append(path)
            H.merge_patch(admin, H.oid_of(admin.get(path)), {"metadata": {"annotations": {
                "stacksync.io/checksum": "sha256:" + "1" * 64}}})
        return real(method, path, *args, **kwargs)

    client.request = request
    try:
        _m, cs, error = run(client, ns, synced, approved_plan=plan)
    finally:
        client.close()
    assert error is None and edited, error
    assert names(cs.pruned) == sorted(f"c{i}" for i in range(2, 12)) and uid_of(admin, ns, "c1")
    assert [(r["name"], r["code"], r["reason"]) for r in cs.skipped] == [
        ("c1", "changed", "changed since the approved plan: not deleted")]
