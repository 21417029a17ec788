"""Statuses the health rules (plugins/module_utils/health/rules.py) read, pinned to a real control plane.

Runs against the simulator by default and against a real kube-apiserver + kube-controller-manager
when STACKSYNC_TEST_KUBECONFIG is set; both must pass. The real control plane used in CI has no
scheduler and no kubelet; the Deployments here select a node label no node has, so their pods never
run on any cluster.
"""

import datetime
import time

from ansible_collections.stacksync.k8s.plugins.module_utils.health import rules as hl

from .helpers import poll, unique

DEPLOY = "/apis/apps/v1/namespaces/{ns}/deployments"
APISERVICES = "/apis/apiregistration.k8s.io/v1/apiservices"
NS_PREFIX = "health"
NO_NODE = {"stacksync.io/test-no-such-node": "true"}


def unschedulable_deployment(name, ns, deadline):
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": ns},
            "spec": {"replicas": 1, "progressDeadlineSeconds": deadline, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"nodeSelector": NO_NODE, "containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10"}]}}}}


def seconds(timestamp):
    """A server's RFC 3339 timestamp (``2026-12-07T16:20:01Z``) in seconds since the epoch."""
    return datetime.datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc).timestamp()


def condition(obj, ctype):
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == ctype), None)


def test_progress_deadline_exceeded(api, ns):
    """Pods that never become available: after progressDeadlineSeconds the deployment controller sets
    Progressing=False / ProgressDeadlineExceeded naming the ReplicaSet; before, Progressing=True."""
    path = DEPLOY.format(ns=ns)
    status, body, _ = api.request("POST", path, unschedulable_deployment("stall", ns, 2))
    assert status == 201, body
    started = time.monotonic()
    first = api.get(f"{path}/stall")[1]
    progressing = poll(lambda: condition(api.get(f"{path}/stall")[1], "Progressing"), 10)
    assert progressing is not None

    def stalled():
        obj = api.get(f"{path}/stall")[1]
        cond = condition(obj, "Progressing")
        return obj if cond and cond["reason"] == "ProgressDeadlineExceeded" else None

    obj = poll(stalled, 30)
    assert obj is not None, api.get(f"{path}/stall")[1].get("status")
    # not before the deadline: the controller counts the 2 s from the condition's lastUpdateTime, a whole second
    # (up to 1 s before the creation this clock saw), so the client's clock sees at least 1 s and the server's 2
    assert time.monotonic() - started >= 2 - 1
    cond = condition(obj, "Progressing")
    assert seconds(cond["lastUpdateTime"]) - seconds(obj["metadata"]["creationTimestamp"]) >= 2, (cond, obj["metadata"])
    rs = api.get(f"/apis/apps/v1/namespaces/{ns}/replicasets", labelSelector="app=stall")[1]["items"]
    assert len(rs) == 1
    assert cond["status"] == "False" and cond["message"] == f'ReplicaSet "{rs[0]["metadata"]["name"]}" has timed out progressing.'
    available = condition(obj, "Available")
    assert (available["status"], available["reason"]) == ("False", "MinimumReplicasUnavailable")
    assert obj["status"]["updatedReplicas"] == 1 and obj["status"].get("unavailableReplicas") == 1
    assert not obj["status"].get("availableReplicas")
    pods = api.get(f"/api/v1/namespaces/{ns}/pods", labelSelector="app=stall")[1]["items"]
    assert [p["status"]["phase"] for p in pods] == ["Pending"]
    # what the health rules make of both states
    assert hl.health(first).status == "InProgress"
    got = hl.health(obj)
    assert (got.status, got.health, got.reason) == ("Failed", "Degraded", "ProgressDeadlineExceeded")


def test_progressing_within_the_deadline(api, ns):
    path = DEPLOY.format(ns=ns)
    assert api.request("POST", path, unschedulable_deployment("slow", ns, 600))[0] == 201
    obj = poll(lambda: (lambda o: o if condition(o, "Progressing") else None)(api.get(f"{path}/slow")[1]), 10)
    cond = condition(obj, "Progressing")
    assert cond["status"] == "True" and cond["reason"] in ("NewReplicaSetCreated", "ReplicaSetUpdated")
    got = hl.health(obj)
    assert (got.status, got.health) == ("InProgress", "Progressing")


def apiservice(name, group, service_ns, service_name):
    return {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {"name": name},
            "spec": {"group": group, "version": "v1beta1", "groupPriorityMinimum": 100, "versionPriority": 10,
                     "insecureSkipTLSVerify": True, "service": {"namespace": service_ns, "name": service_name, "port": 443}}}


def test_apiservice_without_its_service(api, ns, kube):
    """An APIService whose Service does not exist: Available=False / ServiceNotFound; health Degraded
    with that reason, but not Failed (the Service may come later)."""
    group = f"{unique('svc')}.example.com"
    name = f"v1beta1.{group}"
    status, body, _ = api.request("POST", APISERVICES, apiservice(name, group, ns, "nowhere"))
    assert status == 201, body
    try:
        obj = poll(lambda: (lambda o: o if condition(o, "Available") else None)(api.get(f"{APISERVICES}/{name}")[1]), 15)
        cond = condition(obj, "Available")
        assert (cond["status"], cond["reason"]) == ("False", "ServiceNotFound")
        assert cond["message"] == f'service/nowhere in "{ns}" is not present'
        got = hl.health(obj)
        assert (got.status, got.health, got.reason) == ("InProgress", "Degraded", "ServiceNotFound")
    finally:
        api.request("DELETE", f"{APISERVICES}/{name}")  # a broken APIService breaks discovery of its group


def test_replication_controller_status_reads_like_a_replicaset(api, ns):
    """A ReplicationController whose pods never run: its controller counts them (labelled, none ready), and
    the health rules read it as a ReplicaSet, not as a kind without conditions (Healthy at once)."""
    path = f"/api/v1/namespaces/{ns}/replicationcontrollers"
    rc = {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "legacy", "namespace": ns},
          "spec": {"replicas": 2, "selector": {"app": "legacy"},
                   "template": {"metadata": {"labels": {"app": "legacy"}},
                                "spec": {"nodeSelector": NO_NODE, "containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10"}]}}}}
    assert api.request("POST", path, rc)[0] == 201
    obj = poll(lambda: (lambda o: o if (o.get("status") or {}).get("fullyLabeledReplicas") == 2 else None)(
        api.get(f"{path}/legacy")[1]), 15)
    assert obj["status"] == {"replicas": 2, "fullyLabeledReplicas": 2, "observedGeneration": 1}, obj.get("status")
    pods = api.get(f"/api/v1/namespaces/{ns}/pods?labelSelector=app%3Dlegacy")[1]["items"]
    assert [(p["metadata"]["ownerReferences"][0]["kind"], p["status"]["phase"]) for p in pods] == [
        ("ReplicationController", "Pending")] * 2
    got = hl.health(obj)
    assert (got.status, got.health, got.reason, got.message) == ("InProgress", "Progressing", "LessAvailable", "Available: 0/2")

