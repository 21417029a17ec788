# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a Namespace holds that is not ours to delete. Pure, no I/O.

A Namespace (like a CRD) takes its contents with it. The prune step lists them (:mod:`.prune`) and
these rules say which of them keep it: anything that is neither pruned by the run, nor the cluster's
own, nor owned -- directly or through its own owners -- by such objects.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


#: Objects the cluster itself puts in every namespace, by exact ``(group, kind, name)``: the root CA
#: ConfigMap (kube-controller-manager's root-ca-cert-publisher), OpenShift's service CA ConfigMap, the
#: ``default`` ServiceAccount. Never matched by a suffix or prefix: anybody may name an object
#: ``x-openshift-service-ca.crt``.
CLUSTER_OBJECTS = frozenset([
    ("", "ConfigMap", "kube-root-ca.crt"),
    ("", "ConfigMap", "openshift-service-ca.crt"),
    ("", "ServiceAccount", "default"),
])
#: field managers of the controllers that write them (the user agent's program name)
CLUSTER_MANAGERS = frozenset(["kube-controller-manager", "openshift-controller-manager"])


def written_by_cluster(obj):
    """True unless someone other than the cluster's controllers wrote ``obj`` (its managedFields say who:
    an object a person created or edited with another tool is theirs, whatever its name)."""
    managed = (obj.get("metadata") or {}).get("managedFields") or []
    return all(isinstance(e, dict) and e.get("manager") in CLUSTER_MANAGERS for e in managed)


def cluster_provided(oid, obj, services_pruned=()):
    """Objects the cluster itself puts in a namespace without an owner (not a reason to keep it): Events,
    the exact :data:`CLUSTER_OBJECTS` and the endpoints controller's copy of a Service we delete (it has
    no ownerReferences) -- the last two only as long as only the cluster's controllers wrote them.

    Objects *with* ownerReferences are judged by their owners (:func:`namespace_blockers`).
    """
    if oid.kind == "Event" and oid.group in ("", "events.k8s.io"):
        return True
    known = (oid.group, oid.kind, oid.name) in CLUSTER_OBJECTS or (
        oid.group == "" and oid.kind == "Endpoints" and oid.name in services_pruned)
    return known and written_by_cluster(obj)


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
        if oid in prune_ids or (not refs and cluster_provided(oid, obj, services)):
            if _uid(obj):
                harmless.add(_uid(obj))
        elif refs:
            pending.append((oid, _uid(obj), [r.get("uid") for r in refs if isinstance(r, dict)]))
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
                if uid:
                    harmless.add(uid)
                progress = True
            else:
                rest.append((oid, uid, owners))
        pending = rest
    return blockers + [oid for oid, _uid_, _owners in pending]
