"""health.py: the health of every recorded object (kstatus / Argo CD vocabularies), recorded
from a real kube-apiserver + kube-controller-manager (tests/unit/fixtures/health/README.md)."""

import json
import os

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.base.identity import ObjectId
from ansible_collections.stacksync.k8s.plugins.module_utils.health import rules as hl
from ansible_collections.stacksync.k8s.plugins.module_utils.health.status import Health
from ansible_collections.stacksync.k8s.plugins.module_utils.health.wait import NotReady, is_ready, not_ready_reason

from tests.conftest import REPO

FIXTURES = os.path.join(str(REPO), "tests", "unit", "fixtures", "health")


def load(name):
    with open(os.path.join(FIXTURES, name + ".json")) as f:
        return json.load(f)


def oid_of(obj):
    group, kind = hl.group_kind_of(obj)
    meta = obj["metadata"]
    return ObjectId(group, kind, meta.get("namespace", ""), meta["name"])


# fixture -> (kstatus status, Argo CD health, reason, a piece of the message)
RECORDED = {
    "deployment-available": ("Current", "Healthy", "Available", "Replicas: 1"),
    "deployment-progressing": ("InProgress", "Progressing", "LessAvailable", "Available: 0/1"),
    "deployment-stalled": ("Failed", "Degraded", "ProgressDeadlineExceeded", "has timed out progressing"),
    "deployment-paused": ("Current", "Suspended", "DeploymentPaused", "paused"),
    "deployment-scaled-to-zero": ("Current", "Healthy", "Available", "Replicas: 0"),
    "deployment-quota-blocked": ("InProgress", "Degraded", "FailedCreate", "exceeded quota: no-pods"),
    "replicaset-available": ("Current", "Healthy", "Available", "Replicas: 1"),
    "replicaset-pending": ("InProgress", "Progressing", "LessAvailable", "Available: 0/2"),
    "replicaset-quota-blocked": ("InProgress", "Degraded", "FailedCreate", "exceeded quota: no-pods"),
    "replicationcontroller-available": ("Current", "Healthy", "Available", "ReplicationController is available. Replicas: 1"),
    "replicationcontroller-pending": ("InProgress", "Progressing", "LessAvailable", "Available: 0/2"),
    "statefulset-ready": ("Current", "Healthy", "Ready", "Replicas: 1"),
    "statefulset-pending": ("InProgress", "Progressing", "LessReady", "Ready: 0/1"),
    "daemonset-no-nodes": ("Current", "Healthy", "Ready", "Replicas: 0"),
    "job-complete": ("Current", "Healthy", "JobComplete", "Succeeded: 1"),
    "job-running": ("InProgress", "Progressing", "JobRunning", "Active: 1"),
    "job-deadline-exceeded": ("Failed", "Degraded", "DeadlineExceeded", "active longer than specified deadline"),
    "job-suspended": ("Current", "Suspended", "JobSuspended", "suspended"),
    "cronjob-active": ("Current", "Healthy", "Scheduled", "*/5 * * * *"),
    "cronjob-suspended": ("Current", "Suspended", "CronJobSuspended", "suspended"),
    "pod-pending": ("InProgress", "Progressing", "PodPending", "Pending"),
    "pod-running-ready": ("Current", "Healthy", "PodReady", "Ready"),
    "pod-crashloopbackoff": ("Failed", "Degraded", "CrashLoopBackOff", "container app: back-off 5m0s"),
    "pod-imagepullbackoff": ("Failed", "Degraded", "ImagePullBackOff", "Back-off pulling image"),
    "pod-errimagepull": ("Failed", "Degraded", "ErrImagePull", "failed to pull"),
    "pvc-pending": ("InProgress", "Progressing", "NotBound", "Phase: Pending"),
    "pvc-bound": ("Current", "Healthy", "Bound", "Bound"),
    "service-clusterip": ("Current", "Healthy", "ServiceReady", "ready"),
    "service-lb-pending": ("InProgress", "Progressing", "NoLoadBalancerAddress", "load balancer"),
    "service-lb-assigned": ("Current", "Healthy", "LoadBalancerReady", "192.0.2.10"),
    "ingress-pending": ("InProgress", "Progressing", "NoLoadBalancerAddress", "Ingress"),
    "ingress-assigned": ("Current", "Healthy", "LoadBalancerReady", "192.0.2.11"),
    "pdb-insufficient-pods": ("Current", "Healthy", "InsufficientPods", "disruptions allowed: 0, healthy pods: 0/1"),
    "configmap": ("Current", "Healthy", "NoConditions", "no Ready condition"),
    "configmap-terminating": ("Terminating", "Progressing", "Terminating", "example.com/hold"),
    "crd-established": ("Current", "Healthy", "Established", "established"),
    "crd-names-not-accepted": ("Failed", "Degraded", "ListKindConflict", '"WidgetList" is already in use'),
    "apiservice-local": ("Current", "Healthy", "Local", "always available"),
    "apiservice-missing-endpoints": ("InProgress", "Degraded", "MissingEndpoints", "service/web"),
    "apiservice-service-not-found": ("InProgress", "Degraded", "ServiceNotFound", "service/nowhere"),
    "namespace-active": ("Current", "Healthy", "Active", "active"),
    "namespace-terminating": ("Terminating", "Progressing", "NamespaceTerminating",
                              "finalizers remaining: example.com/hold"),
    "cr-widget-ready": ("Current", "Healthy", "Succeeded", "all good"),
    "cr-widget-notready": ("InProgress", "Degraded", "BackendUnreachable", "cannot reach backend"),
    "cr-widget-reconciling": ("InProgress", "Progressing", "Progressing", "rolling out 2 of 3"),
    "cr-widget-stalled": ("Failed", "Degraded", "InvalidSpec", "spec.size must be positive"),
    "cr-widget-stale": ("InProgress", "Progressing", "LatestGenerationNotObserved", "generation is 2, but latest observed generation is 1"),
    "cr-widget-plain": ("Current", "Healthy", "NoConditions", "no Ready condition"),
    "cr-widget-terminating": ("Terminating", "Progressing", "Terminating", "example.com/hold"),
}


def test_every_recorded_object_has_an_expectation():
    names = sorted(f[:-5] for f in os.listdir(FIXTURES) if f.endswith(".json"))
    assert names == sorted(RECORDED)


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_recorded_object(name):
    status, health, reason, message = RECORDED[name]
    got = hl.health(load(name))
    assert (got.status, got.health, got.reason) == (status, health, reason)
    assert message in got.message


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_wait_agrees_with_health(name):
    """is_ready: True for Current, NotReady (with reason and message) for Failed, else False."""
    obj = load(name)
    status, _health, reason, message = RECORDED[name]
    if status == "Failed":
        with pytest.raises(NotReady) as e:
            is_ready(oid_of(obj), obj)
        assert str(e.value).startswith(reason + ": ") and message in str(e.value)
        assert e.value.health.reason == reason
    else:
        assert is_ready(oid_of(obj), obj) is (status == "Current")
    why = not_ready_reason(oid_of(obj), obj)
    assert (why is None) is (status == "Current")
    if why is not None:
        assert f"({reason})" in why and message in why


def test_group_kind_from_the_object_or_given():
    dep = load("deployment-stalled")
    assert hl.group_kind_of(dep) == ("apps", "Deployment")
    assert hl.group_kind_of(load("pod-pending")) == ("", "Pod")
    # an identity given by the caller wins (a ConfigMap rule for what claims to be a Deployment)
    assert hl.health(dep, ("", "ConfigMap")).reason == "NoConditions"


def test_not_found_is_missing():
    assert hl.health(None) == Health("NotFound", "Missing", "NotFound", "object not found")
    assert not_ready_reason(ObjectId("", "ConfigMap", "n", "gone"), None) == "Missing (NotFound): object not found"


def test_unreadable_status_is_unknown_not_an_exception():
    dep = load("deployment-available")
    dep["status"]["conditions"] = "nope"
    got = hl.health(dep)
    assert (got.status, got.health, got.reason) == ("Unknown", "Unknown", "InvalidStatus")
    dep = load("deployment-available")
    dep["status"]["updatedReplicas"] = "many"
    assert hl.health(dep).status == "Unknown"
    assert is_ready(oid_of(dep), dep) is False


def test_stalled_and_reconciling_apply_to_built_in_kinds_too():
    dep = load("deployment-available")
    dep["status"]["conditions"].append({"type": "Stalled", "status": "True", "reason": "Blocked", "message": "m"})
    assert hl.health(dep)[:3] == ("Failed", "Degraded", "Blocked")
