"""grace.py: the prune grace period -- durations, server times, which candidates are due, marked or waiting."""

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.base.constants import PRUNE_MARK_ANNOTATION
from ansible_collections.stacksync.k8s.plugins.module_utils.base.identity import ObjectId
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import grace as g
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import objects as o
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.plan import PrunePlan
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.discovery import ResourceInfo

CM = ResourceInfo("", "v1", "ConfigMap", "configmaps", True, ("list", "delete", "patch"))
NS = ResourceInfo("", "v1", "Namespace", "namespaces", False, ("list", "delete", "patch"))
CRD = ResourceInfo("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", False,
                   ("list", "delete"))
WIDGET = ResourceInfo("example.com", "v1", "Widget", "widgets", True, ("list", "delete"))
T0 = g.parse_time("2026-05-01T10:00:00Z")


@pytest.mark.parametrize("text, seconds", [
    ("90s", 90), ("15m", 900), ("1h", 3600), ("2d", 172800), ("1w", 604800), ("1h30m", 5400), ("2", 2), (120, 120),
    (" 2S ", 2), (None, None), ("", None), ("0", None), ("0s", None),
])
def test_durations(text, seconds):
    assert g.parse_duration(text) == seconds


@pytest.mark.parametrize("bad", ["1y", "-1h", "1.5h", "h", "1 hour", "soon", True, "1h-"])
def test_bad_durations_say_what_a_duration_is(bad):
    with pytest.raises(ValueError, match="prune_grace must be a duration such as 90s"):
        g.parse_duration(bad)


def test_server_times_round_trip_and_round_up():
    assert g.format_time(T0) == "2026-05-01T10:00:00Z"
    assert g.format_time(T0 + 0.2) == "2026-05-01T10:00:01Z"  # never earlier than the time it stands for
    assert g.parse_time("2026-05-01T10:00:00.5Z") == T0 + 0.5
    for bad in ("2026-05-01 10:00:00", "pending", "", None, 12, "2026-13-01T10:00:00Z"):
        assert g.parse_time(bad) is None


def test_the_mark_time_is_the_servers_stamp_of_the_mark_write_rounded_up():
    obj = {"metadata": {"managedFields": [
        {"manager": "stacksync", "operation": "Apply", "time": "2026-05-01T09:00:00Z"},
        {"manager": "stacksync-prune-mark", "operation": "Update", "subresource": "status", "time": "2026-05-01T08:00:00Z"},
        {"manager": "stacksync-prune-mark", "operation": "Update", "time": "2026-05-01T10:00:00Z"},
    ]}}
    # the entry has second precision: the write happened in [10:00:00, 10:00:01), so the mark says 10:00:01
    assert g.write_time(obj, g.mark_manager("stacksync")) == T0 + 1
    assert g.write_time(obj, "other") is None
    assert g.mark_manager("stacksync") == "stacksync-prune-mark"  # not the run's own: a sync takes those over


def marked(name, at=None, ns="web", info=CM):
    oid = ObjectId(info.group, info.kind, ns if info.namespaced else "", name)
    obj = o.stamp({"apiVersion": info.api_version, "kind": info.kind, "metadata": {"name": name}}, "s", oid, "sha256:x")
    if info.namespaced:
        obj["metadata"]["namespace"] = ns
    if at is not None:
        obj["metadata"]["annotations"][PRUNE_MARK_ANNOTATION] = at if isinstance(at, str) else g.format_time(at)
    return oid, info, obj


def prune_of(*candidates):
    plan = PrunePlan()
    plan.candidates = list(candidates)
    return plan


def names(entries):
    return [e[0].name for e in entries]


def test_split_marks_what_is_unmarked_keeps_what_waits_and_deletes_what_is_due():
    plan = prune_of(marked("new"), marked("pending", g.PENDING), marked("due", T0 - 60), marked("young", T0 - 5),
                    marked("just-due", T0 - 30))
    g.split(plan, 30, T0)
    assert names(plan.candidates) == ["due", "just-due"]
    # unmarked or still pending (the stamp was never written): marked now, pruned after now + grace
    assert names(plan.marks) == ["new", "pending"] and {m[3] for m in plan.marks} == {T0 + 30}
    assert names(plan.waiting) == ["young"] and plan.waiting[0][3] == T0 + 25


def test_without_a_server_time_nothing_marked_is_due():
    plan = prune_of(marked("old", T0 - 3600), marked("new"))
    g.split(plan, 30, None)
    assert plan.candidates == [] and names(plan.waiting) == ["old"] and names(plan.marks) == ["new"]
    assert plan.marks[0][3] is None
    assert g.waiting_reason(None) == "marked for pruning: pruned by the first run once the prune grace has passed"


def test_without_a_grace_every_candidate_is_due_marked_or_not():
    plan = prune_of(marked("a"), marked("b", T0))
    g.split(plan, None, T0)
    assert names(plan.candidates) == ["a", "b"] and plan.marks == [] and plan.waiting == []
    assert g.due(marked("b", T0)[2], None, None)


def test_a_run_without_a_grace_says_it_prunes_what_a_run_with_one_marked():
    plan = prune_of(marked("a"), marked("b", T0))
    g.split(plan, None, T0)
    assert g.marked_without_grace(plan, None) == (
        "1 object(s) marked for pruning by a run with a prune grace period are pruned now, as this run has none (set "
        "prune_grace to let them wait): " + str(plan.candidates[1][0]))
    assert g.marked_without_grace(prune_of(marked("a")), None) is None  # nothing marked: nothing to say
    assert g.marked_without_grace(plan, 30) is None


def test_a_namespace_or_crd_waits_while_what_it_holds_waits():
    ns = marked("web", T0 - 100, info=NS)
    crd = marked("widgets.example.com", T0 - 100, info=CRD)
    other_crd = marked("gadgets.example.com", T0 - 100, info=CRD)
    plan = prune_of(ns, crd, other_crd, marked("cm", T0 - 1), marked("w", info=WIDGET, ns="elsewhere"))
    g.split(plan, 10, T0)
    # the namespace holds a ConfigMap whose grace has not passed; the CRD serves a Widget marked just now
    assert names(plan.candidates) == ["gadgets.example.com"]
    assert sorted(names(plan.waiting)) == ["cm", "web", "widgets.example.com"]


def test_objects_back_in_git_lose_their_mark():
    class D:
        def __init__(self, oid):
            self.oid = oid

    back, fresh, unmarked = marked("back", T0), marked("fresh"), marked("plain")
    ours = {back[0]: (CM, back[2]), unmarked[0]: (CM, unmarked[2])}
    out = g.unmarks([D(back[0]), D(fresh[0]), D(unmarked[0])], ours)
    assert [(d.oid.name, live is back[2]) for d, _i, live in out] == [("back", True)]
