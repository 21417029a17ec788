"""health_kinds.py: the health rule of each kind (workloads, Pods, storage, networking, API extensions, Namespaces).

The recorded objects of a real cluster are checked through ``rules.health`` in test_rules.py; here each rule's
own branches, on those objects changed the way a cluster changes them."""

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.health import rules as hl
from ansible_collections.stacksync.k8s.plugins.module_utils.health.kinds import KIND_RULES, terminating
from ansible_collections.stacksync.k8s.plugins.module_utils.health.status import Health

from .test_rules import load


def test_deployment_rollout_steps():
    dep = load("deployment-available")
    dep["metadata"]["generation"] = 2
    assert hl.health(dep).reason == "LatestGenerationNotObserved"
    dep = load("deployment-available")
    dep["spec"]["replicas"] = 3
    assert hl.health(dep)[:3] == ("InProgress", "Progressing", "LessUpdated")
    assert hl.health(dep).message == "Updated: 1/3"
    dep = load("deployment-available")
    dep["status"]["replicas"] = 2  # an old ReplicaSet's pod still terminating
    assert hl.health(dep)[2:] == ("ExtraPods", "Pending termination: 1")


def test_deployment_paused_wins_over_progress():
    dep = load("deployment-progressing")
    dep["spec"]["paused"] = True
    assert hl.health(dep)[:2] == ("Current", "Suspended")


def test_statefulset_revision_and_partition():
    sts = load("statefulset-ready")
    sts["status"]["updateRevision"] = "ready-new"
    assert hl.health(sts)[:3] == ("InProgress", "Progressing", "RevisionMismatch")
    sts["spec"]["updateStrategy"]["rollingUpdate"] = {"partition": 1}
    sts["spec"]["replicas"] = sts["status"]["replicas"] = sts["status"]["readyReplicas"] = 2
    sts["status"]["updatedReplicas"] = 1  # only the ordinals >= partition roll out
    assert hl.health(sts).reason == "PartitionRolledOut"
    sts["status"]["updatedReplicas"] = 0
    assert hl.health(sts).reason == "PartitionRollout"
    sts["spec"]["updateStrategy"] = {"type": "OnDelete"}
    assert hl.health(sts).reason == "OnDelete"


def test_daemonset_needs_the_controller_to_have_looked():
    ds = load("daemonset-no-nodes")
    del ds["status"]["observedGeneration"]
    assert hl.health(ds).reason == "NoObservedGeneration"
    ds = load("daemonset-no-nodes")
    ds["status"].update(desiredNumberScheduled=2, currentNumberScheduled=2, updatedNumberScheduled=2, numberAvailable=1)
    assert hl.health(ds)[2:] == ("LessAvailable", "Available: 1/2")


def test_pod_failed_phase_and_init_containers():
    pod = load("pod-running-ready")
    pod["status"].update(phase="Failed", reason="Evicted", message="The node was low on resource: memory.")
    assert hl.health(pod)[:3] == ("Failed", "Degraded", "Evicted")
    pod = load("pod-pending")
    pod["status"]["initContainerStatuses"] = [{"name": "init", "state": {"waiting": {"reason": "CreateContainerConfigError",
                                                                                     "message": 'secret "db" not found'}}}]
    assert hl.health(pod)[2:] == ("CreateContainerConfigError", 'container init: secret "db" not found')
    pod = load("pod-pending")
    pod["status"]["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                    "message": "0/3 nodes are available"}]
    assert hl.health(pod)[:3] == ("InProgress", "Progressing", "Unschedulable")


def test_pvc_lost_and_crd_installing():
    pvc = load("pvc-bound")
    pvc["status"]["phase"] = "Lost"
    assert hl.health(pvc)[:2] == ("Failed", "Degraded")
    crd = load("crd-established")
    crd["status"]["conditions"] = [c for c in crd["status"]["conditions"] if c["type"] != "Established"]
    assert hl.health(crd).reason == "Installing"
    crd["status"]["conditions"].append({"type": "Established", "status": "False", "reason": "Installing"})
    assert hl.health(crd).status == "InProgress"


@pytest.mark.parametrize("group_kind", sorted(KIND_RULES))
def test_every_rule_reads_an_object_the_controllers_have_not_looked_at_yet(group_kind):
    group, kind = group_kind
    obj = {"apiVersion": (group + "/v1") if group else "v1", "kind": kind, "metadata": {"name": "new"}}
    got = KIND_RULES[group_kind](obj)
    assert isinstance(got, Health) and got.status in ("Current", "InProgress") and got.reason


def test_a_job_fails_on_its_failed_condition_and_waits_until_started():
    job = load("job-running")
    job["status"]["conditions"] = [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
                                    "message": "Job has reached the specified backoff limit"}]
    assert KIND_RULES[("batch", "Job")](job)[:3] == ("Failed", "Degraded", "BackoffLimitExceeded")
    job = load("job-running")
    del job["status"]["startTime"]
    assert KIND_RULES[("batch", "Job")](job)[2:] == ("JobNotStarted", "Job not started")


def test_a_cronjob_names_its_schedule_and_last_run():
    cron = load("cronjob-active")
    cron["status"]["lastScheduleTime"] = "2026-01-01T00:05:00Z"
    assert KIND_RULES[("batch", "CronJob")](cron).message == "schedule */5 * * * *, last run 2026-01-01T00:05:00Z"


def test_a_pod_that_succeeded_is_current_and_a_running_one_waits_for_ready():
    pod = load("pod-running-ready")
    pod["status"]["phase"] = "Succeeded"
    assert KIND_RULES[("", "Pod")](pod)[2] == "PodSucceeded"
    pod = load("pod-running-ready")
    pod["status"]["conditions"] = [{"type": "Ready", "status": "False", "message": "containers with unready status: [app]"}]
    assert KIND_RULES[("", "Pod")](pod)[2:] == ("PodRunningNotReady", "containers with unready status: [app]")


def test_a_load_balancer_address_may_be_a_hostname():
    svc = load("service-lb-pending")
    svc["status"]["loadBalancer"] = {"ingress": [{"hostname": "lb.example.com"}, {"ip": "192.0.2.1"}]}
    assert KIND_RULES[("", "Service")](svc).message == "load balancer has an address: lb.example.com, 192.0.2.1"


def test_an_apiservice_not_yet_processed_waits():
    api = load("apiservice-local")
    api["status"]["conditions"] = []
    assert KIND_RULES[("apiregistration.k8s.io", "APIService")](api)[2] == "NotObserved"


def test_a_namespace_being_deleted_names_what_holds_it_up():
    ns = load("namespace-terminating")
    got = terminating(ns, "Namespace")
    assert got.status == "Terminating" and got.reason == "NamespaceTerminating"
    ns["status"]["conditions"] = []
    ns["metadata"]["finalizers"] = []
    ns["spec"] = {"finalizers": ["kubernetes"]}
    assert terminating(ns, "Namespace")[2:] == ("Terminating", "deletion pending on finalizers: kubernetes")
    assert terminating({"metadata": {}}, "ConfigMap")[2:] == ("Terminating", "deletion in progress")
    odd = load("namespace-active")
    odd["status"]["phase"] = "Weird"
    assert KIND_RULES[("", "Namespace")](odd)[:3] == ("InProgress", "Progressing", "Weird")


def test_the_replication_controller_and_the_older_groups_share_the_rules():
    assert KIND_RULES[("extensions", "Deployment")] is KIND_RULES[("apps", "Deployment")]
    assert KIND_RULES[("extensions", "Ingress")] is KIND_RULES[("networking.k8s.io", "Ingress")]
    rc = load("replicationcontroller-available")
    assert KIND_RULES[("", "ReplicationController")](rc)[2] == "Available" == hl.health(rc).reason
