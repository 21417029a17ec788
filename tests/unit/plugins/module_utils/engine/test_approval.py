"""approval.py: a run given an approved plan -- reading it, what makes it stale, and how it only narrows a run."""

import copy
import uuid

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.base.constants import IGNORE_ANNOTATION, STACK_LABEL
from ansible_collections.stacksync.k8s.plugins.module_utils.base.identity import ObjectId
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import approval as a
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import objects as o
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import plan_file as pf
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.observe import Snapshot
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.plan import Plan, PrunePlan, Reason
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.discovery import ResourceInfo

CM = ResourceInfo("", "v1", "ConfigMap", "configmaps", True, ("list", "delete", "patch"))
COMMIT = "0123456789abcdef0123456789abcdef01234567"
SOURCE = "github.com/acme/apps#deploy"


def live(name, ns="web"):
    oid = ObjectId("", "ConfigMap", ns, name)
    obj = o.stamp({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns}}, "apps", oid,
                  "sha256:" + "0" * 64)
    obj["metadata"].update(uid=str(uuid.uuid4()), resourceVersion="7")
    return oid, CM, obj


class Desired:
    def __init__(self, name, checksum="sha256:1"):
        self.oid = ObjectId("", "ConfigMap", "web", name)
        self.checksum = checksum
        self.drift = None


def plan_of(candidates=(), marks=(), waiting=(), to_apply=(), ours=None):
    prune = PrunePlan()
    prune.candidates, prune.marks, prune.waiting = list(candidates), list(marks), list(waiting)
    snap = Snapshot()
    snap.ours = dict(ours or {})
    for oid, info, obj in prune.candidates:
        snap.ours.setdefault(oid, (info, obj))
    return Plan(snap, list(to_apply), [], [], prune)


def approved(plan, stacks=None, host="prod-1", **doc):
    entry = pf.stack_entry(plan, SOURCE, COMMIT, "kube-system")
    value = dict(pf.document(dict({"apps": entry}, **(stacks or {})), host), **doc)
    return a.for_stack(a.parse(value, host), "apps")


def test_a_run_that_does_what_the_plan_says_has_no_problem():
    c1, c2 = live("c1"), live("c2")
    plan = plan_of([c1, c2], to_apply=[Desired("new")])
    approval = approved(plan)
    assert a.problems(approval, SOURCE, COMMIT, "all", pf.applies_of(plan), plan.prune) == []
    assert approval.approved and approval.commit == COMMIT


def test_what_makes_a_plan_stale_is_named():
    c1, c2, c3 = live("c1"), live("c2"), live("c3")
    approval = approved(plan_of([c1, c2], to_apply=[Desired("new")]))
    moved = copy.deepcopy(c2)
    moved[2]["metadata"]["labels"][STACK_LABEL] = "other"  # ownership changed (it would still be deleted here)
    recreated = copy.deepcopy(c1)
    recreated[2]["metadata"]["uid"] = "another-uid"
    now = plan_of([recreated, moved, c3], to_apply=[Desired("new", "sha256:2")])
    found = a.problems(approval, "github.com/acme/other#deploy", "f" * 40, "all", pf.applies_of(now), now.prune)
    assert found == [
        f"the plan's source is {SOURCE}, this run's github.com/acme/other#deploy",
        "the plan's commit is {}, this run syncs {}".format(COMMIT, "f" * 40),
        "the objects to apply changed since the plan: 1 to create and 0 to change (the plan: 1 and 0)",
        "ConfigMap web/c1 is another object than the plan's (uid another-uid, the plan's {})".format(c1[2]["metadata"]["uid"]),
        "ConfigMap web/c2 changed since the plan (its labels, annotations or owners that decide its prune)",
        "ConfigMap web/c3 would be deleted, and the plan does not list its deletion",
    ]
    assert a.refusal(approval, found).startswith(
        "stack apps: the approved plan does not match what this run would do, so nothing was written: the plan's ")


def test_a_new_mark_the_plan_does_not_list_is_stale_and_the_phases_check_what_they_do():
    c1, m = live("c1"), live("m")
    approval = approved(plan_of([c1]))
    now = plan_of([c1], marks=[(*m, None)])
    assert a.problems(approval, SOURCE, COMMIT, "all", None, now.prune) == [
        "ConfigMap web/m would be marked for pruning, and the plan does not list it"]
    # the prune phase of a sources run does not compare what it would apply (the apply phase applied it)
    other = plan_of([c1], to_apply=[Desired("x")])
    assert a.problems(approval, SOURCE, COMMIT, "prune", pf.applies_of(other), other.prune) == []
    assert a.problems(approval, SOURCE, COMMIT, "apply", pf.applies_of(other), None) != []


def test_a_stack_the_plan_does_not_have_and_one_it_does_not_approve():
    approval = approved(plan_of([live("c1")]))
    missing = a.for_stack(a.parse(pf.document({"apps": pf.stack_entry(plan_of())}, "h"), "h"), "web")
    assert a.problems(missing) == ["stack web is not in the approved plan (it plans apps)"] and not missing.approved
    value = dict(pf.document({"apps": pf.stack_entry(plan_of([live("c1")]), SOURCE, COMMIT)}, "h"), approved=[])
    refused = a.for_stack(a.parse(value, "h"), "apps")
    assert not refused.approved and approval.approved
    # its deletions are not compared: it deletes nothing (the prune gate says not-approved)
    assert a.problems(refused, SOURCE, COMMIT, "all", None, plan_of([live("zz")]).prune) == []


def test_a_plan_only_narrows_a_run():
    c1, c2, gone, declared, kept, m = (live(n) for n in ("c1", "c2", "gone", "declared", "kept", "m"))
    approval = approved(plan_of([c1, c2, gone, declared, kept], waiting=[(*m, 1.0)]))
    # the run deletes c1 only: what the plan lists more is never deleted, and each is reported
    kept_now = copy.deepcopy(kept)
    kept_now[2]["metadata"]["annotations"][IGNORE_ANNOTATION] = "true"
    now = plan_of([c1, m], ours={c2[0]: (CM, c2[2]), declared[0]: (CM, declared[2]), kept[0]: (CM, kept_now[2])})
    now.prune.kept.append((*kept_now, Reason("ignored", "ignore annotation set")))
    c2_now = now.snap.ours[c2[0]]
    now.snap.ours[c2[0]] = (CM, dict(c2_now[1], metadata=dict(c2_now[1]["metadata"], uid="new")))
    a.narrow(approval, now.prune, now.snap.ours, {declared[0]}, lambda msg: Reason(a.NOT_APPROVED, msg))
    assert [c[0].name for c in now.prune.candidates] == ["c1"]
    # m is due now, but the plan listed it as waiting: kept for a later run, not deleted
    assert [(k[0].name, k[3].code) for k in now.prune.kept] == [("kept", "ignored"), ("m", a.NOT_APPROVED)]
    assert [(n[0].name, n[2]) for n in now.prune.notes] == [
        ("c2", "the approved deletion no longer applies, skipped: it is gone (or no longer the stack's)"),
        ("declared", "the approved deletion no longer applies, skipped: it is declared again"),
        ("gone", "the approved deletion no longer applies, skipped: it is gone (or no longer the stack's)"),
        ("kept", "the approved deletion no longer applies, skipped: not deleted: ignore annotation set"),
    ]
    assert a.problems(approval, SOURCE, COMMIT, "all", None, now.prune) == []


def tampered(doc, edit):
    doc = copy.deepcopy(doc)
    edit(doc)
    return doc


def test_a_plan_whose_digest_does_not_match_is_refused():
    doc = pf.document({"apps": pf.stack_entry(plan_of([live("c1")]), SOURCE, COMMIT)}, "prod-1")
    assert a.parse(doc, "prod-1").stacks["apps"] == doc["stacks"]["apps"]
    entry_edit = tampered(doc, lambda d: d["stacks"]["apps"]["prune"]["v1 ConfigMap"]["web"].append(
        ["more", "uid", "1", "0" * 12]))
    with pytest.raises(a.PlanError, match="stack apps: the approved plan's digest does not match its content"):
        a.parse(entry_edit, "prod-1")
    dropped = tampered(doc, lambda d: d["stacks"].update(other=pf.stack_entry(plan_of())))
    with pytest.raises(a.PlanError, match=r"^the approved plan's digest does not match its content"):
        a.parse(dropped, "prod-1")
    resealed = tampered(doc, lambda d: d["stacks"].update(apps=pf.seal(dict(d["stacks"]["apps"], commit="HEAD"))))
    resealed["digest"] = pf.plan_digest(resealed)
    with pytest.raises(a.PlanError, match="commit 'HEAD' is not a full commit id"):
        a.parse(resealed, "prod-1")


@pytest.mark.parametrize("value, host, message", [
    ("a string", "h", "an approved plan is the mapping check mode emitted, got str"),
    ({"format": "other"}, "h", "not a plan made by check mode"),
    ({"prod-1": {"format": pf.FORMAT}, "prod-2": {"format": pf.FORMAT}}, "prod-3",
     "the approved plan has no plan for host prod-3 \\(it has plans for prod-1, prod-2\\): nothing was done on it"),
])
def test_plans_that_cannot_be_used(value, host, message):
    with pytest.raises(a.PlanError, match=message):
        a.parse(value, host)


def test_a_plan_is_per_host():
    one = pf.document({"apps": pf.stack_entry(plan_of(), SOURCE, COMMIT)}, "prod-1")
    two = pf.document({"web": pf.stack_entry(plan_of(), SOURCE, COMMIT)}, "prod-2")
    assert set(a.parse({"prod-1": one, "prod-2": two}, "prod-2").stacks) == {"web"}
    with pytest.raises(a.PlanError, match="the approved plan was made for host prod-1, not prod-2"):
        a.parse(one, "prod-2")
    # what a stack run of a sources run gets: its own entry, the stacks of the plan, whether it is approved
    reduced = a.reduced(a.parse(one, "prod-1"), "apps")
    back = a.for_stack(a.parse(reduced, "prod-1"), "apps")
    assert back.entry == one["stacks"]["apps"] and back.approved and back.planned == ("apps",)
    assert a.for_stack(a.parse(a.reduced(a.parse(one), "x")), "x").planned == ("apps",)
