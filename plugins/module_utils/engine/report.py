# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ``stack_info`` report: each live object of a stack with its status against a desired set. Pure.

The statuses of objects the stack would not keep come from the same prune plan ``stack`` executes
(:func:`.plan.prune_plan`), so ``would_prune`` is exactly what a sync would delete.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.stacksync.k8s.plugins.module_utils.base.constants import CHECKSUM_ANNOTATION
from ansible_collections.stacksync.k8s.plugins.module_utils.base.identity import group_kind_str
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.changeset import object_ref
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.grace import format_time, waiting_reason
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.objects import annotation, live_api_version, owned_by, stack_checksum
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.plan import in_sync_by_ownership, prune_decision
from ansible_collections.stacksync.k8s.plugins.module_utils.health.rules import health

IN_SYNC, DRIFTED, OUT_OF_DATE, MISSING = "in_sync", "drifted", "out_of_date", "missing"
WOULD_PRUNE, WOULD_RELEASE, KEPT, TERMINATING, PRESENT = "would_prune", "would_release", "kept", "terminating", "present"
WOULD_MARK, MARKED = "would_mark", "marked"  # prune_grace: to be marked, marked and waiting (with prune_after)


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
    for status, entries in ((WOULD_MARK, prune.marks), (MARKED, prune.waiting)):
        for oid, _i, _o, after in entries:
            out[oid] = (status, waiting_reason(after, status == MARKED), {"prune_after": None if after is None else format_time(after)})
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


#: status -> Argo CD's sync status
SYNC_OF = {IN_SYNC: "Synced", DRIFTED: "OutOfSync", OUT_OF_DATE: "OutOfSync", MISSING: "Missing",
           WOULD_PRUNE: "Extraneous", WOULD_RELEASE: "Extraneous", TERMINATING: "Extraneous", WOULD_MARK: "Extraneous",
           MARKED: "Extraneous"}


def _health(entry, live):
    """Add ``sync`` and ``health`` (with ``health_reason``) to a report entry."""
    entry["sync"] = SYNC_OF.get(entry["status"], "Synced" if entry["status"] in (KEPT, PRESENT) else "Unknown")
    h = health(live)
    entry["health"] = h.health
    if h.reason or h.message:
        entry["health_reason"] = "%s: %s" % (h.reason, h.message) if h.message else h.reason
    return entry


def _counts(objects):
    counts = {"sync": {}, "health": {}}
    for o in objects:
        for key in ("sync", "health"):
            counts[key][o[key]] = counts[key].get(o[key], 0) + 1
    return counts


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
        entry = object_ref(oid, live_api_version(obj, info), checksum=annotation(obj, CHECKSUM_ANNOTATION),
                           status=status, **extra)
        if reason:
            entry["reason"] = str(reason)
        objects.append(_health(entry, obj))
    for d in desired:
        if d.oid not in snap.ours:
            objects.append(_health(object_ref(d.oid, d.api_version, status=MISSING, checksum=d.checksum), None))
    data = dict(record.data or {})
    return dict(objects=objects, counts=_counts(objects), record=data, commit=data.get("commit"), last_sync_time=data.get("lastSyncTime"),
                group_kinds=sorted(group_kind_str(*gk) for gk in record.group_kinds),
                unverified_kinds=sorted(group_kind_str(*gk) for gk in snap.unverified),
                checksum=stack_checksum([d.checksum for d in desired]) if with_desired else None)
