"""prune_steps.py: the prune steps of a run (the prune plan asked in one place, the gate's refusals, what waits for
its grace period), through the engine on the simulator."""

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.base.identity import ObjectId
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import changeset as C
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import grace as G
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.changeset import ChangeSet
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.plan import PrunePlan
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.prune_steps import (
    PLAN_SKIPPED,
    PruneSteps,
    StackError,
    needs_facts,
)

from ..simengine import client_of, cm_path, configmap, create, live, namespace, sync, unique


@pytest.fixture(scope="module")
def client(kubesim):
    c = client_of(kubesim)
    yield c
    c.close()


class Plan:
    def __init__(self, prune):
        self.prune = prune


def test_facts_are_read_only_for_a_plan_that_deletes_releases_or_marks():
    assert not needs_facts(Plan(None)) and not needs_facts(Plan(PrunePlan()))
    for attr in ("candidates", "releases", "marks", "waiting"):
        prune = PrunePlan()
        setattr(prune, attr, [object()])
        assert needs_facts(Plan(prune)), attr


def test_a_stack_error_carries_what_was_done_and_whether_the_prune_was_refused():
    cs = ChangeSet()
    e = StackError("boom", cs, phase="prune")
    assert (str(e), e.changeset, e.phase) == ("boom", cs, "prune")
    assert StackError("x").changeset is None and StackError("x").phase is None


def test_what_waits_for_its_grace_and_the_approved_deletions_that_no_longer_apply_are_reported():
    prune = PrunePlan()
    oid = ObjectId("", "ConfigMap", "web", "old")
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "old", "namespace": "web"}}
    prune.waiting = [(oid, None, obj, 1000.0), (oid, None, obj, None)]
    prune.notes = [(oid, "v1", "already gone: nothing to delete")]
    cs = ChangeSet()
    PruneSteps._report_later(prune, cs)
    assert [(e.action, e.code, e.extra.get("prune_after")) for e in cs.entries] == [
        (C.SKIPPED, G.GRACE, G.format_time(1000.0)), (C.SKIPPED, G.GRACE, None), (C.SKIPPED, PLAN_SKIPPED, None)]
    assert cs.warnings == [f"{oid}: already gone: nothing to delete"]


def test_an_object_that_left_git_is_marked_then_kept_while_its_grace_runs(client):
    ns, stack = unique("steps"), unique("steps")
    create(client, "/api/v1/namespaces", namespace(ns))
    sync(client, stack, [configmap("keep", ns), configmap("old", ns)])
    first = sync(client, stack, [configmap("keep", ns)], prune_grace="1h")
    assert [(e.action, e.oid.name) for e in first.entries if e.action == C.MARKED] == [(C.MARKED, "old")]
    again = sync(client, stack, [configmap("keep", ns)], prune_grace="1h")
    assert [(e.action, e.code) for e in again.entries if e.oid.name == "old"] == [(C.SKIPPED, G.GRACE)]
    assert live(client, cm_path(ns, "old")) is not None


def test_the_gate_refuses_a_prune_to_an_empty_set_before_any_write(client):
    ns, stack = unique("steps"), unique("steps")
    create(client, "/api/v1/namespaces", namespace(ns))
    sync(client, stack, [configmap("keep", ns)])
    with pytest.raises(StackError) as e:
        sync(client, stack, [])
    assert e.value.phase == "prune" and "empty set" in str(e.value)
    assert live(client, cm_path(ns, "keep")) is not None
