"""apply.py: what the applier says about objects it takes over from other stacks."""

import copy
from types import SimpleNamespace

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.base.identity import ObjectId
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import apply as a
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.changeset import ChangeSet
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.confinement import compile_policy
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.drift import compile_patterns


def desired(name, ignored=False):
    oid = ObjectId("", "ConfigMap", "apps", name)
    return SimpleNamespace(oid=oid, ignored=ignored, named=lambda: f"ConfigMap apps/{name}")


def test_one_object_taken_over_is_named_alone():
    assert a.takeover_warning("old", "new", ["ConfigMap apps/a"]) == (
        "ConfigMap apps/a belonged to stack 'old'; stack 'new' takes it over; if stack 'old' is still synced, the two "
        "take it from each other on every run: declare it in one of them only (fail_on_shared: true refuses it); "
        "if stack 'old' is no longer synced (its "
        "repository, path or stack name changed), delete it with state absent (it deletes only what still carries its "
        "label): while its record declares it, what stack 'new' stops declaring is released to it, not pruned")


def test_many_objects_taken_over_make_one_warning_with_the_first_names():
    names = [f"ConfigMap apps/c{i}" for i in range(8)]
    assert a.takeover_warning("old", "new", names) == (
        "8 objects belonged to stack 'old'; stack 'new' takes them over: ConfigMap apps/c0; ConfigMap apps/c1; "
        "ConfigMap apps/c2; ConfigMap apps/c3; ConfigMap apps/c4; and 3 more; if stack 'old' is still synced, the two "
        "take them from each other on every run: declare them in one of them only (fail_on_shared: true refuses it); "
        "if stack 'old' is no longer synced (its "
        "repository, path or stack name changed), delete it with state absent (it deletes only what still carries its "
        "label): while its record declares them, what stack 'new' stops declaring is released to it, not pruned")
    assert "takes them over: ConfigMap apps/c0; ConfigMap apps/c1; if stack 'old' is still" in a.takeover_warning(
        "old", "new", names[:2])


def test_shared_objects_warn_once_per_stack_that_loses_objects():
    objs = [desired("a"), desired("b"), desired("c"), desired("d", ignored=True), desired("mine")]
    snap = SimpleNamespace(others={o.oid: stack for o, stack in zip(objs, ["x", "y", "x", "x"])})
    changeset = ChangeSet()
    a.shared_objects(objs, snap, SimpleNamespace(fail_on_shared=False, stack="s"), changeset)
    assert [w.split("; if stack")[0] for w in changeset.warnings] == [
        "2 objects belonged to stack 'x'; stack 's' takes them over: ConfigMap apps/a; ConfigMap apps/c",
        "ConfigMap apps/b belonged to stack 'y'; stack 's' takes it over",
    ]


def test_shared_objects_fail_with_fail_on_shared():
    objs = [desired("a")]
    snap = SimpleNamespace(others={objs[0].oid: "x"})
    with pytest.raises(a.ApplyError, match=r"objects belong to other stacks \(fail_on_shared is set\): "
                                           r"ConfigMap apps/a \(stack 'x'\)"):
        a.shared_objects(objs, snap, SimpleNamespace(fail_on_shared=True, stack="s"), ChangeSet())


def test_a_confined_stack_refuses_objects_of_other_stacks_unless_fail_on_shared_is_false():
    """A tenant's stack (allowed_namespaces...) never takes over what another stack holds in its namespaces."""
    objs = [desired("a"), desired("mine")]
    snap = SimpleNamespace(others={objs[0].oid: "platform"})
    confined = compile_policy({"allowed_namespaces": ["apps"]})
    with pytest.raises(a.ApplyError, match=r"objects belong to other stacks \(the stack is confined; fail_on_shared: "
                                           r"false lets it take them over\): ConfigMap apps/a \(stack 'platform'\)"):
        a.shared_objects(objs, snap, SimpleNamespace(fail_on_shared=None, policy=confined, stack="s"), ChangeSet())
    changeset = ChangeSet()
    a.shared_objects(objs, snap, SimpleNamespace(fail_on_shared=False, policy=confined, stack="s"), changeset)
    assert changeset.warnings[0].startswith("ConfigMap apps/a belonged to stack 'platform'; stack 's' takes it over")
    changeset = ChangeSet()  # unconfined and unset: taken over with a warning
    a.shared_objects(objs, snap, SimpleNamespace(fail_on_shared=None, policy=None, stack="s"), changeset)
    assert len(changeset.warnings) == 1
    assert [a.refuses_shared(SimpleNamespace(fail_on_shared=f, policy=p)) for f, p in
            ((None, None), (None, confined), (False, confined), (True, None))] == [False, True, False, True]


def test_a_stack_that_refuses_shared_objects_fails_when_it_cannot_tell():
    """Desired objects whose kind could not be listed where they are: a stack that refuses shared objects fails
    before any write, naming why; one that takes them over goes on."""
    objs = [desired("a")]
    snap = SimpleNamespace(others={}, unchecked={objs[0].oid: "forbidden"})
    confined = compile_policy({"allowed_namespaces": ["apps"]})
    with pytest.raises(a.ApplyError, match=r"cannot tell whether objects belong to other stacks \(the stack is "
                                           r"confined, .*\): ConfigMap apps/a \(forbidden\)"):
        a.shared_objects(objs, snap, SimpleNamespace(fail_on_shared=None, policy=confined, stack="s"), ChangeSet())
    changeset = ChangeSet()
    a.shared_objects(objs, snap, SimpleNamespace(fail_on_shared=None, policy=None, stack="s"), changeset)
    assert changeset.warnings == []


class PutClient:
    """Answers each PUT with the next of ``answers`` (an ApiError is raised); records the bodies."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.bodies = []

    def request(self, method, path, params=None, body=None, **_kw):
        assert method == "PUT" and params == {"dryRun": "All", "fieldManager": "stacksync"}
        self.bodies.append(copy.deepcopy(body))
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def dry_run_applied():
    """A dry-run apply's ConfigMap: kubectl-create alone owns label team and key b."""
    fields = {"f:data": {"f:a": {}, "f:b": {}}, "f:metadata": {"f:labels": {"f:team": {}}}}
    return {"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "1", "b": "2"},
            "metadata": {"name": "x", "namespace": "apps", "resourceVersion": "7", "labels": {"team": "t"},
                         "managedFields": [
                             {"manager": "kubectl-create", "operation": "Update", "fieldsV1": fields},
                             {"manager": "stacksync", "operation": "Apply", "fieldsV1": {"f:data": {"f:a": {}}}}]}}


def applier(client):
    opts = SimpleNamespace(field_manager="stacksync", takeover=compile_patterns(None))
    return a.Applier(SimpleNamespace(client=client, discovery=None, opts=opts, map=map, ensure_lock=lambda prove=False: None))


def test_check_mode_predicts_the_takeover_with_a_dry_run_update_without_what_only_people_tools_own():
    predicted = {"kind": "ConfigMap", "data": {"a": "1"}}
    client = PutClient(predicted)
    d = SimpleNamespace(drift=None)
    assert applier(client).predict_takeover(d, "/api/v1/namespaces/apps/configmaps/x", dry_run_applied()) is predicted
    (body,) = client.bodies
    assert body["data"] == {"a": "1"} and "team" not in body["metadata"].get("labels", {})
    assert "managedFields" not in body["metadata"] and body["metadata"]["resourceVersion"] == "7"
    assert [e["manager"] for e in d.drift] == ["kubectl-create"]  # an adopted object reports the takeover


def test_check_mode_prediction_retries_a_conflict_unconditionally_and_keeps_the_apply_when_refused():
    predicted = {"kind": "ConfigMap", "data": {"a": "1"}}
    client = PutClient(a.ApiError(409, "Conflict"), predicted)
    assert applier(client).predict_takeover(SimpleNamespace(drift=None), "/p", dry_run_applied()) is predicted
    assert [b["metadata"].get("resourceVersion") for b in client.bodies] == ["7", None]
    obj = dry_run_applied()
    for refusal in (a.ApiError(403, "Forbidden"), a.ApiError(422, "Invalid")):
        assert applier(PutClient(refusal)).predict_takeover(SimpleNamespace(drift=None), "/p", obj) is obj
    assert applier(PutClient(a.ApiError(409), a.ApiError(409))).predict_takeover(
        SimpleNamespace(drift=None), "/p", obj) is obj


# -- the Applier on the simulator ------------------------------------------------------------------------
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.context import RunContext  # noqa: E402
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.prepare import stamp_all  # noqa: E402

from ..simengine import cm_path, configmap, create, live, manager, namespace, unique  # noqa: E402

CRD = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "gadgets.apply.stacksync.io"},
       "spec": {"group": "apply.stacksync.io", "scope": "Namespaced",
                "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
                "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                    "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}}


def apply_run(client, stack, resources, dry_run=False, ensure_lock=lambda prove=False: None, **options):
    """``(ChangeSet, written)`` of the Applier applying every desired object of ``resources`` not in sync."""
    m = manager(client, stack, **options)
    cs = ChangeSet()
    desired = m.prepare(resources, cs)
    stamp_all(desired, stack, None)
    plan = m.plan(desired, cs, pruning=False)
    run = RunContext(client, m.opts, m.discovery, map_fn=map)
    run.lock = SimpleNamespace(ensure=ensure_lock)
    applier = a.Applier(run)
    written = applier.apply_all(plan.to_apply, plan.snap.ours, cs, dry_run)
    return cs, written


def test_a_custom_resource_is_applied_once_its_crd_of_the_same_run_is_established(sim_client):
    ns, stack = unique("a-crd"), unique("s")
    gadget = {"apiVersion": "apply.stacksync.io/v1", "kind": "Gadget", "metadata": {"name": "g", "namespace": ns}}
    cs, written = apply_run(sim_client, stack, [gadget, CRD, namespace(ns)])
    assert [(e.action, e.oid.kind) for e in cs.entries] == [("created", "CustomResourceDefinition"),
                                                            ("created", "Namespace"), ("created", "Gadget")]
    assert [d.oid.kind for d, _obj in written] == ["CustomResourceDefinition", "Namespace", "Gadget"]
    assert live(sim_client, f"/apis/apply.stacksync.io/v1/namespaces/{ns}/gadgets/g") is not None


def test_fields_a_person_set_with_kubectl_are_taken_over_and_removed_unless_the_policy_is_merge(sim_client):
    ns, stack = unique("a-take"), unique("s")
    create(sim_client, "/api/v1/namespaces", namespace(ns))
    for name in ("plain", "merged"):
        sim_client.request("POST", f"/api/v1/namespaces/{ns}/configmaps", params={"fieldManager": "kubectl-create"},
                           body=configmap(name, ns, extra="by hand", k=name))
    merged = configmap("merged", ns, annotations={"stacksync.io/ssa": "merge"}, k="merged")
    cs, _written = apply_run(sim_client, stack, [configmap("plain", ns, k="plain"), merged])
    assert [e.action for e in cs.entries] == ["configured", "configured"]
    assert live(sim_client, cm_path(ns, "plain"))["data"] == {"k": "plain"}  # adopted in one run
    assert live(sim_client, cm_path(ns, "merged"))["data"] == {"k": "merged", "extra": "by hand"}
    managers = [e["manager"] for e in live(sim_client, cm_path(ns, "plain"))["metadata"]["managedFields"]]
    assert managers == ["stacksync"]


def test_an_immutable_field_fails_the_object_or_recreates_it_when_asked(sim_client):
    ns, stack = unique("a-immutable"), unique("s")
    frozen = dict(configmap("frozen", ns), immutable=True)
    apply_run(sim_client, stack, [namespace(ns), frozen])
    uid = live(sim_client, cm_path(ns, "frozen"))["metadata"]["uid"]
    changed = dict(frozen, data={"k": "new"})
    cs, written = apply_run(sim_client, stack, [namespace(ns), changed])
    (error,) = cs.errors
    assert error.startswith("{}: cannot change immutable field(s) data (set recreate_on_immutable or the "
                            "stacksync.io/recreate-on-immutable annotation".format(ObjectId("", "ConfigMap", ns, "frozen")))
    assert written == [] and live(sim_client, cm_path(ns, "frozen"))["data"] == {"k": "frozen"}
    # check mode: the same verb, nothing deleted
    cs, written = apply_run(sim_client, stack, [namespace(ns), changed], dry_run=True, recreate_on_immutable=True)
    assert cs.errors == [] and [e.action for e in cs.entries] == ["recreated"]
    assert live(sim_client, cm_path(ns, "frozen"))["metadata"]["uid"] == uid
    (warning,) = cs.warnings
    assert warning.startswith(f"ConfigMap {ns}/frozen") and " would be deleted and created again: immutable field(s) data" \
        " changed (the server said: " in warning
    cs, written = apply_run(sim_client, stack, [namespace(ns), changed], recreate_on_immutable=True)
    assert cs.errors == [] and [e.action for e in cs.entries] == ["recreated"]
    (entry,) = cs.result()["applied"]
    assert entry["action"] == "recreated" and entry["reason"].startswith("immutable field(s) data changed (the server said: ")
    assert cs.counts["recreated"] == 1 and cs.counts["configured"] == 0 and cs.changed
    (warning,) = cs.warnings
    assert " was deleted and created again: immutable field(s) data changed" in warning
    after = live(sim_client, cm_path(ns, "frozen"))
    assert after["data"] == {"k": "new"} and after["metadata"]["uid"] != uid


def test_check_mode_diff_of_a_recreate_keeps_what_the_server_defaults(sim_client):
    ns, stack = unique("a-recreate-diff"), unique("s")
    dep = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": ns},
           "spec": {"selector": {"matchLabels": {"app": "web"}},
                    "template": {"metadata": {"labels": {"app": "web"}},
                                 "spec": {"containers": [{"name": "web", "image": "nginx:1"}]}}}}
    apply_run(sim_client, stack, [namespace(ns), dep])
    path = f"/apis/apps/v1/namespaces/{ns}/deployments/web"
    uid = live(sim_client, path)["metadata"]["uid"]
    changed = copy.deepcopy(dep)
    changed["spec"]["selector"]["matchLabels"]["tier"] = "front"
    changed["spec"]["template"]["metadata"]["labels"]["tier"] = "front"
    cs, _written = apply_run(sim_client, stack, [namespace(ns), changed], dry_run=True, recreate_on_immutable=True,
                             diff=True)
    assert [e.action for e in cs.entries] == ["recreated"] and live(sim_client, path)["metadata"]["uid"] == uid
    (entry,) = cs.diff
    before, after = entry["before"], entry["after"]
    for default in ("progressDeadlineSeconds", "revisionHistoryLimit", "strategy"):  # defaulted: not shown as removed
        assert after["spec"][default] == before["spec"][default], default
    assert after["spec"]["selector"]["matchLabels"] == {"app": "web", "tier": "front"}
    assert after["metadata"]["name"] == "web" and "generateName" not in after["metadata"]
    # nothing of the dry-run create is left behind
    names = [o["metadata"]["name"] for o in sim_client.get(f"/apis/apps/v1/namespaces/{ns}/deployments")["items"]]
    assert names == ["web"]


def test_recreate_warnings_say_what_goes_with_the_object():
    why = a.recreate_reason(["spec.clusterIPs[0]"], "may not change once set")
    assert why == "immutable field(s) spec.clusterIPs[0] changed (the server said: may not change once set)"
    assert a.recreate_warning("Service web/web", why) == (
        "Service web/web was deleted and created again: " + why + "; what it owned (a workload's Pods, a Job's runs) "
        "was deleted with it")
    assert a.recreate_warning("Service web/web", why, dry_run=True).startswith(
        "Service web/web would be deleted and created again: " + why + "; what it owns")


def test_a_refused_apply_fails_that_object_only_and_a_secrets_values_never_reach_the_message(sim_client):
    ns, stack = unique("a-refused"), unique("s")
    bad = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "pw", "namespace": ns}, "type": "Opaque",
           "data": {"password": "bm90LWJhc2U2NA=="}}
    apply_run(sim_client, stack, [namespace(ns), bad])
    changed = dict(bad, type="kubernetes.io/basic-auth", data={"password": "c3VwZXItc2VjcmV0"})  # type is immutable
    cs, _written = apply_run(sim_client, stack, [namespace(ns), changed, configmap("fine", ns)])
    assert [(e.action, e.oid.kind) for e in cs.entries] == [("failed", "Secret"), ("created", "ConfigMap")]
    # the server quotes the refused value; for a Secret it is left out
    assert cs.errors[0].endswith('Secret "pw" is invalid: type: Invalid value: <redacted>: field is immutable')


def test_check_mode_dry_runs_write_nothing_and_diffs_show_the_live_object_first(sim_client):
    ns, stack = unique("a-dry"), unique("s")
    apply_run(sim_client, stack, [namespace(ns), configmap("c", ns, k="old")])
    cs, written = apply_run(sim_client, stack, [namespace(ns), configmap("c", ns, k="new")], dry_run=True, diff=True,
                            check_mode=True)
    assert [e.action for e in cs.entries] == ["configured"] and written and cs.diff[0]["before"]["data"] == {"k": "old"}
    assert cs.diff[0]["after"]["data"] == {"k": "new"}
    assert live(sim_client, cm_path(ns, "c"))["data"] == {"k": "old"}


def test_every_stage_starts_only_while_the_run_holds_its_lock(sim_client):
    ns, stack = unique("a-lock"), unique("s")
    calls = []

    def ensure_lock(prove=False):
        calls.append(1)
        if len(calls) == 2:
            raise a.ApplyError("lost the lock")  # any error: the stage is not started

    with pytest.raises(a.ApplyError, match="lost the lock"):
        apply_run(sim_client, stack, [namespace(ns), configmap("c", ns)], ensure_lock=ensure_lock)
    assert live(sim_client, "/api/v1/namespaces/" + ns) is not None and live(sim_client, cm_path(ns, "c")) is None


def test_foreign_owned_names_desired_objects_another_tool_manages(sim_client):
    ns = unique("a-foreign")
    create(sim_client, "/api/v1/namespaces", namespace(ns))
    argo = configmap("argo", ns)
    argo["metadata"]["labels"] = {"argocd.argoproj.io/instance": "shop"}
    create(sim_client, f"/api/v1/namespaces/{ns}/configmaps", argo)
    m = manager(sim_client, "s")
    desired = m.prepare([configmap("argo", ns), configmap("free", ns)], ChangeSet())
    assert [(d.oid.name, tool) for d, tool in a.foreign_owned(sim_client, desired, {}, map)] == [("argo", "Argo CD (shop)")]
    # already ours, or marked so in git itself: not another tool's
    assert a.foreign_owned(sim_client, desired, {desired[0].oid: None}, map) == []


def test_backoff_doubles_up_to_the_poll_interval():
    delays = a.backoff(0.3)
    assert [next(delays) for _ in range(5)] == [0.05, 0.1, 0.2, 0.3, 0.3]
    assert next(a.backoff(0.01)) == 0.01


def test_api_messages_about_a_secret_drop_its_values():
    d = SimpleNamespace(oid=ObjectId("", "Secret", "ns", "pw"), manifest={"stringData": {"password": "hunter2"}})
    assert "hunter2" not in a.api_message(d, 'Invalid value: "hunter2"')
    cm = SimpleNamespace(oid=ObjectId("", "ConfigMap", "ns", "c"), manifest={"data": {"k": "hunter2"}})
    assert a.api_message(cm, 'Invalid value: "hunter2"') == 'Invalid value: "hunter2"'


def test_a_field_a_person_added_to_one_of_our_objects_is_taken_over_and_removed(sim_client):
    ns, stack = unique("a-edit"), unique("s")
    apply_run(sim_client, stack, [namespace(ns), configmap("c", ns, k="git")])
    sim_client.request("PATCH", cm_path(ns, "c"), params={"fieldManager": "kubectl-edit"},
                       body={"data": {"added": "by hand"}}, content_type="application/merge-patch+json")
    cs, _written = apply_run(sim_client, stack, [namespace(ns), configmap("c", ns, k="git")])
    assert [(e.action, e.oid.name) for e in cs.entries] == [("configured", "c")]
    assert [d["manager"] for d in cs.entries[0].extra["drift"]] == ["kubectl-edit"]  # what the apply took over
    obj = live(sim_client, cm_path(ns, "c"))
    assert obj["data"] == {"k": "git"} and [e["manager"] for e in obj["metadata"]["managedFields"]] == ["stacksync"]
