"""The prune grace period (issue 29): what left git is marked with the server's time, kept while the grace runs,
unmarked when it comes back, and deleted by the first run once the grace has passed -- by the server's clock.

The engine runs in-process against ``kube``: the simulator, or a real kube-apiserver (``make test-real``). Waits poll
the server's own time (the ``Date`` header of its answers), never the controller's clock.
"""

import time

from ansible_collections.stacksync.k8s.plugins.module_utils.base.constants import PRUNE_MARK_ANNOTATION
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import grace as G
from ansible_collections.stacksync.k8s.plugins.module_utils.runner import plan_of

from . import helpers as H

NS_PREFIX = "pg"
GRACE_S = 4  # short, with room for the runs made while it has not passed on a busy machine
GRACE = f"{GRACE_S}s"


def cm(name, ns, value="1"):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns}, "data": {"k": value}}


def run(admin, ns, resources, **options):
    options.setdefault("prune_grace", GRACE)
    m = H.manager(admin, "apps", record_namespace=ns, namespace=ns, **options)
    try:
        return m, m.sync(resources), None
    except H.StackError as e:
        return m, e.changeset, e


def live(admin, ns, name):
    return admin.get_or_none(f"/api/v1/namespaces/{ns}/configmaps/{name}")


def mark_of(obj):
    return ((obj or {}).get("metadata", {}).get("annotations") or {}).get(PRUNE_MARK_ANNOTATION)


def server_now(admin):
    admin.get("/version")
    return admin.server_time


def wait_for_server_time(admin, target, timeout=30):
    """Poll until the server's clock (its Date header) reads ``target`` or later."""
    deadline = time.monotonic() + timeout
    while server_now(admin) < target:
        assert time.monotonic() < deadline, f"the server's time never reached {G.format_time(target)}"
        time.sleep(0.2)


def test_marked_then_back_in_git_then_deleted_once_the_grace_has_passed(admin, ns):
    _m, _cs, error = run(admin, ns, [cm("a", ns), cm("b", ns), cm("c", ns)])
    assert error is None, error
    uids = dict((n, live(admin, ns, n)["metadata"]["uid"]) for n in "abc")
    # check mode says what would be marked and when it would be pruned, and writes no mark
    _m, cs, error = run(admin, ns, [cm("a", ns)], check_mode=True)
    assert error is None and sorted(r["name"] for r in cs.marked) == ["b", "c"] and cs.pruned == []
    assert all(r["prune_after"] for r in cs.marked) and mark_of(live(admin, ns, "b")) is None
    # the run marks them with the server's time of the mark, deletes nothing
    before = server_now(admin)
    _m, cs, error = run(admin, ns, [cm("a", ns)])
    after = server_now(admin)
    assert error is None and cs.pruned == [] and sorted(r["name"] for r in cs.marked) == ["b", "c"]
    marked_at = G.parse_time(mark_of(live(admin, ns, "b")))
    # the managedFields stamp of the mark's write, rounded up: never before the write, at most a second after it
    assert before <= marked_at <= after + 1, (before, marked_at, after)
    prune_after = G.format_time(marked_at + GRACE_S)
    assert dict((r["name"], r["prune_after"]) for r in cs.marked)["b"] == prune_after
    # c comes back before the grace has passed: its mark goes, nothing was lost; b waits
    _m, cs, error = run(admin, ns, [cm("a", ns), cm("c", ns)])
    assert error is None and cs.pruned == [] and [r["name"] for r in cs.result()["unmarked"]] == ["c"]
    assert mark_of(live(admin, ns, "c")) is None and live(admin, ns, "c")["metadata"]["uid"] == uids["c"]
    waiting = [r for r in cs.skipped if r["code"] == "grace"]
    assert [(r["name"], r["reason"]) for r in waiting] == [("b", "marked for pruning: pruned after " + prune_after)]
    # a run that writes nothing still says what waits
    _m, cs, error = run(admin, ns, [cm("a", ns), cm("c", ns)])
    assert error is None and not cs.changed and [r["name"] for r in cs.skipped if r["code"] == "grace"] == ["b"]
    # stack_info shows the same
    m = H.manager(admin, "apps", record_namespace=ns, namespace=ns, prune_grace=GRACE)
    report = m.inspect([cm("a", ns), cm("c", ns)])
    statuses = dict((o["name"], (o["status"], o.get("prune_after"))) for o in report["objects"])
    assert statuses["b"] == ("marked", prune_after) and statuses["c"][0] == "in_sync"
    # once the server's clock passed the grace, the first run deletes b, and only b
    wait_for_server_time(admin, marked_at + GRACE_S)
    _m, cs, error = run(admin, ns, [cm("a", ns), cm("c", ns)])
    assert error is None and [r["name"] for r in cs.pruned] == ["b"] and live(admin, ns, "b") is None
    assert live(admin, ns, "c")["metadata"]["uid"] == uids["c"] and live(admin, ns, "a")["metadata"]["uid"] == uids["a"]


def test_an_object_counts_toward_the_budget_in_the_run_that_deletes_it_and_an_approved_plan_lets_it(admin, ns):
    _m, _cs, error = run(admin, ns, [cm("keep", ns)] + [cm(f"c{i}", ns) for i in range(11)])
    assert error is None, error
    # marking 11 of 12 is not deleting them: the budget (10) does not refuse it
    _m, cs, error = run(admin, ns, [cm("keep", ns)])
    assert error is None and len(cs.marked) == 11
    marked_at = max(G.parse_time(mark_of(live(admin, ns, f"c{i}"))) for i in range(11))
    wait_for_server_time(admin, marked_at + GRACE_S)
    # deleting them is: refused before any write
    with H.recording(admin) as writes:
        _m, cs, error = run(admin, ns, [cm("keep", ns)])
    assert error is not None and "refusing to prune 11 of the stack's 12 objects" in str(error) and writes == []
    # a check's plan lists the deletions (and no mark), and once approved the run deletes exactly them
    m, _cs, error = run(admin, ns, [cm("keep", ns)], check_mode=True, emit_plan=True)
    assert error is None, error
    plan = plan_of(m, m.opts, {"emit_plan": True}, lambda w: None)
    entry = plan["stacks"]["apps"]
    assert sum(len(rows) for rows in entry["prune"]["v1 ConfigMap"].values()) == 11 and entry["mark"] == {}
    _m, cs, error = run(admin, ns, [cm("keep", ns)], approved_plan=plan)
    assert error is None and len(cs.pruned) == 11 and live(admin, ns, "keep")


def test_a_plan_lists_marks_and_deletions_apart_and_a_due_object_it_listed_as_marked_waits(admin, ns):
    _m, _cs, error = run(admin, ns, [cm("keep", ns), cm("old", ns), cm("new", ns)])
    assert error is None, error
    _m, cs, error = run(admin, ns, [cm("keep", ns), cm("new", ns)])  # old is marked
    assert error is None and [r["name"] for r in cs.marked] == ["old"]
    m, _cs, error = run(admin, ns, [cm("keep", ns)], check_mode=True, emit_plan=True)  # new would be marked, old waits
    plan = plan_of(m, m.opts, {"emit_plan": True}, lambda w: None)
    entry = plan["stacks"]["apps"]
    assert [r[0] for rows in entry["mark"]["v1 ConfigMap"].values() for r in rows] == ["new"]
    assert [r[0] for rows in entry["wait"]["v1 ConfigMap"].values() for r in rows] == ["old"] and entry["prune"] == {}
    wait_for_server_time(admin, G.parse_time(mark_of(live(admin, ns, "old"))) + GRACE_S)
    # old is due now, but the plan did not approve deleting it: kept for a later run; new is marked as planned
    _m, cs, error = run(admin, ns, [cm("keep", ns)], approved_plan=plan)
    assert error is None and cs.pruned == [] and [r["name"] for r in cs.marked] == ["new"], error
    assert [(r["name"], r["code"]) for r in cs.skipped] == [("old", "not-approved")] and live(admin, ns, "old")
