# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ``stack_info`` report: each live object of a stack with its status against a desired set. Pure.

The statuses of objects the stack would not keep come from the same prune plan ``stack`` executes
(:func:`.plan.prune_plan`), so ``would_prune`` is exactly what a sync would delete.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.stacksync.k8s.plugins.module_utils.constants import CHECKSUM_ANNOTATION
from ansible_collections.stacksync.k8s.plugins.module_utils.identity import group_kind_str
from ansible_collections.stacksync.k8s.plugins.module_utils.objects import annotation, owned_by, stack_checksum
from ansible_collections.stacksync.k8s.plugins.module_utils.plan import in_sync_by_ownership, prune_decision

IN_SYNC, DRIFTED, OUT_OF_DATE, MISSING = "in_sync", "drifted", "out_of_date", "missing"
WOULD_PRUNE, WOULD_RELEASE, KEPT, TERMINATING, PRESENT = "would_prune", "would_release", "kept", "terminating", "present"


def _entry(oid, api_version, **extra):
    out = {"apiVersion": api_version, "kind": oid.kind, "namespace": oid.namespace or None, "name": oid.name}
    out.update(extra)
    return out


def _prune_statuses(prune):
    """``{ObjectId: (status, reason or None, extra)}`` from a prune plan."""
    out = {}
    for oid, _i, _o in prune.candidates:
        out[oid] = (WOULD_PRUNE, None, {})
    for oid, _i, _o, reason in prune.kept:
        out[oid] = (KEPT, reason, {"code": reason.code})
    for oid, _i, _o, reason in prune.terminating:
        out[oid] = (TERMINATING, reason, {})
    for oid, _i, _o, other in prune.releases:
        out[oid] = (WOULD_RELEASE, "still declared by stack %r" % other, {"stack": other})
    return out


def _status(oid, obj, desired_by_id, prune_status, opts, with_desired):
    """``(status, reason, extra)`` of one live object of the stack."""
    if not with_desired:
        reason = prune_decision(obj, oid, opts.stack, set(), set())
        if reason is None or not owned_by(obj, opts.stack, oid):
            return PRESENT, None, {}
        return KEPT, reason, {"code": reason.code}
    d = desired_by_id.get(oid)
    if d is not None:
        if annotation(obj, CHECKSUM_ANNOTATION) != d.checksum:
            return OUT_OF_DATE, None, {}
        if in_sync_by_ownership(d, obj, opts.field_manager, opts.takeover):
            return IN_SYNC, None, {}
        return DRIFTED, None, {"drift": d.drift} if d.drift else {}
    return prune_status.get(oid) or (KEPT, None, {})


def stack_report(snap, desired, prune, opts, record, with_desired):
    """The return values of ``stack_info`` (warnings apart).

    :param snap: the :class:`.observe.Snapshot`; :param desired: ``[Desired]`` (stamped);
    :param prune: the final :class:`.plan.PrunePlan` (None without a desired set); :param opts: the run's options;
    :param record: the :class:`.record.StackRecord` as read; :param with_desired: a desired set was given.
    """
    by_id = dict((d.oid, d) for d in desired)
    prune_status = _prune_statuses(prune) if prune is not None else {}
    objects = []
    for oid, (info, obj) in sorted(snap.ours.items()):
        status, reason, extra = _status(oid, obj, by_id, prune_status, opts, with_desired)
        entry = _entry(oid, obj.get("apiVersion") or info.api_version, checksum=annotation(obj, CHECKSUM_ANNOTATION),
                       status=status, **extra)
        if reason:
            entry["reason"] = str(reason)
        objects.append(entry)
    for d in desired:
        if d.oid not in snap.ours:
            objects.append(_entry(d.oid, d.api_version, status=MISSING, checksum=d.checksum))
    data = dict(record.data or {})
    return dict(objects=objects, record=data, commit=data.get("commit"), last_sync_time=data.get("lastSyncTime"),
                group_kinds=sorted(group_kind_str(*gk) for gk in record.group_kinds),
                unverified_kinds=sorted(group_kind_str(*gk) for gk in snap.unverified),
                checksum=stack_checksum([d.checksum for d in desired]) if with_desired else None)
