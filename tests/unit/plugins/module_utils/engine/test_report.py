"""report.py: the ``stack_info`` report (pure): each live object's status against the desired set, its Argo CD sync
status and health, the counts, and the record's fields."""

import copy
from types import SimpleNamespace

from ansible_collections.stacksync.k8s.plugins.module_utils.base.identity import ObjectId
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import plan as P
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import report as R
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.changeset import ChangeSet
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.objects import stack_checksum
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.observe import Snapshot
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.options import StackOptions
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.prepare import prepare, stamp_all
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.discovery import DiscoveryIndex, ResourceInfo, UnknownKind

VERBS = ("create", "delete", "get", "list", "patch", "update", "watch")
CMS = ResourceInfo("", "v1", "ConfigMap", "configmaps", True, VERBS)
DEPLOYMENTS = ResourceInfo("apps", "v1", "Deployment", "deployments", True, VERBS)
STACK = "web"


class Discovery:
    index = DiscoveryIndex([CMS, DEPLOYMENTS])

    def resolve(self, group, kind, version=None):
        info = self.index.lookup(group, kind, version)
        if info is None:
            raise UnknownKind(kind)
        return info


def cm(name, **data):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "apps"}, "data": data or {"k": name}}


def desired(*manifests):
    opts = StackOptions(STACK, namespace="apps")
    out = prepare(list(manifests), Discovery(), opts, lambda m: None)
    stamp_all(out, STACK, None)
    return out


def applied(d, **changes):
    """The live object a sync of ``d`` left (no managedFields: values are compared), with ``changes`` to its data."""
    obj = copy.deepcopy(d.manifest)
    obj["metadata"]["uid"] = "uid-" + d.oid.name
    obj["data"].update(changes)
    return obj


def snapshot(*items):
    snap = Snapshot()
    for oid, info, obj in items:
        snap.ours[oid] = (info, obj)
    return snap


def record(data=None):
    gks = set()
    for text in ((data or {}).get("groupKinds") or "").split(","):
        if text:
            gks.add(("", text))
    return SimpleNamespace(data=data, group_kinds=gks)


def statuses(report):
    return dict((o["name"], (o["status"], o["sync"], o["health"])) for o in report["objects"])


def test_each_object_is_in_sync_drifted_out_of_date_missing_or_would_be_pruned():
    same, edited, old, absent = desired(cm("same"), cm("edited"), cm("old"), cm("absent"))
    stale = applied(old)
    stale["metadata"]["annotations"]["stacksync.io/checksum"] = "sha256:an-older-commit"
    (leftover,) = desired(cm("leftover"))
    live = [(d.oid, CMS, obj) for d, obj in ((same, applied(same)), (edited, applied(edited, k="by hand")),
                                             (old, stale), (leftover, applied(leftover)))]
    snap = snapshot(*live)
    wanted = [same, edited, old, absent]
    prune = P.prune_plan(snap.ours, STACK, set(d.oid for d in wanted), set(d.checksum for d in wanted))
    report = R.stack_report(snap, wanted, prune, StackOptions(STACK), record({"groupKinds": "ConfigMap", "commit": "abc"}),
                            with_desired=True)
    assert statuses(report) == {
        "same": ("in_sync", "Synced", "Healthy"), "edited": ("drifted", "OutOfSync", "Healthy"),
        "old": ("out_of_date", "OutOfSync", "Healthy"), "leftover": ("would_prune", "Extraneous", "Healthy"),
        "absent": ("missing", "Missing", "Missing")}
    assert report["counts"] == {"sync": {"Synced": 1, "OutOfSync": 2, "Extraneous": 1, "Missing": 1},
                                "health": {"Healthy": 4, "Missing": 1}}
    assert report["commit"] == "abc" and report["group_kinds"] == ["ConfigMap"] and report["unverified_kinds"] == []
    assert report["checksum"] == stack_checksum([d.checksum for d in wanted])
    absent_entry = next(o for o in report["objects"] if o["name"] == "absent")
    assert absent_entry["checksum"] == absent.checksum and absent_entry["apiVersion"] == "v1"


def test_what_the_prune_plan_keeps_releases_or_waits_for_is_reported_with_its_reason():
    kept, released, terminating, doomed = desired(cm("kept"), cm("released"), cm("terminating"), cm("doomed"))
    plan = P.PrunePlan()
    plan.kept.append((kept.oid, CMS, applied(kept), P.Reason(P.HOLDS_OTHERS, "still contains objects")))
    plan.releases.append((released.oid, CMS, applied(released), "other"))
    plan.terminating.append((terminating.oid, CMS, applied(terminating), P.TERMINATING_REASON))
    plan.candidates.append((doomed.oid, CMS, applied(doomed)))
    snap = snapshot(*[(d.oid, CMS, applied(d)) for d in (kept, released, terminating, doomed)])
    report = R.stack_report(snap, [], plan, StackOptions(STACK), record(), with_desired=True)
    by_name = dict((o["name"], o) for o in report["objects"])
    assert (by_name["kept"]["status"], by_name["kept"]["code"], by_name["kept"]["reason"]) == (
        "kept", P.HOLDS_OTHERS, "still contains objects")
    assert (by_name["released"]["status"], by_name["released"]["stack"], by_name["released"]["reason"]) == (
        "would_release", "other", "still declared by stack 'other'")
    assert by_name["terminating"]["status"] == "terminating" and by_name["doomed"]["status"] == "would_prune"
    assert [by_name[n]["sync"] for n in ("kept", "released", "terminating", "doomed")] == [
        "Synced", "Extraneous", "Extraneous", "Extraneous"]
    assert report["record"] == {} and report["commit"] is None and report["checksum"] == stack_checksum([])


def test_without_a_desired_set_objects_are_present_or_kept_by_the_rule_that_keeps_them():
    mine, child = desired(cm("mine"), cm("child"))
    owned = applied(child)
    owned["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "x", "uid": "u"}]
    snap = snapshot((mine.oid, CMS, applied(mine)), (child.oid, CMS, owned))
    snap.unverified.add(("apps", "Deployment"))
    report = R.stack_report(snap, [], None, StackOptions(STACK), record({"lastSyncTime": "2026-01-01T00:00:00Z"}), False)
    by_name = dict((o["name"], o) for o in report["objects"])
    assert by_name["mine"]["status"] == "present" and "reason" not in by_name["mine"]
    assert (by_name["child"]["status"], by_name["child"]["code"]) == ("kept", P.HAS_OWNER)
    assert report["checksum"] is None and report["last_sync_time"] == "2026-01-01T00:00:00Z"
    assert report["unverified_kinds"] == ["Deployment.apps"]


def test_health_comes_with_its_reason():
    (web,) = desired({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "apps"},
                      "spec": {"replicas": 2, "selector": {"matchLabels": {"a": "b"}},
                               "template": {"metadata": {"labels": {"a": "b"}},
                                            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
    obj = copy.deepcopy(web.manifest)
    obj["metadata"]["generation"] = 1
    obj["status"] = {"observedGeneration": 1, "replicas": 2, "updatedReplicas": 2, "readyReplicas": 1,
                     "availableReplicas": 1}
    report = R.stack_report(snapshot((web.oid, DEPLOYMENTS, obj)), [web], P.PrunePlan(), StackOptions(STACK), record(), True)
    (entry,) = report["objects"]
    assert (entry["health"], entry["health_reason"]) == ("Progressing", "LessAvailable: Available: 1/2")
    assert entry["kind"] == "Deployment" and entry["namespace"] == "apps"


def test_the_report_agrees_with_what_a_sync_would_report():
    """The statuses come from the plan a sync executes: what the report says would be pruned is what report_plan and
    the prune plan give the sync."""
    keep, drop = desired(cm("keep"), cm("drop"))
    snap = snapshot((keep.oid, CMS, applied(keep)), (drop.oid, CMS, applied(drop)))
    prune = P.prune_plan(snap.ours, STACK, {keep.oid}, {keep.checksum})
    report = R.stack_report(snap, [keep], prune, StackOptions(STACK), record(), True)
    would = set(ObjectId("", o["kind"], o["namespace"], o["name"]) for o in report["objects"] if o["status"] == "would_prune")
    assert would == prune.ids == {drop.oid}
    cs = ChangeSet()
    P.report_plan(P.Plan(snap, [], [keep], [], prune), cs, applying=True)
    assert [(e.action, e.oid.name) for e in cs.entries] == [("unchanged", "keep")]
