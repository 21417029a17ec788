# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A run given an approved plan (issue 29; Terraform's saved plan is the model). Pure.

The plan is what check mode emitted (:mod:`.plan_file`). The run recomputes everything and executes only the
intersection with it: the prune gate (:mod:`.gate`) refuses the run before any write while :func:`problems` finds a
difference (an object to delete or to mark that the plan does not list, one that changed since, other objects to
apply, another commit or source), and :func:`narrow` leaves alone what the run would delete but the plan lists only
as marked; a deletion of the plan that no longer applies (gone, declared again) is skipped and reported. So a plan
can only narrow what a run does, and whoever supplies one cannot make a run delete what it would not delete itself;
its digests detect accidents (a plan changed or cut short), not forgeries.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.stacksync.k8s.plugins.module_utils.base.identity import ObjectId, split_api_version
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.plan_file import FORMAT, LISTS, fingerprint, plan_digest, seal

SHOWN = 20  # differences named in a message
_COMMIT_RE = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")
NOT_APPROVED = "not-approved"  # reason code: the run would delete it, the plan listed it only as marked


class PlanError(ValueError):
    """An approved plan that cannot be used (malformed, or its digest does not match its content)."""


# -- reading an approved plan ------------------------------------------------------------------------------------


def _rows(groups, what, stack):
    """``{ObjectId: (uid, resourceVersion, fingerprint, prune after, apiVersion)}`` of one list of a stack's entry."""
    out = {}
    if not isinstance(groups, dict):
        raise PlanError("stack %s: its %s list is not a mapping" % (stack, what))
    for key, namespaces in groups.items():
        api_version, _sep, kind = str(key).partition(" ")
        if not kind or not isinstance(namespaces, dict):
            raise PlanError("stack %s: %s entry %r is not '<apiVersion> <Kind>' with a mapping of namespaces"
                            % (stack, what, key))
        group = split_api_version(api_version)[0]
        for namespace, rows in namespaces.items():
            for row in rows if isinstance(rows, list) else [None]:
                if not isinstance(row, list) or len(row) not in (4, 5) or not all(isinstance(v, str) for v in row[:4]):
                    raise PlanError("stack %s: a %s entry of %s in %r is not [name, uid, resourceVersion, "
                                    "fingerprint]" % (stack, what, key, namespace))
                after = row[4] if len(row) == 5 else None
                out[ObjectId(group, kind, str(namespace), row[0])] = (row[1], row[2], row[3], after, api_version)
    return out


class Approval:
    """One stack's part of an approved plan (:func:`for_stack`): its ``entry`` (None: the plan has none), whether
    its deletions are ``approved``, and its lists by identity (``rows``)."""

    def __init__(self, stack, entry, approved=True, host=None, planned=()):
        self.stack = stack
        self.entry = entry
        self.approved = bool(approved) and entry is not None
        self.host = host
        self.planned = tuple(sorted(planned))
        self.rows = dict((w, _rows((entry or {}).get(w) or {}, w, stack)) for w in LISTS)

    @property
    def commit(self):
        return (self.entry or {}).get("commit")

    def listed(self, oid, uid, lists=LISTS):
        """Whether the plan lists the object ``oid`` of ``uid`` in one of ``lists``."""
        return any((self.rows[w].get(oid) or (None,))[0] == uid for w in lists)


class Parsed:
    """An approved plan read by :func:`parse`: ``host``, ``stacks`` (``{stack: entry}``), ``approved`` (None: every
    stack's deletions)."""

    def __init__(self, host, stacks, approved, planned=None):
        self.host, self.stacks, self.approved = host, stacks, approved
        self.planned = sorted(stacks) if planned is None else planned


def _pick_host(value, host):
    """The plan of ``host`` from a mapping of host to plan (the artifacts of several hosts), or ``value`` itself."""
    if value.get("format") == FORMAT:
        return value
    plans = dict((k, v) for k, v in value.items() if isinstance(v, dict) and v.get("format") == FORMAT)
    if not plans or len(plans) != len(value):
        raise PlanError("the approved plan is not a plan made by check mode (format %s), nor a mapping of hosts to "
                        "such plans" % FORMAT)
    if host is None or host not in plans:
        raise PlanError("the approved plan has no plan for host %s (it has plans for %s): nothing was done on it; "
                        "make a plan for it (run the check with it), or leave it out (--limit)"
                        % (host, ", ".join(sorted(plans))))
    return plans[host]


def parse(value, host=None):
    """Read an approved plan (a plan, or a mapping of host to plan) for ``host``; raises :class:`PlanError` when it
    cannot be used: not a plan, a digest that does not match its content, a commit that is not a full commit id, a
    plan made for another host."""
    if not isinstance(value, dict):
        raise PlanError("an approved plan is the mapping check mode emitted, got %s" % type(value).__name__)
    value = _pick_host(value, host)
    stacks = value.get("stacks")
    if not isinstance(stacks, dict) or not all(isinstance(e, dict) for e in stacks.values()):
        raise PlanError("the approved plan has no mapping of stacks")
    for name, entry in stacks.items():
        if seal(entry).get("digest") != entry.get("digest"):
            raise PlanError("stack %s: the approved plan's digest does not match its content (it was changed or cut "
                            "short after it was made): refused, nothing was done" % name)
        commit = entry.get("commit")
        if commit is not None and not (isinstance(commit, str) and _COMMIT_RE.match(commit)):
            raise PlanError("stack %s: the approved plan's commit %r is not a full commit id" % (name, commit))
        for what in LISTS:
            _rows(entry.get(what) or {}, what, name)
    if "digest" in value and plan_digest(value) != value["digest"]:
        raise PlanError("the approved plan's digest does not match its content (it was changed or cut short after it "
                        "was made): refused, nothing was done")
    if host is not None and value.get("host") not in (None, host):
        raise PlanError("the approved plan was made for host %s, not %s: refused, nothing was done"
                        % (value.get("host"), host))
    approved = value.get("approved")
    if approved is not None and not (isinstance(approved, list) and all(isinstance(s, str) for s in approved)):
        raise PlanError("the approved plan's 'approved' must be a list of stack names")
    planned = value.get("planned")  # a sources run's stack runs: the stacks of the whole plan
    return Parsed(value.get("host"), stacks, None if approved is None else set(approved),
                  planned if isinstance(planned, list) else None)


def for_stack(parsed, stack):
    """Stack ``stack``'s :class:`Approval` from a :class:`Parsed` plan."""
    return Approval(stack, parsed.stacks.get(stack), parsed.approved is None or stack in parsed.approved,
                    parsed.host, parsed.planned)


def reduced(parsed, stack):
    """What a stack run of a sources run is given: the plan with only ``stack``'s entry (its own digest checked)."""
    entry = parsed.stacks.get(stack)
    return {"format": FORMAT, "host": parsed.host, "stacks": {stack: entry} if entry else {},
            "approved": [stack] if parsed.approved is None or stack in parsed.approved else [],
            "planned": parsed.planned}


# -- comparing a run with it -------------------------------------------------------------------------------------


def _uid(obj):
    return (obj.get("metadata") or {}).get("uid") or ""


def prune_problems(a, prune):
    """What the run's prune plan (made final, :func:`narrow`-ed) would do that ``a`` does not list."""
    out = []
    for oid, _info, obj in prune.candidates:
        row = a.rows["prune"].get(oid)
        if row is None:
            out.append("%s would be deleted, and the plan does not list its deletion" % (oid,))
        elif row[0] != _uid(obj):
            out.append("%s is another object than the plan's (uid %s, the plan's %s)" % (oid, _uid(obj), row[0]))
        elif row[2] != fingerprint(obj):
            out.append("%s changed since the plan (its labels, annotations or owners that decide its prune)" % (oid,))
    for oid, _info, obj, _after in prune.marks:
        if not a.listed(oid, _uid(obj)):
            out.append("%s would be marked for pruning, and the plan does not list it" % (oid,))
    return out


def problems(a, source=None, commit=None, phase="all", applies=None, prune=None):
    """Why the run may not go on with approval ``a`` (``[]``: it may): what it syncs (``source``, ``commit``), what
    it would apply (``applies``: :func:`applies_of`, in a phase that applies) and delete (``prune``: the prune plan,
    when its deletions are approved)."""
    if a.entry is None:
        return ["stack %s is not in the approved plan (it plans %s)" % (a.stack, ", ".join(a.planned) or "no stack")]
    e, out = a.entry, []
    if (e.get("source") or None) != (source or None):
        out.append("the plan's source is %s, this run's %s" % (e.get("source") or "none", source or "none"))
    if e.get("commit") and e["commit"] != commit:
        out.append("the plan's commit is %s, this run syncs %s" % (e["commit"], commit or "no commit"))
    planned = e.get("apply") or {}
    if applies is not None and phase != "prune" and planned.get("digest") != applies["digest"]:
        out.append("the objects to apply changed since the plan: %d to create and %d to change (the plan: %s and %s)"
                   % (applies["create"], applies["change"], planned.get("create"), planned.get("change")))
    if prune is not None and a.approved:
        out.extend(prune_problems(a, prune))
    return out


def refusal(a, found):
    shown = "; ".join(found[:SHOWN]) + (" and %d more" % (len(found) - SHOWN) if len(found) > SHOWN else "")
    return ("stack %s: the approved plan does not match what this run would do, so nothing was written: %s. Make a new "
            "plan (run the check again) and approve it" % (a.stack, shown))


def narrow(a, prune, ours, desired_ids, reason):
    """Narrow ``prune`` (in place) to ``a``: what the run would delete but the plan lists only as marked or waiting
    is kept (``reason(message)``: a :class:`.plan.Reason`); sets ``prune.notes``: ``[(oid, apiVersion, message)]`` of
    the plan's deletions that no longer apply (gone, declared again, kept), skipped and reported."""
    if a is None or a.entry is None or prune is None:
        return prune
    keep = []
    for oid, info, obj in prune.candidates:
        if not a.listed(oid, _uid(obj), ("prune",)) and a.listed(oid, _uid(obj), ("mark", "wait")):
            prune.kept.append((oid, info, obj, reason(
                "not deleted: the approved plan lists it as marked for pruning, not as deleted; a later run deletes it")))
        else:
            keep.append((oid, info, obj))
    prune.candidates = keep
    going = set(oid for oid, _i, _o in keep)
    kept = dict((oid, r) for oid, _i, _o, r in prune.kept)
    notes = []
    for oid, (uid, _rv, _fp, _after, api_version) in sorted(a.rows["prune"].items()) if a.approved else ():
        live = ours.get(oid, (None, None))[1]
        if oid in going:
            continue
        if oid in desired_ids:
            why = "it is declared again"
        elif live is None or _uid(live) != uid:
            why = "it is gone (or no longer the stack's)"
        else:
            why = "not deleted: %s" % (kept.get(oid) or "no longer to be deleted")
        notes.append((oid, api_version, "the approved deletion no longer applies, skipped: %s" % why))
    prune.notes = notes
    return prune
