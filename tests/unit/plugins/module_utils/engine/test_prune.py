"""prune.py: the prune facts (other stacks' records, what Namespaces / CRDs hold) and the fenced execution, on the
simulator. The plans are the engine's own (``StackManager.plan``); the Pruner's facts and execution are called
directly, with the cluster changed between the plan and the delete where a test needs it."""

from types import SimpleNamespace

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.base.constants import (
    IGNORE_ANNOTATION,
    RECORD_LABEL,
    RECORD_NAMESPACE_ANNOTATION,
    STACK_LABEL,
)
from ansible_collections.stacksync.k8s.plugins.module_utils.base.identity import ObjectId, identity_digest
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import plan as P
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.changeset import PRUNED, RELEASED, SKIPPED, TERMINATING, ChangeSet
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.context import RunContext
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.lock import LockError
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.prepare import stamp_all
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.prune import Pruner
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.client import MERGE_PATCH

from ..simengine import client_of, cm_path, configmap, create, gone, live, manager, namespace, sync, unique, user_client

WIDGETS = "widgets.prune.stacksync.io"


@pytest.fixture(scope="module")
def client(kubesim):
    c = client_of(kubesim)
    yield c
    c.close()


def cm_id(ns, name):
    return ObjectId("", "ConfigMap", ns, name)


def planned(client, stack, resources, with_facts=True, **options):
    """``(manager, plan)``: the engine's plan of syncing ``resources`` (its prune plan with its facts if ``with_facts``)."""
    m = manager(client, stack, **options)
    cs = ChangeSet()
    desired = m.prepare(resources, cs)
    stamp_all(desired, stack, None)
    plan = m.plan(desired, cs, pruning=True, with_facts=with_facts)
    plan.desired = desired  # for with_facts
    return m, plan


def execute(m, plan, dry_run=False):
    cs = ChangeSet()
    remaining, pruned = m.pruner.execute(plan.prune, cs, dry_run)
    return cs, remaining, pruned


def outcome(cs):
    return sorted((e.action, e.oid.kind, e.oid.name, e.code) for e in cs.entries)


def patch(client, path, body):
    return client.request("PATCH", path, body=body, content_type=MERGE_PATCH)


# -- facts ------------------------------------------------------------------------------------------
def test_facts_name_what_another_stacks_record_declares_and_the_plan_releases_it(client):
    ns, mine, theirs = unique("p-claims"), unique("mine"), unique("theirs")
    sync(client, mine, [namespace(ns), configmap("shared", ns), configmap("gone", ns)])
    sync(client, theirs, [configmap("shared", ns)])  # takes it over; its record declares it from now on
    sync(client, mine, [namespace(ns), configmap("shared", ns), configmap("gone", ns)])  # and mine takes it back
    m, first = planned(client, mine, [namespace(ns)], with_facts=False)
    assert sorted(oid.name for oid, _i, _o in first.prune.candidates) == ["gone", "shared"]
    declared, contents, kept = m.pruner.facts(first.prune)
    assert declared[identity_digest(cm_id(ns, "shared"))] == [theirs] and identity_digest(cm_id(ns, "gone")) not in declared
    assert contents == {} and kept == {}
    complete = m.with_facts(first.desired, first)
    assert [(oid.name, other) for oid, _i, _o, other in complete.prune.releases] == [("shared", theirs)]
    cs, _remaining, pruned = execute(m, complete)
    assert outcome(cs) == [(PRUNED, "ConfigMap", "gone", None), (RELEASED, "ConfigMap", "shared", None)]
    assert pruned == {cm_id(ns, "gone")}
    obj = live(client, cm_path(ns, "shared"))
    assert obj["metadata"]["labels"][STACK_LABEL] == theirs
    assert obj["metadata"]["annotations"][RECORD_NAMESPACE_ANNOTATION] == "kube-system"
    assert any("still declares it: released to it, not deleted" in w for w in cs.warnings)


def test_a_record_outside_the_runs_record_namespaces_neither_prunes_nor_hands_over(client):
    """A tenant who may write ConfigMaps in its namespace makes a record there (label and data agree, the object's
    digest is public) declaring the platform's object: the object is not handed over to that stack (before, it was,
    silently: the platform never saw it again), nor deleted -- kept, the record named, on every run. Listed in
    record_namespaces (another job's stack with its record there), the same record hands it over."""
    ns, tenant_ns, platform, fake = unique("p-fake"), unique("p-tenant"), unique("platform"), unique("keepme")
    create(client, "/api/v1/namespaces", namespace(tenant_ns))
    sync(client, platform, [namespace(ns), configmap("admin-binding", ns), configmap("stays", ns)])
    create(client, f"/api/v1/namespaces/{tenant_ns}/configmaps", {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "stacksync-" + fake, "labels": {RECORD_LABEL: fake}},
        "data": {"stack": fake, "objects": identity_digest(cm_id(ns, "admin-binding"))}})
    _m, plan = planned(client, platform, [namespace(ns), configmap("stays", ns)])
    assert plan.prune.releases == [] and plan.prune.candidates == []
    ((_oid, _info, _obj, reason),) = [k for k in plan.prune.kept if k[0].name == "admin-binding"]
    assert reason.code == P.RECORD_ELSEWHERE and str(reason).startswith(
        f"not pruned: a record of stack '{fake}' in namespace {tenant_ns} declares it, and {tenant_ns} is not a record "
        "namespace of this run")
    cs = sync(client, platform, [namespace(ns), configmap("stays", ns)])
    assert not cs.pruned and live(client, cm_path(ns, "admin-binding"))["metadata"]["labels"][STACK_LABEL] == platform
    _m, plan = planned(client, platform, [namespace(ns), configmap("stays", ns)], record_namespaces=[tenant_ns])
    assert [(oid.name, other) for oid, _i, _o, other in plan.prune.releases] == [("admin-binding", fake)]


def test_a_namespace_that_holds_objects_not_pruned_with_it_is_kept(client):
    ns, stack = unique("p-holds"), unique("s")
    sync(client, stack, [namespace(ns), configmap("ours", ns)])
    create(client, f"/api/v1/namespaces/{ns}/configmaps", configmap("someone-elses", ns))
    m, first = planned(client, stack, [configmap("keep", ns)], with_facts=False)
    assert first.prune.holders == [ObjectId("", "Namespace", "", ns)]
    _declared, contents, _kept = m.pruner.facts(first.prune)
    assert contents[ObjectId("", "Namespace", "", ns)] == [cm_id(ns, "someone-elses")]
    complete = m.with_facts(first.desired, first)
    assert [(oid.kind, reason.code) for oid, _i, _o, reason in complete.prune.kept] == [("Namespace", P.HOLDS_OTHERS)]
    assert [oid.name for oid, _i, _o in complete.prune.candidates] == ["ours"]


def test_namespace_contents_that_cannot_be_read_keep_the_namespace(kubesim, client, tmp_path):
    ns, stack = unique("p-unread"), unique("s")
    sync(client, stack, [namespace(ns)])
    user = user_client(kubesim, tmp_path, unique("no-secrets"), deny=[{"verbs": ["list"], "resources": ["secrets"]}])
    m, first = planned(user, stack, [configmap("keep", ns)], with_facts=False)
    _declared, contents, _kept = m.pruner.facts(first.prune)
    assert contents[ObjectId("", "Namespace", "", ns)].startswith("cannot list secrets in it: 403")


def test_a_crd_whose_custom_resources_are_not_pruned_with_it_is_kept(kubesim, client):
    ns, stack = unique("p-crd"), unique("s")
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": WIDGETS},
           "spec": {"group": "prune.stacksync.io", "scope": "Namespaced",
                    "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                    "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                        "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}}
    widget = {"apiVersion": "prune.stacksync.io/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": ns}}
    sync(client, stack, [namespace(ns), crd])
    kubesim.settle()
    create(client, f"/apis/prune.stacksync.io/v1/namespaces/{ns}/widgets", widget)  # not the stack's
    m, first = planned(client, stack, [namespace(ns)], with_facts=False)
    _declared, contents, _kept = m.pruner.facts(first.prune)
    assert contents[ObjectId("apiextensions.k8s.io", "CustomResourceDefinition", "", WIDGETS)] == [
        ObjectId("prune.stacksync.io", "Widget", ns, "w")]
    assert m.pruner.crd_contents("missing." + WIDGETS, set()) == []


def test_without_the_records_of_every_stack_nothing_is_deleted(kubesim, client, tmp_path):
    ns, stack = unique("p-records"), unique("s")
    sync(client, stack, [namespace(ns), configmap("a", ns), configmap("b", ns)])
    user = user_client(kubesim, tmp_path, unique("no-records"), deny=[
        {"verbs": ["list"], "resources": ["configmaps"], "namespaces": ["", "kube-system"]}])
    m, first = planned(user, stack, [namespace(ns), configmap("a", ns)], with_facts=False)
    _declared, _contents, kept = m.pruner.facts(first.prune)
    assert kept[cm_id(ns, "b")].code == P.RECORDS_UNREADABLE
    assert "list configmaps in namespace kube-system" in kept[cm_id(ns, "b")]


def test_an_object_stamped_before_record_namespaces_is_kept_while_a_namesake_stack_exists(client):
    ns, stack = unique("p-namesake"), unique("s")
    create(client, "/api/v1/namespaces", namespace(ns))
    sync(client, stack, [configmap("a", ns), configmap("old", ns)])
    sync(client, stack, [configmap("theirs", ns)], record_namespace=ns)  # a namesake with its record in ns
    obj = live(client, cm_path(ns, "old"))
    patch(client, cm_path(ns, "old"), {"metadata": {"annotations": {RECORD_NAMESPACE_ANNOTATION: None},
                                                    "resourceVersion": obj["metadata"]["resourceVersion"]}})
    m, first = planned(client, stack, [configmap("a", ns)], with_facts=False)
    _declared, _contents, kept = m.pruner.facts(first.prune)
    assert kept[cm_id(ns, "old")].code == P.RECORD_UNKNOWN and ns in kept[cm_id(ns, "old")]


# -- execution ---------------------------------------------------------------------------------------
def test_deletes_go_in_reverse_stage_order_and_a_namespace_goes_last(kubesim, client):
    ns, stack = unique("p-order"), unique("s")
    sync(client, stack, [namespace(ns), configmap("a", ns), configmap("b", ns)])
    m, plan = planned(client, stack, [], allow_empty=True)
    start = len(kubesim.requests)
    cs, remaining, pruned = execute(m, plan)
    deletes = [r["path"] for r in list(kubesim.requests)[start:] if r["method"] == "DELETE" and "/leases" not in r["path"]]
    assert sorted(deletes[:2]) == [cm_path(ns, "a"), cm_path(ns, "b")] and deletes[2:] == ["/api/v1/namespaces/" + ns]
    assert remaining == set() and len(pruned) == 3 and [e.action for e in cs.entries] == [PRUNED] * 3


def test_a_dry_run_deletes_nothing_and_reports_every_candidate(client):
    ns, stack = unique("p-dry"), unique("s")
    sync(client, stack, [namespace(ns), configmap("a", ns), configmap("b", ns)])
    m, plan = planned(client, stack, [namespace(ns)], check_mode=True, diff=True)
    cs, _remaining, pruned = execute(m, plan, dry_run=True)
    assert outcome(cs) == [(PRUNED, "ConfigMap", "a", None), (PRUNED, "ConfigMap", "b", None)]
    assert live(client, cm_path(ns, "a")) is not None and pruned == {cm_id(ns, "a"), cm_id(ns, "b")}
    assert [d["before_header"] for d in cs.diff] == [str(cm_id(ns, "a")), str(cm_id(ns, "b"))]
    assert [(d["after"], d["before"]["metadata"]["name"]) for d in cs.diff] == [({}, "a"), ({}, "b")]


def test_an_object_changed_since_the_plan_is_read_again_and_decided_again(client):
    ns, stack = unique("p-fence"), unique("s")
    sync(client, stack, [namespace(ns), configmap("edited", ns), configmap("opted-out", ns), configmap("vanished", ns),
                         configmap("taken", ns)])
    m, plan = planned(client, stack, [namespace(ns)])
    patch(client, cm_path(ns, "edited"), {"data": {"k": "edited by hand"}})  # still ours: deleted, on its new version
    patch(client, cm_path(ns, "opted-out"), {"metadata": {"annotations": {IGNORE_ANNOTATION: "true"}}})
    client.delete(cm_path(ns, "vanished"))
    patch(client, cm_path(ns, "taken"), {"metadata": {"annotations": {RECORD_NAMESPACE_ANNOTATION: "team-b"}}})
    cs, _remaining, pruned = execute(m, plan)
    assert outcome(cs) == [(PRUNED, "ConfigMap", "edited", None), (PRUNED, "ConfigMap", "vanished", None),
                           (SKIPPED, "ConfigMap", "opted-out", P.IGNORED), (SKIPPED, "ConfigMap", "taken", P.OTHER_RECORD)]
    assert gone(client, cm_path(ns, "edited"))
    assert live(client, cm_path(ns, "opted-out")) is not None and live(client, cm_path(ns, "taken")) is not None
    reasons = dict((e.oid.name, e.reason) for e in cs.entries if e.action == SKIPPED)
    assert reasons["opted-out"].startswith("changed since the run observed it; not deleted: ")
    assert "applied it since; not deleted" in reasons["taken"]
    assert cm_id(ns, "opted-out") not in pruned


def test_a_refused_delete_is_skipped_and_retried_by_the_next_run(kubesim, client, tmp_path):
    ns, stack = unique("p-refused"), unique("s")
    sync(client, stack, [namespace(ns), configmap("a", ns), configmap("b", ns)])
    user = user_client(kubesim, tmp_path, unique("no-delete"), deny=[{"verbs": ["delete"], "resources": ["configmaps"]}])
    m, plan = planned(user, stack, [namespace(ns), configmap("a", ns)])
    cs, remaining, pruned = execute(m, plan)
    assert outcome(cs) == [(SKIPPED, "ConfigMap", "b", P.DELETE_REFUSED)]
    assert remaining == {("", "ConfigMap")} and pruned == set()
    assert cs.warnings[0].startswith("{}: delete refused: 403".format(cm_id(ns, "b")))
    assert cs.warnings[0].endswith("it stays recorded and the next run retries")


def test_a_refused_release_is_skipped_and_the_object_stays(kubesim, client, tmp_path):
    ns, mine, theirs = unique("p-norelease"), unique("mine"), unique("theirs")
    sync(client, mine, [namespace(ns), configmap("shared", ns)])
    sync(client, theirs, [configmap("shared", ns)])
    sync(client, mine, [namespace(ns), configmap("shared", ns)])
    user = user_client(kubesim, tmp_path, unique("no-patch"), deny=[{"verbs": ["patch"], "resources": ["configmaps"]}])
    m, plan = planned(user, mine, [namespace(ns)])
    cs, _remaining, _pruned = execute(m, plan)
    assert outcome(cs) == [(SKIPPED, "ConfigMap", "shared", P.RELEASE_REFUSED)]
    assert live(client, cm_path(ns, "shared"))["metadata"]["labels"][STACK_LABEL] == mine


def test_a_lost_lock_stops_the_deletes_after_reporting_what_was_deleted(client):
    ns, stack = unique("p-lost"), unique("s")
    sync(client, stack, [namespace(ns), configmap("a", ns)])
    m, plan = planned(client, stack, [], allow_empty=True)
    calls = []

    def ensure_lock(prove=False):
        calls.append(prove)
        if len(calls) > 2:  # the ConfigMaps' batch and its DELETE are sent; the Namespace's batch is not
            raise LockError("lost the lock")

    run = RunContext(client, m.opts, m.discovery, map_fn=map)
    run.lock = SimpleNamespace(ensure=ensure_lock)
    pruner = Pruner(run)
    cs = ChangeSet()
    with pytest.raises(LockError, match="lost the lock"):
        pruner.execute(plan.prune, cs, False)
    assert outcome(cs) == [(PRUNED, "ConfigMap", "a", None)]
    assert live(client, "/api/v1/namespaces/" + ns) is not None and gone(client, cm_path(ns, "a"))
    assert calls == [0, True, 0]  # each batch starts with a proof, each attempt with a recent one


def test_objects_held_by_finalizers_are_reported_terminating_after_the_wait(client):
    ns, stack = unique("p-final"), unique("s")
    held = configmap("held", ns)
    held["metadata"]["finalizers"] = ["example.com/hold"]
    sync(client, stack, [namespace(ns), configmap("a", ns), held])
    m, plan = planned(client, stack, [namespace(ns)], wait_timeout=0.2)
    cs, remaining, pruned = execute(m, plan)
    assert remaining == {("", "ConfigMap")}  # its kind stays recorded: later runs still list it (and see it terminating)
    m.pruner.wait_gone(plan.prune, pruned, cs)
    flags = dict((e.oid.name, e.extra.get("terminating")) for e in cs.entries)
    assert flags == {"a": None, "held": True}
    assert cs.warnings == ["still terminating after 0.2s (finalizers): {}".format(cm_id(ns, "held"))]
    # the next plan does not delete it again: it is waiting for its finalizers
    _m, again = planned(client, stack, [namespace(ns)])
    assert [(oid.name, reason.code) for oid, _i, _o, reason in again.prune.terminating] == [("held", P.TERMINATING)]
    report = ChangeSet()
    P.report_plan(again, report, applying=True)
    assert [(e.action, e.oid.name) for e in report.entries if e.action == TERMINATING] == [(TERMINATING, "held")]
    patch(client, cm_path(ns, "held"), {"metadata": {"finalizers": None}})
