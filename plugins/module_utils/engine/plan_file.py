# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A plan as check mode emits it (issue 29): its form, digests and decision fingerprints. Pure.

A plan (:func:`document`, one per host) holds the commit of every source and per stack (:func:`stack_entry`) the
objects to create and change (counts and a digest, :func:`applies_of`) and, one by one, those to delete, to mark and
waiting for their prune grace -- each with its uid, resourceVersion and **decision fingerprint** (:func:`fingerprint`:
what decides whether it is pruned, not its status or resourceVersion). A digest (sha256 of the canonical JSON) seals
each stack's entry and the whole plan. Lists are compact: ``{"<apiVersion> <Kind>": {namespace: [[name, uid,
resourceVersion, fingerprint(, prune after)]]}}``. How a run uses an approved plan is :mod:`.approval`'s.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import re

from ansible_collections.stacksync.k8s.plugins.module_utils.base.constants import (
    CHECKSUM_ANNOTATION,
    IGNORE_ANNOTATION,
    OWNER_ANNOTATION,
    PRUNE_ANNOTATION,
    PRUNE_MARK_ANNOTATION,
    RECORD_NAMESPACE_ANNOTATION,
    STACK_LABEL,
)
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.grace import format_time
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.objects import annotation, is_secret, live_api_version

FORMAT = "stacksync.k8s/plan/v1"
FP_LENGTH = 12  # hex digits of a decision fingerprint (48 bits: against accidents, the run decides anyway)
#: annotations that decide whether an object is pruned (with the stack label, the uid, owners, deletion)
DECIDING = (OWNER_ANNOTATION, CHECKSUM_ANNOTATION, IGNORE_ANNOTATION, PRUNE_ANNOTATION, RECORD_NAMESPACE_ANNOTATION,
            PRUNE_MARK_ANNOTATION)
LISTS = ("prune", "mark", "wait")
_HOST_KEY_RE = re.compile(r"[^A-Za-z0-9_]")


def canonical(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def digest(value):
    return "sha256:" + hashlib.sha256(canonical(value)).hexdigest()


def fingerprint(obj):
    """What decides whether live ``obj`` is pruned, hashed: its uid, stack label, the annotations of :data:`DECIDING`,
    its ownerReferences and whether it is being deleted -- not its status, resourceVersion or other fields."""
    meta = obj.get("metadata") or {}
    owners = sorted([str(r.get(k) or "") for k in ("apiVersion", "kind", "name", "uid", "controller")]
                    for r in meta.get("ownerReferences") or [] if isinstance(r, dict))
    data = [meta.get("uid") or "", (meta.get("labels") or {}).get(STACK_LABEL) or "",
            [annotation(obj, k) for k in DECIDING], owners, bool(meta.get("deletionTimestamp"))]
    return hashlib.sha256(canonical(data)).hexdigest()[:FP_LENGTH]


def artifact_key(host):
    """The ``set_stats`` key of ``host``'s plan (one key per host: AWX merges the artifacts of job slices key by key)."""
    return "stacksync_plan_" + _HOST_KEY_RE.sub("_", str(host))


def _group(items):
    """``{"<apiVersion> <Kind>": {namespace: [[name, uid, resourceVersion, fingerprint(, prune after)]]}}``."""
    out = {}
    for item in items:
        oid, info, obj = item[0], item[1], item[2]
        meta = obj.get("metadata") or {}
        row = [oid.name, meta.get("uid") or "", meta.get("resourceVersion") or "", fingerprint(obj)]
        if len(item) > 3:
            row.append(None if item[3] is None else format_time(item[3]))
        out.setdefault("%s %s" % (live_api_version(obj, info), oid.kind), {}).setdefault(oid.namespace, []).append(row)
    for namespaces in out.values():
        for rows in namespaces.values():
            rows.sort()
    return out


def _drift(d, live):
    if annotation(live, CHECKSUM_ANNOTATION) != d.checksum:
        return []
    return sorted([e.get("manager") or "", e.get("operation") or "", sorted(e.get("fields") or [])] for e in d.drift or [])


def applies_of(plan):
    """``{"create", "change", "digest"}`` of a :class:`.plan.Plan`'s applies: each object's identity, desired checksum,
    whether it exists (its uid, fingerprint and what drifted) or is another stack's."""
    items, create = [], 0
    for d in plan.to_apply:
        live = plan.snap.ours.get(d.oid, (None, None))[1]
        if live is None:  # a Secret's checksum is keyed, and its stack's key may be made by the run that creates it
            create += 1
            items.append([str(d.oid), "" if is_secret(d.oid) else d.checksum or "", "create",
                          plan.snap.others.get(d.oid) or ""])
        else:
            items.append([str(d.oid), d.checksum or "", "change", (live.get("metadata") or {}).get("uid") or "",
                          fingerprint(live), _drift(d, live)])
    items.sort()
    return {"create": create, "change": len(items) - create, "digest": digest(items)}


def seal(entry):
    """``entry`` with its digest (over everything else in it)."""
    body = dict((k, v) for k, v in entry.items() if k != "digest")
    return dict(body, digest=digest(body))


def stack_entry(plan, source=None, commit=None, record_namespace=None, pruning=True, over_budget=False):
    """A stack's entry of a plan, from the final :class:`.plan.Plan` of a check (``pruning``: the prune gate let it
    prune; else it lists no deletion)."""
    prune = plan.prune if pruning else None
    entry = {"source": source, "commit": commit, "record_namespace": record_namespace, "apply": applies_of(plan),
             "prune": _group(prune.candidates if prune else []), "mark": _group(prune.marks if prune else []),
             "wait": _group(prune.waiting if prune else [])}
    if over_budget:
        entry["over_budget"] = True
    return seal(entry)


def document(stacks, host=None):
    """A plan: ``stacks`` (``{stack: entry}``, each sealed) for ``host``, with the plan's digest."""
    body = {"format": FORMAT, "host": host, "stacks": dict((name, seal(entry)) for name, entry in stacks.items())}
    return dict(body, digest=plan_digest(body))


def plan_digest(body):
    return digest({"format": body.get("format"), "host": body.get("host"),
                   "stacks": dict((name, (e or {}).get("digest")) for name, e in (body.get("stacks") or {}).items())})


def merged(apply_entry, prune_entry):
    """One stack's entry from the check's apply run (its applies) and prune run (its deletions and marks)."""
    out = dict(apply_entry or prune_entry)
    for key in (*LISTS, "over_budget"):
        out.pop(key, None)
        if prune_entry and key in prune_entry:
            out[key] = prune_entry[key]
        elif key in LISTS:
            out[key] = {}
    return seal(out)


def count(entry, what):
    return sum(len(rows) for namespaces in (entry.get(what) or {}).values() for rows in namespaces.values())
