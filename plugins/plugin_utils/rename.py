# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The stacks renamed by the default names of 0.2.0, taken over in one run. Pure functions, no I/O.

Releases before 0.2.0 named a source's stack after its whole URL and path (``naming.legacy_stack_name``),
which two sources could share; 0.2.0 names it ``naming.stack_name``. A source whose stack has a default
name keeps its objects across the upgrade: on its first sync, when the stack of its old name has a record
and the new one never completed a sync, the new stack applies (the objects carrying the old label become
its own, none is deleted), and once every stack applied and pruned, the old stack is deleted with state
absent, which releases to the new stack whatever it declares and deletes only what left git. The
``stacksync.k8s.sources`` action runs it (``_take_over``); docs/security.md and the changelog describe it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def _merged(*lists):
    out = []
    for item in (i for items in lists for i in items or []):
        if item not in out:
            out.append(item)
    return out


def renames(sources):
    """``{legacy name: [source]}``: the sources with a default stack name whose name before 0.2.0 differs and is
    not the stack of another source of this sync, and that prune (or have state absent).

    Such a legacy stack, when it has a record and the new one never completed a sync (:func:`takes_over`), is
    taken over: the new stack applies (the objects carrying the legacy label become its own), then the legacy
    stack is deleted with state absent, which releases what the new stack declares and deletes nothing else
    but what left git.
    """
    names = set(s["stack"] for s in sources)
    out = {}
    for s in sources:
        legacy = s.get("legacy_stack")
        if legacy and legacy not in names and (s["state"] == "absent" or s["prune"]):
            out.setdefault(legacy, []).append(s)
    return out


def renamed_dependencies(sources):
    """Each source's ``depends_on`` with a stack's name before 0.2.0 replaced by its new name (in place), where
    that old name is no stack of this sync and only one source had it: a ``depends_on`` written for the old
    default names keeps working."""
    names = set(s["stack"] for s in sources)
    olds = {}
    for s in sources:
        if s.get("legacy_stack"):
            olds.setdefault(s["legacy_stack"], []).append(s["stack"])
    for s in sources:
        s["depends_on"] = [olds[d][0] if d not in names and len(olds.get(d, ())) == 1 else d
                           for d in s["depends_on"]]
    return sources


def takes_over(legacy_record, new_record):
    """Whether a renamed stack takes its legacy stack over this run (records as ``stack_info`` returns them):
    the legacy stack has a record and the new one never completed a sync."""
    return bool(legacy_record) and not (new_record or {}).get("lastSyncTime")


def renamed_result(result, legacy, absent):
    """``result`` (the new stack's prune run, or its one run) with what deleting its legacy stack did (``absent``:
    that run's result): its pruned objects, warnings and failure."""
    out = dict(result or {})
    out["pruned"] = list(out.get("pruned") or []) + list(absent.get("pruned") or [])
    counts = dict(out.get("counts") or {})
    counts["pruned"] = int(counts.get("pruned", 0)) + int((absent.get("counts") or {}).get("pruned", 0))
    out["counts"] = counts
    out["warnings"] = _merged(out.get("warnings"), absent.get("warnings"))
    out["changed"] = bool(out.get("changed")) or bool(absent.get("changed"))
    if absent.get("failed"):
        out.update(failed=True, failed_phase="prune",
                   msg="taking over stack %s (its name before 0.2.0): %s" % (legacy, absent.get("msg") or "failed"))
    return out


def unread_line(legacy, error):
    """The line printed when the record of ``legacy`` (a source's stack name before 0.2.0) could not be read, though
    the source's own run went on: nothing of that stack was taken over."""
    return ("could not look for stack %s (this source's stack name before 0.2.0) to take it over: %s; if you synced "
            "this source with a release before 0.2.0, the next run takes it over" % (legacy, error))


def rename_line(legacy, absent, check_mode=False):
    """The line printed once when a stack took over its legacy stack ``legacy`` (``absent``: None in check mode)."""
    if check_mode:
        return ("would take over stack %s, its name before 0.2.0 (the default stack names changed): its objects "
                "become this stack's, none is deleted" % legacy)
    pruned = int((absent.get("counts") or {}).get("pruned", 0))
    tail = "; %d of its objects no longer in git were pruned" % pruned if pruned else ", nothing was deleted"
    return ("took over stack %s, its name before 0.2.0 (the default stack names changed): its objects are this "
            "stack's now and its record is removed%s" % (legacy, tail))
