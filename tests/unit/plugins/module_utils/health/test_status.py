"""health_status.py: the health vocabulary (kstatus status, Argo CD health, reason, message) and condition access."""

import copy

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.health import rules as hl
from ansible_collections.stacksync.k8s.plugins.module_utils.health import status as hs
from ansible_collections.stacksync.k8s.plugins.module_utils.health.status import get_condition

from .test_rules import load


def test_health_is_a_value():
    got = hl.health(load("job-deadline-exceeded"))
    assert got.to_dict() == {"status": "Failed", "health": "Degraded", "reason": "DeadlineExceeded",
                             "message": "Job was active longer than specified deadline"}
    assert got.describe() == "DeadlineExceeded: Job was active longer than specified deadline"
    assert got.failed and not got.ready
    obj = load("configmap")
    assert hl.health(obj) == hl.health(copy.deepcopy(obj))


def test_condition_helper():
    dep = load("deployment-stalled")
    assert get_condition(dep, "Progressing")["status"] == "False" and get_condition(dep, "Available")["status"] == "False"
    assert get_condition(dep, "Ready") is None and get_condition({}, "Ready") is None


@pytest.mark.parametrize("make, status, health", [
    (hs.current, "Current", "Healthy"), (hs.in_progress, "InProgress", "Progressing"), (hs.failed, "Failed", "Degraded"),
    (hs.suspended, "Current", "Suspended")])
def test_each_status_has_its_argo_cd_health(make, status, health):
    got = make("Why", "what")
    assert (got.status, got.health, got.reason, got.message) == (status, health, "Why", "what")
    assert got.ready is (status == "Current") and got.failed is (status == "Failed")
    assert hs.in_progress("Blocked", "m", hs.DEGRADED).health == "Degraded"


def test_describe_says_what_is_set():
    assert hs.Health("Unknown", "Unknown", "", "").describe() == "Unknown"
    assert hs.current("", "only a message").describe() == "only a message"


def test_conditions_must_be_a_list_and_group_kind_comes_from_api_version():
    assert hs.conditions({}) == [] and hs.conditions({"status": {"conditions": None}}) == []
    with pytest.raises(TypeError, match="not a list"):
        hs.conditions({"status": {"conditions": {"type": "Ready"}}})
    assert hs.group_kind_of({"apiVersion": "apps/v1", "kind": "Deployment"}) == ("apps", "Deployment")
    assert hs.group_kind_of({"apiVersion": "v1", "kind": "Pod"}) == ("", "Pod")
    assert hs.group_kind_of({}) == ("", "")


def test_a_condition_gives_its_reason_and_message_or_the_default():
    got = hs._from_condition(hs.FAILED, {"type": "Ready", "status": "False"}, "NotReady")
    assert (got.status, got.reason, got.message) == ("Failed", "NotReady", "")
    assert hs._true({"status": {"conditions": [{"type": "Ready", "status": "False"}]}}, "Ready") is None
    assert hs._int({"replicas": "3"}, "replicas") == 3 and hs._int({}, "replicas", 1) == 1
