# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The prune grace period (``prune_grace``, issue 29): an object that left git is marked first and deleted by the
first run once the grace has passed. Pure; the marks are written by :mod:`.marks`.

Every time is the API server's, never the controller's clock:

* the **mark** is annotation :data:`.constants.PRUNE_MARK_ANNOTATION`, written in two steps: a merge patch sets it
  to :data:`PENDING` under field manager :func:`mark_manager` (the run's, suffixed: not one a sync takes over), and
  the server stamps that write's time on its ``Update`` entry of ``metadata.managedFields``; a second patch copies
  that time into the annotation, rounded
  **up** to the second (the entry has second precision), so the annotation is never earlier than the write. A mark
  still pending (the second write did not happen) is written again, later: never sooner;
* **now** is the ``Date`` header of the server's answers during the run (:attr:`.client.KubeClient.server_time`,
  the latest seen: the time the observation's lists were answered, or later), which the server truncates to the
  second, so it is never later than the true time.

An object is deleted once ``now >= marked-at + grace``; a run without a server time deletes nothing marked.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import calendar
import re
import time

from ansible_collections.stacksync.k8s.plugins.module_utils.base.constants import PRUNE_MARK_ANNOTATION
from ansible_collections.stacksync.k8s.plugins.module_utils.base.vocabulary import option
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.objects import annotation

PENDING = "pending"
UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_DURATION_RE = re.compile(r"^(?:(\d+)([smhdw]))+$")
_PART_RE = re.compile(r"(\d+)([smhdw])")
_TIME_RE = re.compile(r"^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(\.\d+)?Z$")

# reason code of an object waiting for its grace (the others are in .plan)
GRACE = "grace"
NAMESPACE_GK = ("", "Namespace")
CRD_GK = ("apiextensions.k8s.io", "CustomResourceDefinition")


def mark_manager(field_manager):
    """The field manager of prune marks: not the run's own (whose other entries a sync takes over as drift)."""
    return field_manager + "-prune-mark"


def duration_seconds(value, name):
    """Seconds of a duration (``"90s"``, ``"15m"``, ``"1h"``, ``"2d"``, ``"1w"``, ``"1h30m"``) or a number of seconds
    (a number, or a string of digits) given as option ``name`` (as the caller names it, in the error). Raises
    ValueError for anything else."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
        return value
    text = str(value).strip().lower().replace(" ", "")
    if not isinstance(value, bool) and text.isdigit():
        return int(text)
    if not isinstance(value, bool) and _DURATION_RE.match(text):
        return sum(int(n) * UNITS[u] for n, u in _PART_RE.findall(text))
    raise ValueError("%s must be a duration such as 90s, 15m, 1h or 2d (units s, m, h, d, w) or a number of seconds, "
                     "got %r" % (name, value))


def parse_duration(value, name="prune_grace"):
    """Seconds of a ``prune_grace`` value (:func:`duration_seconds`); ``None`` / ``""`` / ``0``: no grace (None).
    Raises ValueError for anything else."""
    if value is None or value == "":
        return None
    return duration_seconds(value, name) or None


def parse_time(text):
    """Seconds since the epoch of an RFC 3339 UTC time as the API server writes them (``2026-05-01T10:00:00Z``,
    fractions allowed), or None."""
    m = _TIME_RE.match(text) if isinstance(text, str) else None
    if not m:
        return None
    parts = [int(p) for p in m.groups()[:6]]
    try:
        return calendar.timegm((parts[0], parts[1], parts[2], parts[3], parts[4], parts[5], 0, 0, 0)) + \
            float(m.group(7) or 0)
    except (ValueError, OverflowError):
        return None


def format_time(seconds):
    """RFC 3339 UTC of ``seconds`` since the epoch, whole seconds (rounded up)."""
    whole = int(seconds)
    if whole < seconds:
        whole += 1
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(whole))


def is_marked(obj):
    return annotation(obj, PRUNE_MARK_ANNOTATION) is not None


def marked_at(obj):
    """The time of ``obj``'s mark (seconds), or None: not marked, or the mark is still pending."""
    return parse_time(annotation(obj, PRUNE_MARK_ANNOTATION))


def write_time(obj, field_manager):
    """The server's time of the last ``Update`` by ``field_manager`` on ``obj`` (its managedFields entry), rounded
    up to the next whole second (the entry has second precision), or None."""
    for entry in (obj.get("metadata") or {}).get("managedFields") or []:
        if isinstance(entry, dict) and entry.get("manager") == field_manager and entry.get("operation") == "Update" \
                and not entry.get("subresource"):
            stamp = parse_time(entry.get("time"))
            if stamp is not None:
                return float(int(stamp) + 1)
    return None


def prune_after(obj, grace):
    """When a marked object may be deleted (seconds), or None (not marked, or pending)."""
    at = marked_at(obj)
    return None if at is None or grace is None else at + grace


def due(obj, grace, now):
    """Whether the prune grace of ``obj`` has passed at server time ``now`` (no grace: always)."""
    if grace is None:
        return True
    after = prune_after(obj, grace)
    return after is not None and now is not None and now >= after


def _crd_of(oid, info):
    """The CRD name serving a custom resource (``plural.group``), None for a built-in group."""
    plural = getattr(info, "plural", None)
    return "%s.%s" % (plural, oid.group) if plural and "." in oid.group else None


def split(prune, grace, now):
    """Split ``prune``'s candidates (a :class:`.plan.PrunePlan`) by the grace period, in place: what stays a
    candidate is due; ``prune.marks`` gets ``(oid, info, obj, prune_after)`` of the unmarked ones (to mark now; the
    time is ``now + grace``, what a mark written now would say), ``prune.waiting`` the marked ones whose grace has not
    passed. A Namespace or CRD that is due waits while objects it holds (or serves) wait or are marked.

    Without a grace nothing changes: every candidate is due, marked or not."""
    if grace is None or prune is None:
        return prune
    due_now = []
    for oid, info, obj in prune.candidates:
        if not is_marked(obj) or marked_at(obj) is None:
            prune.marks.append((oid, info, obj, None if now is None else now + grace))
        elif due(obj, grace, now):
            due_now.append((oid, info, obj))
        else:
            prune.waiting.append((oid, info, obj, prune_after(obj, grace)))
    later = prune.marks + prune.waiting
    busy_ns = set(oid.namespace for oid, _i, _o, _a in later if oid.namespace)
    busy_crds = set(_crd_of(oid, info) for oid, info, _o, _a in later)
    prune.candidates = []
    for oid, info, obj in due_now:
        if (oid.group_kind == NAMESPACE_GK and oid.name in busy_ns) or (oid.group_kind == CRD_GK and oid.name in busy_crds):
            prune.waiting.append((oid, info, obj, prune_after(obj, grace)))
        else:
            prune.candidates.append((oid, info, obj))
    return prune


def marked_without_grace(prune, grace, shown=5):
    """The warning of a run without a grace period that prunes objects an earlier run marked (with one), or None:
    their marks said "pruned after" a later time."""
    if grace is not None or prune is None:
        return None
    marked = [str(oid) for oid, _info, obj in prune.candidates if is_marked(obj)]
    if not marked:
        return None
    more = " and %d more" % (len(marked) - shown) if len(marked) > shown else ""
    return ("%d object(s) marked for pruning by a run with a prune grace period are pruned now, as this run has none "
            "(set %s to let them wait): %s%s" % (len(marked), option("prune_grace"), "; ".join(marked[:shown]), more))


def waiting_reason(prune_after_time, marked=True):
    """The message of an object waiting for its grace period (``marked``: else it is about to be marked)."""
    what = "marked for pruning" if marked else "to be marked for pruning"
    if prune_after_time is None:
        return "%s: pruned by the first run once the prune grace has passed" % what
    return "%s: pruned after %s" % (what, format_time(prune_after_time))


def unmarks(desired, ours):
    """``[(Desired, info, live)]``: desired objects whose live copy carries a prune mark (back in git: the mark
    goes)."""
    out = []
    for d in desired:
        info, live = ours.get(d.oid, (None, None))
        if live is not None and is_marked(live):
            out.append((d, info, live))
    return out
