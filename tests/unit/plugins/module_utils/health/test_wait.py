"""wait.py: readiness rules and user conditions (JMESPath)."""

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.base.identity import ObjectId
from ansible_collections.stacksync.k8s.plugins.module_utils.health.wait import (
    NotReady,
    awaited,
    compile_conditions,
    evaluate,
    is_ready,
    not_ready_reason,
    wait_for,
)

from tests.unit.plugins.module_utils.health.test_rules import load, oid_of  # recorded objects


def test_readiness_rules():
    dep = ObjectId("apps", "Deployment", "n", "d")
    live_dep = {"metadata": {"generation": 2}, "spec": {"replicas": 2}, "status": {"observedGeneration": 2, "updatedReplicas": 2, "availableReplicas": 1}}
    assert not is_ready(dep, live_dep)
    live_dep["status"]["availableReplicas"] = 2
    assert is_ready(dep, live_dep)
    live_dep["metadata"]["generation"] = 3
    assert not is_ready(dep, live_dep)
    job = ObjectId("batch", "Job", "n", "j")
    assert is_ready(job, {"status": {"conditions": [{"type": "Complete", "status": "True"}]}})
    with pytest.raises(NotReady):
        is_ready(job, {"status": {"conditions": [{"type": "Failed", "status": "True"}]}})
    crd = ObjectId("apiextensions.k8s.io", "CustomResourceDefinition", "", "x")
    assert not is_ready(crd, {"status": {}})
    assert is_ready(ObjectId("", "ConfigMap", "n", "c"), {})  # nothing to wait for
    rules = compile_conditions([{"kind": "ConfigMap", "group": None, "expression": "data.ok == 'yes'"}])
    assert not is_ready(ObjectId("", "ConfigMap", "n", "c"), {"data": {}}, rules)
    assert is_ready(ObjectId("", "ConfigMap", "n", "c"), {"data": {"ok": "yes"}}, rules)


def test_user_rule_wins_both_ways():
    stalled = load("deployment-stalled")
    oid = oid_of(stalled)
    rules = compile_conditions([{"kind": "Deployment", "group": "apps", "expression": "status.updatedReplicas == `1`"}])
    assert is_ready(oid, stalled, rules) is True  # no NotReady: the user's rule decides
    assert evaluate(oid, stalled, rules).reason == "WaitConditionMet"
    rules = compile_conditions([{"kind": "Deployment", "expression": "status.readyReplicas == `1`"}])
    assert is_ready(oid, stalled, rules) is False
    assert not_ready_reason(oid, stalled, rules) == (
        "Progressing (WaitConditionNotMet): wait_condition status.readyReplicas == `1` is not true yet")
    # a rule for another group does not apply
    rules = compile_conditions([{"kind": "Deployment", "group": "example.com", "expression": "`true`"}])
    with pytest.raises(NotReady):
        is_ready(oid, stalled, rules)


class _Desired:
    """What wait reads of a desired object: its identity, and the resource to GET it from."""

    def __init__(self, oid):
        self.oid = oid
        self.info = self

    def object_path(self, namespace, name):
        return f"/{namespace}/{name}"


class _Client:
    """Answers GETs from ``objects`` (path -> successive answers, the last one repeated), logging the paths."""

    def __init__(self, objects):
        self.objects, self.gets = objects, []

    def get_or_none(self, path):
        self.gets.append(path)
        answers = self.objects[path]
        return answers.pop(0) if len(answers) > 1 else answers[0]


DEPLOYMENT = ObjectId("apps", "Deployment", "n", "db")
NOT_AVAILABLE = {"metadata": {"generation": 1}, "spec": {"replicas": 1},
                 "status": {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1, "availableReplicas": 0}}
AVAILABLE = {"metadata": {"generation": 1}, "spec": {"replicas": 1},
             "status": {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1, "availableReplicas": 1,
                        "readyReplicas": 1}}


def test_awaited_is_what_was_written_then_what_was_found_unchanged_with_its_observed_object():
    written, unchanged, other = (_Desired(ObjectId("", "ConfigMap", "n", name)) for name in ("new", "same", "gone"))
    ours = {unchanged.oid: ("info", {"observed": True}), written.oid: ("info", {"observed": "before the apply"})}
    got = awaited([(written, {"answered": True})], [unchanged, other], ours)
    # the written object as the apply answered it; the unchanged one as observed; one not observed is not there
    assert [(d.oid.name, obj) for d, obj in got] == [("new", {"answered": True}), ("same", {"observed": True})]
    assert awaited([], [], ours) == []


def test_wait_for_judges_the_objects_given_first_and_reads_only_those_not_ready():
    db, cm = _Desired(DEPLOYMENT), _Desired(ObjectId("", "ConfigMap", "n", "c"))
    client = _Client({"/n/db": [NOT_AVAILABLE, AVAILABLE]})
    healths = {}
    errors = wait_for(client, [(db, NOT_AVAILABLE), (cm, {})], None, 10, 0, sleep=lambda s: None, healths=healths)
    assert errors == [] and client.gets == ["/n/db", "/n/db"]  # the ConfigMap is never read again
    assert healths[DEPLOYMENT].health == "Healthy" and healths[cm.oid].health == "Healthy"
    client = _Client({})
    assert wait_for(client, [(db, AVAILABLE), (cm, {})], None, 10, 0, sleep=lambda s: None) == []
    assert client.gets == []  # all ready as given: not one request


def test_wait_for_names_every_object_still_not_ready_at_the_timeout():
    db = _Desired(DEPLOYMENT)
    now = [0.0]

    def sleep(seconds):
        now[0] += 3

    errors = wait_for(_Client({"/n/db": [NOT_AVAILABLE]}), [(db, NOT_AVAILABLE)], None, 5, 1, clock=lambda: now[0],
                      sleep=sleep)
    assert errors == ["timed out after 5s waiting for: Deployment.apps n/db: Progressing (LessAvailable): Available: 0/1"]
