"""wait.py: readiness rules and user conditions (JMESPath)."""

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.base.identity import ObjectId
from ansible_collections.stacksync.k8s.plugins.module_utils.health.wait import NotReady, compile_conditions, evaluate, is_ready, not_ready_reason

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
