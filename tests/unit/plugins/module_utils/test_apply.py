"""apply.py: what the applier says about objects it takes over from other stacks."""

import copy
from types import SimpleNamespace

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils import apply as a
from ansible_collections.stacksync.k8s.plugins.module_utils.changeset import ChangeSet
from ansible_collections.stacksync.k8s.plugins.module_utils.drift import compile_patterns
from ansible_collections.stacksync.k8s.plugins.module_utils.identity import ObjectId


def desired(name, ignored=False):
    oid = ObjectId("", "ConfigMap", "apps", name)
    return SimpleNamespace(oid=oid, ignored=ignored, named=lambda: f"ConfigMap apps/{name}")


def test_one_object_taken_over_is_named_alone():
    assert a.takeover_warning("old", "new", ["ConfigMap apps/a"]) == (
        "ConfigMap apps/a belonged to stack 'old'; stack 'new' takes it over")


def test_many_objects_taken_over_make_one_warning_with_the_first_names():
    names = [f"ConfigMap apps/c{i}" for i in range(8)]
    assert a.takeover_warning("old", "new", names) == (
        "8 objects belonged to stack 'old'; stack 'new' takes them over: ConfigMap apps/c0; ConfigMap apps/c1; "
        "ConfigMap apps/c2; ConfigMap apps/c3; ConfigMap apps/c4; and 3 more")
    assert a.takeover_warning("old", "new", names[:2]).endswith("takes them over: ConfigMap apps/c0; ConfigMap apps/c1")


def test_shared_objects_warn_once_per_stack_that_loses_objects():
    objs = [desired("a"), desired("b"), desired("c"), desired("d", ignored=True), desired("mine")]
    snap = SimpleNamespace(others={o.oid: stack for o, stack in zip(objs, ["x", "y", "x", "x"])})
    changeset = ChangeSet()
    a.shared_objects(objs, snap, SimpleNamespace(fail_on_shared=False, stack="s"), changeset)
    assert changeset.warnings == [
        "2 objects belonged to stack 'x'; stack 's' takes them over: ConfigMap apps/a; ConfigMap apps/c",
        "ConfigMap apps/b belonged to stack 'y'; stack 's' takes it over",
    ]


def test_shared_objects_fail_with_fail_on_shared():
    objs = [desired("a")]
    snap = SimpleNamespace(others={objs[0].oid: "x"})
    with pytest.raises(a.ApplyError, match=r"objects belong to other stacks \(fail_on_shared is set\): "
                                           r"ConfigMap apps/a \(stack 'x'\)"):
        a.shared_objects(objs, snap, SimpleNamespace(fail_on_shared=True, stack="s"), ChangeSet())


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
    return a.Applier(client, None, opts, map, lambda: None)


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
