"""plugin_utils/plans.py: the plan of a sources run -- which approved plan a host runs, its commits, the plan a check
emits from its stack runs."""

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import approval as A
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import plan_file as pf
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.observe import Snapshot
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.plan import Plan, PrunePlan
from ansible_collections.stacksync.k8s.plugins.plugin_utils import plans

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def entry(commit=COMMIT):
    return pf.stack_entry(Plan(Snapshot(), [], [], [], PrunePlan()), "src", commit)


def test_true_means_the_hosts_artifact():
    doc = pf.document({"apps": entry()}, "prod-1")
    variables = {"stacksync_plan_prod_1": doc}
    assert plans.approved_value(True, "prod-1", variables) is doc
    assert plans.approved_value("true", "prod-1", variables) is doc  # as a survey types it
    assert plans.approved_value(doc, "prod-2", {}) is doc and plans.approved_value("/a/file", "h", {}) == "/a/file"
    with pytest.raises(A.PlanError, match="no plan for host prod-2 \\(variable stacksync_plan_prod_2: the artifact"):
        plans.approved_value(True, "prod-2", variables)


def test_the_approved_plan_pins_each_stacks_commit_and_gives_each_stack_run_its_part():
    parsed = A.parse(pf.document({"apps": entry(), "web": entry(None)}, "h"), "h")
    assert plans.pinned(parsed, "apps") == COMMIT and plans.pinned(parsed, "web") is None
    assert plans.pinned(parsed, "other") is None and plans.pinned(None, "apps") is None
    args = plans.stack_plan_args(parsed, "apps", emitting=False)
    assert args == {"approved_plan": A.reduced(parsed, "apps")}
    assert plans.stack_plan_args(None, "apps", emitting=True) == {"emit_plan": True}
    assert plans.moved_message("main", "89abcdef" * 5, COMMIT) == (
        "version main now resolves to 89abcdef89ab; the approved plan's commit 0123456789ab is synced")


def source(stack, state="present"):
    return {"stack": stack, "state": state, "repo_label": "https://git.example.com/" + stack, "version": "main",
            "path": "."}


def result(stack, e):
    return {"plan": pf.document({stack: e})}


def test_a_checks_plan_merges_each_stacks_apply_and_prune_runs():
    prepared = [(source("a"), COMMIT, [], None), (source("b"), COMMIT, [], None), (source("c"), COMMIT, None, "broken"),
                (source("gone", "absent"), "", None, None)]
    applies = {"a": result("a", entry()), "b": result("b", entry())}
    prunes = {"a": result("a", pf.stack_entry(Plan(Snapshot(), [], [], [], PrunePlan()), "src", COMMIT,
                                              over_budget=True)), "gone": result("gone", entry(None))}
    plan = plans.host_plan("h", prepared, applies, prunes, phase_all=False)
    assert plan["host"] == "h" and set(plan["stacks"]) == {"a", "b", "gone"}  # c failed: no plan, cannot be approved
    a = plan["stacks"]["a"]
    assert a["over_budget"] and a["repo"] == "https://git.example.com/a" and a["commit"] == COMMIT
    assert plan["stacks"]["b"]["prune"] == {}  # its prune did not run (prune: false): it deletes nothing
    assert A.parse(plan, "h").stacks == plan["stacks"]  # sealed and digested
    assert plans.stats("h", plan) == {"stacksync_plan_h": plan}
    one = plans.host_plan("h", prepared[:1], applies, {}, phase_all=True)
    assert set(one["stacks"]) == {"a"}
