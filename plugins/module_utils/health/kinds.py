# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Health rules per kind (workloads, Pods, storage, networking, API extensions, Namespaces). Pure.

Each rule takes a live object and returns a :class:`.health_status.Health`; :data:`KIND_RULES` maps
group/kind to its rule (:func:`.health.health` applies the generic rules first).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.stacksync.k8s.plugins.module_utils.health.status import (
    CURRENT,
    DEGRADED,
    FAILED,
    FAILED_WAITING_REASONS,
    IN_PROGRESS,
    TERMINATING,
    _from_condition,
    _h,
    _int,
    _spec,
    _status,
    _true,
    conditions,
    current,
    failed,
    get_condition,
    in_progress,
    suspended,
)


# -- kinds ---------------------------------------------------------------------------------------
def _progress(want, have, reason, what):
    """``InProgress`` when ``have < want``, else ``None``."""
    if have < want:
        return in_progress(reason, "%s: %d/%d" % (what, have, want))
    return None


def _deployment(obj):
    spec, status = _spec(obj), _status(obj)
    if spec.get("paused"):
        return suspended("DeploymentPaused", "Deployment is paused")
    progressing = get_condition(obj, "Progressing")
    if progressing is not None and progressing.get("reason") == "ProgressDeadlineExceeded":
        return _from_condition(FAILED, progressing, "ProgressDeadlineExceeded")
    replica_failure = _true(obj, "ReplicaFailure")
    if replica_failure is not None:
        return _from_condition(IN_PROGRESS, replica_failure, "ReplicaFailure", DEGRADED)
    want = _int(spec, "replicas", 1)
    updated, replicas, available = _int(status, "updatedReplicas"), _int(status, "replicas"), _int(status, "availableReplicas")
    result = _progress(want, updated, "LessUpdated", "Updated")
    if result is None and replicas > updated:
        result = in_progress("ExtraPods", "Pending termination: %d" % (replicas - updated))
    result = result or _progress(updated, available, "LessAvailable", "Available")
    return result or current("Available", "Deployment is available. Replicas: %d" % replicas)


def _replicaset(obj, what="ReplicaSet"):
    replica_failure = _true(obj, "ReplicaFailure")
    if replica_failure is not None:
        return _from_condition(IN_PROGRESS, replica_failure, "ReplicaFailure", DEGRADED)
    spec, status = _spec(obj), _status(obj)
    want = _int(spec, "replicas", 1)
    result = (_progress(want, _int(status, "fullyLabeledReplicas"), "LessLabelled", "Labelled")
              or _progress(want, _int(status, "availableReplicas"), "LessAvailable", "Available")
              or _progress(want, _int(status, "readyReplicas"), "LessReady", "Ready"))
    if result is None and _int(status, "replicas") > want:
        result = in_progress("ExtraPods", "Pending termination: %d" % (_int(status, "replicas") - want))
    return result or current("Available", "%s is available. Replicas: %d" % (what, _int(status, "replicas")))


def _replication_controller(obj):
    """The ReplicaSet's predecessor: the same status fields and ReplicaFailure condition."""
    return _replicaset(obj, "ReplicationController")


def _statefulset(obj):
    spec, status = _spec(obj), _status(obj)
    strategy = spec.get("updateStrategy") or {}
    if strategy.get("type") == "OnDelete":
        return current("OnDelete", "StatefulSet is using the OnDelete update strategy")
    want = _int(spec, "replicas", 1)
    replicas, ready = _int(status, "replicas"), _int(status, "readyReplicas")
    result = _progress(want, replicas, "LessReplicas", "Replicas") or _progress(want, ready, "LessReady", "Ready")
    if result is None and replicas > want:
        result = in_progress("ExtraPods", "Pending termination: %d" % (replicas - want))
    if result is not None:
        return result
    partition = int((strategy.get("rollingUpdate") or {}).get("partition") or 0)  # the API defaults it to 0
    if partition > 0:
        return (_progress(want - partition, _int(status, "updatedReplicas"), "PartitionRollout", "Updated")
                or current("PartitionRolledOut", "Partition rollout complete. Updated: %d" % _int(status, "updatedReplicas")))
    result = _progress(want, _int(status, "currentReplicas"), "LessCurrent", "Current")
    if result is None and status.get("currentRevision") != status.get("updateRevision"):
        result = in_progress("RevisionMismatch", "Waiting for updated revision %s to replace %s"
                             % (status.get("updateRevision"), status.get("currentRevision")))
    return result or current("Ready", "All replicas scheduled as expected. Replicas: %d" % replicas)


def _daemonset(obj):
    status = _status(obj)
    if (obj.get("metadata") or {}).get("generation") is not None and status.get("observedGeneration") is None:
        return in_progress("NoObservedGeneration", "DaemonSet status.observedGeneration not found")
    want = status.get("desiredNumberScheduled")
    if want is None:
        return in_progress("NoDesiredNumber", "Missing status.desiredNumberScheduled")
    want = int(want)
    result = (_progress(want, _int(status, "currentNumberScheduled"), "LessCurrent", "Current")
              or _progress(want, _int(status, "updatedNumberScheduled"), "LessUpdated", "Updated")
              or _progress(want, _int(status, "numberAvailable"), "LessAvailable", "Available")
              or _progress(want, _int(status, "numberReady"), "LessReady", "Ready"))
    return result or current("Ready", "All replicas scheduled as expected. Replicas: %d" % want)


def _job(obj):
    failed_cond = _true(obj, "Failed")
    if failed_cond is not None:
        return _from_condition(FAILED, failed_cond, "JobFailed")
    complete = _true(obj, "Complete")
    status = _status(obj)
    if complete is not None:
        return current("JobComplete", "Job completed. Succeeded: %d" % _int(status, "succeeded"))
    if _true(obj, "Suspended") is not None or _spec(obj).get("suspend"):
        return suspended("JobSuspended", "Job is suspended")
    if not status.get("startTime"):
        return in_progress("JobNotStarted", "Job not started")
    return in_progress("JobRunning", "Job in progress. Active: %d, succeeded: %d, failed: %d"
                       % (_int(status, "active"), _int(status, "succeeded"), _int(status, "failed")))


def _cronjob(obj):
    if _spec(obj).get("suspend"):
        return suspended("CronJobSuspended", "CronJob is suspended")
    last = _status(obj).get("lastScheduleTime")
    return current("Scheduled", "schedule %s%s" % (_spec(obj).get("schedule"), ", last run %s" % last if last else ""))


def _container_problem(status):
    for key in ("initContainerStatuses", "containerStatuses"):
        for cs in status.get(key) or []:
            waiting = (cs.get("state") or {}).get("waiting") or {}
            if waiting.get("reason") in FAILED_WAITING_REASONS:
                message = "container %s: %s" % (cs.get("name"), waiting.get("message") or waiting["reason"])
                return failed(waiting["reason"], message)
    return None


def _pod(obj):
    status = _status(obj)
    phase = status.get("phase")
    if phase == "Succeeded":
        return current("PodSucceeded", "Pod has completed successfully")
    if phase == "Failed":
        return failed(status.get("reason") or "PodFailed", status.get("message") or "Pod has completed, but not successfully")
    problem = _container_problem(status)
    if problem is not None:
        return problem
    ready = get_condition(obj, "Ready")
    if phase == "Running":
        if ready is not None and ready.get("status") == "True":
            return current("PodReady", "Pod is Ready")
        return in_progress("PodRunningNotReady", (ready or {}).get("message") or "Pod is running but is not Ready")
    if phase == "Pending":
        scheduled = get_condition(obj, "PodScheduled")
        if scheduled is not None and scheduled.get("status") == "False":
            return _from_condition(IN_PROGRESS, scheduled, "PodNotScheduled")
        return in_progress("PodPending", "Pod is in the Pending phase")
    return in_progress("PodNotObserved", "Pod phase not available")


def _pvc(obj):
    phase = _status(obj).get("phase")
    if phase == "Bound":
        return current("Bound", "PVC is Bound")
    if phase == "Lost":
        return failed("ClaimLost", "PVC lost its PersistentVolume")
    return in_progress("NotBound", "PVC is not Bound. Phase: %s" % (phase or "unknown"))


def _load_balancer(obj, what):
    ingress = ((_status(obj).get("loadBalancer") or {}).get("ingress")) or []
    if ingress:
        addresses = ", ".join(i.get("ip") or i.get("hostname") or "?" for i in ingress)
        return current("LoadBalancerReady", "%s has an address: %s" % (what, addresses))
    return in_progress("NoLoadBalancerAddress", "waiting for the %s to get an address" % what)


def _service(obj):
    if _spec(obj).get("type") == "LoadBalancer":
        return _load_balancer(obj, "load balancer")
    return current("ServiceReady", "Service is ready")


def _ingress(obj):
    return _load_balancer(obj, "Ingress")


def _pdb(obj):
    status = _status(obj)
    allowed = get_condition(obj, "DisruptionAllowed")
    reason = (allowed or {}).get("reason") or "Observed"
    return current(reason, "disruptions allowed: %d, healthy pods: %d/%d"
                   % (_int(status, "disruptionsAllowed"), _int(status, "currentHealthy"), _int(status, "desiredHealthy")))


def _crd(obj):
    names = get_condition(obj, "NamesAccepted")
    if names is not None and names.get("status") == "False":
        return _from_condition(FAILED, names, "NamesNotAccepted")
    established = get_condition(obj, "Established")
    if established is not None:
        if established.get("status") == "True":
            return current("Established", "CRD is established")
        if established.get("status") == "False" and established.get("reason") != "Installing":
            return _from_condition(FAILED, established, "NotEstablished")
    return in_progress("Installing", "Install in progress")


def _apiservice(obj):
    available = get_condition(obj, "Available")
    if available is None:
        return in_progress("NotObserved", "Waiting to be processed")
    if available.get("status") == "True":
        return _from_condition(CURRENT, available, "Available")
    return _from_condition(IN_PROGRESS, available, "Unavailable", DEGRADED)


def _namespace(obj):
    phase = _status(obj).get("phase")
    if phase == "Terminating":
        return terminating(obj, "Namespace")
    return current("Active", "Namespace is active") if phase in (None, "Active") else in_progress(phase, "phase %s" % phase)


#: (group, kind) -> rule(live object) -> Health; groups that served the same kind earlier included
KIND_RULES = {
    ("apps", "Deployment"): _deployment,
    ("extensions", "Deployment"): _deployment,
    ("apps", "ReplicaSet"): _replicaset,
    ("extensions", "ReplicaSet"): _replicaset,
    ("", "ReplicationController"): _replication_controller,
    ("apps", "StatefulSet"): _statefulset,
    ("apps", "DaemonSet"): _daemonset,
    ("extensions", "DaemonSet"): _daemonset,
    ("batch", "Job"): _job,
    ("batch", "CronJob"): _cronjob,
    ("", "Pod"): _pod,
    ("", "PersistentVolumeClaim"): _pvc,
    ("", "Service"): _service,
    ("networking.k8s.io", "Ingress"): _ingress,
    ("extensions", "Ingress"): _ingress,
    ("policy", "PodDisruptionBudget"): _pdb,
    ("apiextensions.k8s.io", "CustomResourceDefinition"): _crd,
    ("apiregistration.k8s.io", "APIService"): _apiservice,
    ("", "Namespace"): _namespace,
}


_NAMESPACE_TROUBLE = ("NamespaceFinalizersRemaining", "NamespaceContentRemaining", "NamespaceDeletionDiscoveryFailure",
                      "NamespaceDeletionContentFailure", "NamespaceDeletionGroupVersionParsingFailure")


def terminating(obj, kind):
    """The health of an object being deleted (a Namespace names what holds it up)."""
    finalizers = (obj.get("metadata") or {}).get("finalizers") or (_spec(obj).get("finalizers") if kind == "Namespace" else None) or []
    if kind == "Namespace":
        by_type = dict((c.get("type"), c) for c in conditions(obj) if c.get("status") == "True")
        held = [by_type[t].get("message") for t in _NAMESPACE_TROUBLE if t in by_type]
        if held:
            return _h(TERMINATING, "NamespaceTerminating", "; ".join(m for m in held if m))
    message = "deletion pending on finalizers: %s" % ", ".join(finalizers) if finalizers else "deletion in progress"
    return _h(TERMINATING, "Terminating", message)
