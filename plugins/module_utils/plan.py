# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ordering stages, prune candidate selection and the namespace-emptiness rule. Pure, no I/O."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.stacksync.k8s.plugins.module_utils.constants import CHECKSUM_ANNOTATION
from ansible_collections.stacksync.k8s.plugins.module_utils.objects import annotation, is_ignored, owned_by

#: Apply stages (prune runs them in reverse). Stage 0 must exist before anything can go in it:
#: Namespaces and CRDs (after which we wait for CRDs to be Established and re-read discovery).
#: Stage 1: cluster/namespace prerequisites other objects refer to at admission time. Stage 3:
#: webhooks and API services last, so a webhook whose backend is not yet deployed cannot block the
#: applies of the stack that deploys it. Everything else (incl. custom resources) is stage 2.
STAGES = {
    ("", "Namespace"): 0,
    ("apiextensions.k8s.io", "CustomResourceDefinition"): 0,
    ("scheduling.k8s.io", "PriorityClass"): 1,
    ("storage.k8s.io", "StorageClass"): 1,
    ("node.k8s.io", "RuntimeClass"): 1,
    ("networking.k8s.io", "IngressClass"): 1,
    ("", "ResourceQuota"): 1,
    ("", "LimitRange"): 1,
    ("", "ServiceAccount"): 1,
    ("rbac.authorization.k8s.io", "ClusterRole"): 1,
    ("rbac.authorization.k8s.io", "Role"): 1,
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): 1,
    ("rbac.authorization.k8s.io", "RoleBinding"): 1,
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"): 3,
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"): 3,
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"): 3,
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"): 3,
    ("apiregistration.k8s.io", "APIService"): 3,
}
DEFAULT_STAGE = 2
NAMESPACE_GK = ("", "Namespace")
CRD_GK = ("apiextensions.k8s.io", "CustomResourceDefinition")


def stage_of(group_kind):
    return STAGES.get(tuple(group_kind), DEFAULT_STAGE)


def by_stage(items, key=lambda x: x):
    """``[(stage, [items])]`` in apply order; ``key`` gives an item's ObjectId."""
    stages = {}
    for item in items:
        stages.setdefault(stage_of(key(item).group_kind), []).append(item)
    return sorted(stages.items())


#: why a candidate is not deleted again: its deletion is under way (finalizers)
TERMINATING = "terminating: deleted, waiting for its finalizers"


def is_terminating(obj):
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


def prune_decision(obj, oid, stack, desired_ids, desired_checksums):
    """Why live ``obj`` must *not* be pruned (a reason string), or ``None`` if it is a candidate.

    A candidate is the stack's (label and identity-bound mark), not desired by identity, whose
    checksum is not that of any desired manifest (both tests must agree), has no
    ownerReferences (controller children inherit labels) and is not ignore-annotated.
    """
    if not owned_by(obj, stack, oid):
        return "not owned by this stack (label or owner mark does not match its identity)"
    if oid in desired_ids:
        return "still desired"
    if annotation(obj, CHECKSUM_ANNOTATION) in desired_checksums:
        return "its checksum matches a desired manifest"
    meta = obj.get("metadata") or {}
    if meta.get("ownerReferences"):
        return "has ownerReferences (managed by a controller)"
    if is_ignored(obj):
        return "ignore annotation set"
    return None


#: ConfigMaps every namespace gets from the cluster itself.
CLUSTER_CONFIGMAPS = ("kube-root-ca.crt", "openshift-service-ca.crt")


def cluster_provided(oid, obj, services_pruned=()):
    """Objects the cluster itself puts in a namespace without an owner (not a reason to keep it).

    Objects *with* ownerReferences are judged by their owners (:func:`namespace_blockers`).
    """
    if oid.kind == "Event" and oid.group in ("", "events.k8s.io"):
        return True
    if oid.group == "" and oid.kind == "ServiceAccount" and oid.name == "default":
        return True
    if oid.group == "" and oid.kind == "ConfigMap" and (oid.name in CLUSTER_CONFIGMAPS
                                                        or oid.name.endswith("openshift-service-ca.crt")):
        return True
    # the endpoints controller's copy of a Service we delete (it has no ownerReferences)
    return oid.group == "" and oid.kind == "Endpoints" and oid.name in services_pruned


#: Namespaced kinds whose objects are all the cluster's own (see :func:`cluster_provided`): a
#: namespace's Events never keep it from being pruned, so they are not even listed.
NEVER_BLOCKING_KINDS = frozenset([("", "Event"), ("events.k8s.io", "Event")])
#: Namespaced kinds that most often hold someone else's objects: listed first, so a namespace still
#: in use is usually recognised after one round of requests (the others are listed only if none of
#: these holds a foreign object).
LIKELY_BLOCKING_KINDS = frozenset([
    ("", "ConfigMap"), ("", "Secret"), ("", "ServiceAccount"), ("", "Service"), ("", "Pod"),
    ("", "PersistentVolumeClaim"), ("apps", "Deployment"), ("apps", "StatefulSet"), ("apps", "DaemonSet"),
    ("batch", "Job"), ("batch", "CronJob"), ("networking.k8s.io", "Ingress"),
    ("rbac.authorization.k8s.io", "Role"), ("rbac.authorization.k8s.io", "RoleBinding"),
])


def namespace_scan_rounds(infos):
    """The namespaced resources to list to find what a namespace holds, in two rounds (likely first);
    kinds that cannot block (:data:`NEVER_BLOCKING_KINDS`) are left out. Each kind is listed once."""
    infos = [i for i in infos if i.namespaced and i.group_kind not in NEVER_BLOCKING_KINDS]
    first = [i for i in infos if i.group_kind in LIKELY_BLOCKING_KINDS]
    return [first, [i for i in infos if i.group_kind not in LIKELY_BLOCKING_KINDS]]


def _uid(obj):
    return (obj.get("metadata") or {}).get("uid")


def namespace_blockers(namespace, objects, prune_ids, prune_uids=(), complete=True):
    """Objects in ``namespace`` that keep it from being pruned: ``[ObjectId]``.

    ``objects`` is ``[(ObjectId, obj)]`` of everything listed in the namespace; ``prune_uids`` the
    uids of every object this run deletes (cluster-scoped ones included). An object goes with the
    namespace harmlessly if it is being pruned, is the cluster's own (:func:`cluster_provided`), or
    every one of its owners is such an object, itself or through its own owners (a Deployment we
    prune, its ReplicaSet, their Pods). Anything else -- an object of someone else, or one owned by
    something that stays -- keeps the namespace.

    With ``complete=False`` (``objects`` is only part of the namespace) objects with owners are not
    judged: only the certain blockers are returned.
    """
    services = set(o.name for o in prune_ids if o.group == "" and o.kind == "Service" and o.namespace == namespace)
    harmless = set(u for u in prune_uids if u)
    pending = []
    blockers = []
    for oid, obj in objects:
        refs = (obj.get("metadata") or {}).get("ownerReferences") or []
        if oid in prune_ids:
            harmless.add(_uid(obj))
        elif refs:
            pending.append((oid, _uid(obj), [r.get("uid") for r in refs if isinstance(r, dict)]))
        elif cluster_provided(oid, obj, services):
            harmless.add(_uid(obj))
        else:
            blockers.append(oid)
    if not complete:
        return blockers
    progress = True
    while pending and progress:
        progress = False
        rest = []
        for oid, uid, owners in pending:
            if owners and all(o in harmless for o in owners):
                harmless.add(uid)
                progress = True
            else:
                rest.append((oid, uid, owners))
        pending = rest
    return blockers + [oid for oid, _uid_, _owners in pending]


#: default prune budget: half the stack's objects, and never fewer than this many
DEFAULT_MIN_PRUNE = 10


def prune_limit(max_prune, total):
    """How many objects one run may delete from a stack of ``total`` live objects.

    ``max_prune``: ``None`` (default: half the stack, at least :data:`DEFAULT_MIN_PRUNE`), a count
    (``"25"``, ``25``) or a percentage of ``total`` (``"30%"``, rounded up). Raises ValueError for
    anything else.
    """
    if max_prune is None or max_prune == "":
        return max(DEFAULT_MIN_PRUNE, (total + 1) // 2)
    text = str(max_prune).strip()
    try:
        if text.endswith("%"):
            percent = float(text[:-1])
            if not 0 <= percent <= 100:
                raise ValueError
            return int(-(-percent * total // 100))
        count = int(text)
        if count < 0:
            raise ValueError
        return count
    except ValueError:
        raise ValueError("max_prune must be a number of objects (25) or a percentage of the stack (30%%), got %r"
                         % (max_prune,)) from None


def prune_budget_problem(candidates, total, max_prune):
    """Why deleting ``candidates`` (``[ObjectId]``) from a stack of ``total`` objects exceeds the prune
    budget (a message listing them), or None."""
    limit = prune_limit(max_prune, total)
    if len(candidates) <= limit:
        return None
    shown = ", ".join(str(oid) for oid in candidates[:20])
    if len(candidates) > 20:
        shown += " and %d more" % (len(candidates) - 20)
    return ("refusing to prune %d of the stack's %d objects: more than max_prune allows (%s = %d); nothing was "
            "deleted. If this is intended, run again with a larger max_prune (a count, or a percentage such as "
            "100%%). Would delete: %s" % (len(candidates), total,
                                          "default: half, at least %d" % DEFAULT_MIN_PRUNE if max_prune in (None, "")
                                          else max_prune, limit, shown))
