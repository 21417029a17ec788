# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a sync says: the line printed as each stack's run ends, the summary table, the task's message,
the ``set_stats`` data, and the fleet summary of every cluster of a play. Pure.

The entries are those of ``stacksync_results`` (:func:`.sources.stack_entry`).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
from collections.abc import Mapping

LIST_LIMIT = 20  # objects listed per stack and kind of outcome in the summary
ONE_LINE = 200  # characters of an error shown in a line (the task's message has it whole)
NOT_CHECKED, HEALTHY, UNHEALTHY = "not checked", "healthy", "unhealthy"

#: the counts of a run's end line, and how check mode says them
COUNT_WORDS = (("created", "create %d"), ("configured", "configure %d"), ("recreated", "recreate %d"),
               ("unchanged", "leave %d unchanged"),
               ("pruned", "prune %d"), ("skipped", "skip %d"))


def objects(count, of=None):
    """``1 object``, ``2 objects``, or ``2 of 6 objects``."""
    total = count if of is None else of
    return "%s%d object%s" % ("" if of is None or of == count else "%d of " % count, total, "" if total == 1 else "s")


def one_line(text, limit=ONE_LINE):
    """``text`` (a message, perhaps of several lines) as one line of at most ``limit`` characters."""
    line = " ".join(part.strip() for part in str(text or "").splitlines() if part.strip())
    return line if len(line) <= limit else line[:limit - 4].rstrip() + " ..."


def own_words(stack, msg):
    """``msg`` of a run of ``stack`` without naming ``stack`` again (the caller prefixes ``stack <name>: ``).

    The module names its stack in its messages (a task of its own runs one stack); in a sync of several, the
    message is printed after the stack's name, so ``stack web: cannot sync stack 'web': ...`` would name it twice.
    """
    msg = str(msg or "")
    quoted = "(?:'%s'|\"%s\"|%s)" % ((re.escape(stack),) * 3)
    msg = re.sub(r"^(?:cannot sync )?stack %s: " % quoted, "", msg)
    # "<source> (stack 'web')" names which source is which: it stays
    return re.sub(r"(?<!\()\bstack %s(?![\w.-])" % quoted, "the stack", msg)


def _counted(counts, keys, check_mode):
    parts = [(word % counts[k]) if check_mode else "%s %d" % (k, counts[k]) for k, word in COUNT_WORDS
             if k in keys and counts.get(k)]
    if not parts:
        return "would change nothing" if check_mode else "nothing to change"
    return ("would " if check_mode else "") + ", ".join(parts)


def outcome_line(stack, res, seconds, phase, check_mode=False):
    """The line printed when a run of ``stack`` ends (``phase``: apply, all, prune or delete), or None for a prune
    run that deleted nothing (nothing happened that a line should announce)."""
    if res.get("failed"):
        return "FAILED after %.1f s: %s" % (seconds, one_line(own_words(stack, res.get("msg") or "failed")))
    counts = dict((k, int(v or 0)) for k, v in (res.get("counts") or {}).items())
    counts["skipped"] = len(res.get("skipped_objects") or [])
    if phase in ("prune", "delete"):
        if phase == "prune" and not counts.get("pruned"):
            return None
        verb = "pruned" if phase == "prune" else "deleted"
        if check_mode:
            return "would %s %s (%.1f s)" % (verb[:-1], objects(counts.get("pruned", 0)), seconds)
        return "%s %s in %.1f s%s" % (verb, objects(counts.get("pruned", 0)), seconds, waited_text(res))
    keys = ("created", "configured", "recreated", "unchanged", "skipped") + (("pruned",) if phase == "all" else ())
    said = _counted(counts, keys, check_mode)
    line = "%s (%.1f s)" % (said, seconds) if check_mode else "%s in %.1f s" % (said, seconds)
    return line + waited_text(res)


def waited_text(res):
    """``, after waiting 58 s for another run's lock`` when the run waited for it (its ``lock_wait``), else ``""``."""
    waited = float(res.get("lock_wait") or 0.0)
    return ", after waiting %.0f s for another run's lock" % waited if waited >= 0.5 else ""


def start_line(verb, done, total, manifests, origin, then_wait):
    """The line printed when a stack's run starts writing (the first of its progress calls), or None.

    ``verb``/``done``/``total`` are the progress call's, ``manifests`` the number of manifests, ``origin`` where
    they come from (repository, path, commit).
    """
    if verb == "applied":
        line = "applying %s from %s" % (objects(total, manifests), origin)
        return line + (", then waiting until the stack is healthy" if then_wait else "")
    if verb == "dry-run applied":
        return "checking %s from %s with a server-side dry run" % (objects(total, manifests), origin)
    if verb in ("pruned", "dry-run pruned"):
        return "%s %s" % ("pruning" if verb == "pruned" else "checking the pruning of", objects(total))
    return None


def health_text(entry):
    """The HEALTH column: whether the stack's objects were checked (``wait``), and what was found."""
    if entry.get("health") != UNHEALTHY:
        return entry.get("health") or NOT_CHECKED
    return "%d unhealthy" % len(entry["unhealthy"])


def _ref_text(o):
    ns = o.get("namespace")
    return "%s %s%s" % (o.get("kind") or "?", (ns + "/") if ns else "", o.get("name") or "?")


def _listed(lines, objects, describe, limit=LIST_LIMIT):
    for o in objects[:limit]:
        lines.append("  " + describe(o))
    if len(objects) > limit:
        lines.append("  ... and %d more" % (len(objects) - limit))


COLUMNS = ("stack", "commit", "created", "configured", "unchanged", "pruned", "skipped", "health", "seconds",
           "result")
#: the column of objects deleted and created again (recreate_on_immutable): shown when a stack has one
RECREATED_COLUMN = "recreated"
#: the actions of the objects a run wrote, as the summary lists them
WRITTEN = ("created", "configured", "recreated")


def result_text(entry):
    """The RESULT column: ok, FAILED, not applied (a dependency failed) or deleted; pruning when it did not run."""
    if entry["failed"] and entry["msg"].startswith("not applied"):
        return "not applied"
    if entry["state"] == "absent":
        return "FAILED" if entry["failed"] else "deleted"
    result = "FAILED" if entry["failed"] else "ok"
    return result if entry["pruning"] == "done" else "%s (pruning %s)" % (result, entry["pruning"])


def _columns(entries):
    """:data:`COLUMNS`, with :data:`RECREATED_COLUMN` after ``configured`` when an entry counts a recreated object."""
    if not any(e["counts"].get(RECREATED_COLUMN) for e in entries):
        return COLUMNS
    at = COLUMNS.index("configured") + 1
    return (*COLUMNS[:at], RECREATED_COLUMN, *COLUMNS[at:])


def _row(entry, columns=COLUMNS):
    c = entry["counts"]
    cells = {"stack": entry["stack"], "commit": entry["commit"][:12] or "-", "health": health_text(entry),
             "seconds": "%.1f" % entry["seconds"], "result": result_text(entry)}
    return tuple(cells[k] if k in cells else c.get(k, 0) for k in columns)


def table(rows, left=(0, 1)):
    """``rows`` (tuples of strings, the first the header) as aligned lines; text columns left, numbers right."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    last = len(rows[0]) - 1
    return [("  ".join(r[i].ljust(widths[i]) if i in left or i == last else r[i].rjust(widths[i])
                       for i in range(len(r)))).rstrip() for r in rows]


def _details(entry):
    details = []
    if entry["failed"]:
        said = one_line(own_words(entry["stack"], entry["msg"] or "failed"))
        details.append("  " + said if said.startswith("not applied") else "  error: " + said)
    written = [o for o in entry["applied"] if o.get("action") in WRITTEN]
    _listed(details, written, lambda o: "%s %s%s" % (o.get("action"), _ref_text(o), (
        ": " + one_line(o["reason"])) if o.get("action") == "recreated" and o.get("reason") else ""))
    _listed(details, entry["pruned"], lambda o: "pruned " + _ref_text(o))
    _listed(details, entry.get("marked") or [],
            lambda o: "marked %s: pruned after %s" % (_ref_text(o), o.get("prune_after") or "the prune grace"))
    _listed(details, entry["skipped"], lambda o: "skipped %s: %s" % (_ref_text(o), o.get("reason") or ""), 10)
    _listed(details, entry["unhealthy"],
            lambda o: "unhealthy %s: %s (%s)" % (_ref_text(o), o.get("health"), o.get("health_reason") or ""), 10)
    # warnings are not repeated here: the task's result carries them, and Ansible prints each once
    return details


def summary_lines(host, entries, check_mode=False):
    """The summary printed at the end of a sync: a table with one row per stack, then each stack's details."""
    lines = []
    if check_mode:
        lines.append("check mode: nothing was changed, the counts say what a sync would do")
    columns = _columns(entries)
    lines.extend(table([tuple(c.upper() for c in columns)] + [tuple(str(v) for v in _row(e, columns)) for e in entries],
                       left=(0, 1, columns.index("health"))))
    for e in entries:
        details = _details(e)
        if details:
            lines.append("%s:" % e["stack"])
            lines.extend(details)
    return ["stacksync summary [%s]" % host] + ["  " + line for line in lines]


def stats(entries):
    """Per stack the counts and state, for ``set_stats`` (AWX shows them as the job's artifacts)."""
    return dict((e["stack"], {
        "commit": e["commit"], "repo": e["repo"], "path": e["path"], "state": e["state"], "failed": e["failed"],
        "changed": e["changed"], "pruning": e["pruning"], "counts": e["counts"], "seconds": e["seconds"],
        "msg": one_line(own_words(e["stack"], e["msg"])) if e["failed"] else "",
        "health": e.get("health") or NOT_CHECKED,
        "unhealthy": [dict(_ref_keys(o), health=o.get("health"), reason=o.get("health_reason"))
                      for o in e["unhealthy"]],
    }) for e in entries)


def _ref_keys(o):
    return dict((k, o.get(k)) for k in ("apiVersion", "kind", "namespace", "name"))


def failure_message(entries):
    """The error of the sync, once: each failed stack's message (a stack blocked by a dependency last)."""
    failed = [e for e in entries if e["failed"]]
    failed.sort(key=lambda e: e["msg"].startswith("not applied"))
    return "; ".join("stack %s: %s" % (e["stack"], own_words(e["stack"], e["msg"]) or "failed") for e in failed)


# -- the fleet summary: every cluster of a play in one table ---------------------------------------------

FLEET_COLUMNS = ("cluster", "stack", "source", "commit", "synced", "pruned", "result")


def _source_text(entry):
    return entry["repo"] if entry.get("path") in (None, "", ".") else "%s %s" % (entry["repo"], entry["path"])


def fleet_rows(clusters):
    """One row per cluster and stack, failures first (then clusters and stacks in the play's order).

    ``clusters``: ``[(name, entries, failed)]``, ``entries`` its ``stacksync_results`` (``None``: the sync did not
    run for it), ``failed`` whether Ansible failed the host. A row: ``(failed, cells)``.
    """
    rows = []
    for name, entries, failed in clusters:
        entries = entries or []
        for e in entries:
            c = e["counts"]
            if e["failed"] and e["msg"].startswith("not applied"):
                result = e["msg"]
            elif e["failed"]:
                result = "FAILED: " + one_line(own_words(e["stack"], e["msg"]) or "failed")
            else:
                result = "deleted" if e["state"] == "absent" else "ok"
            synced = "-" if e["failed"] or e["state"] == "absent" else str(sum(c.get(k, 0) for k in (*WRITTEN, "unchanged")))
            rows.append((e["failed"], (name, e["stack"], _source_text(e), e["commit"][:12] or "-", synced,
                                       str(c["pruned"]), result)))
        if failed and not any(e["failed"] for e in entries):
            why = "FAILED before the sync (its error is above)" if not entries else "FAILED after the sync"
            rows.append((True, (name, "-", "-", "-", "-", "-", why)))
    return [r for r in rows if r[0]] + [r for r in rows if not r[0]]


def active_hosts(task_vars, hosts):
    """The ``hosts`` Ansible has not failed: those of ``ansible_play_hosts`` (every host, when a task outside a play
    gives none). When every host failed, that list is empty: none is active, and none is called synced."""
    play = task_vars.get("ansible_play_hosts")
    return set(hosts) if play is None else set(play) & set(hosts)


def fleet_lines(clusters, check_mode=False):
    """The fleet summary: a headline, then (for more than one cluster) the table of :func:`fleet_rows`. In check mode
    the clusters were checked, not synced."""
    rows = fleet_rows(clusters)
    stacks = sum(len(entries or []) for _name, entries, _failed in clusters)
    failed = [name for name, _e, _f in clusters if name in set(cells[0] for bad, cells in rows if bad)]
    counted = "%d cluster%s" % (len(clusters), "" if len(clusters) == 1 else "s")
    done = "checked (check mode: nothing was changed)" if check_mode else "synced"
    if failed:
        head = "stacksync: %d of %s failed (%s), %d %s" % (
            len(failed), counted, ", ".join(failed), len(clusters) - len(failed), done)
    else:
        head = "stacksync: %s %s (%d stack%s)" % (counted, done, stacks, "" if stacks == 1 else "s")
    if len(clusters) < 2:
        return [head]
    body = table([tuple(c.upper() for c in FLEET_COLUMNS)] + [cells for _failed, cells in rows], left=(0, 1, 2, 3))
    return [head] + ["  " + line for line in body]


def host_entries(hostvars, host, name):
    """The variable ``name`` of ``host`` (its ``stacksync_results``) in ``hostvars`` (ansible-core's ``HostVars``, or
    a mapping of mappings), or None when the host is not there.

    A list is taken as the host's variables hold it (``HostVars.raw_get``): reading ``hostvars[host][name]`` templates
    the value again, a walk of every entry and of its ``applied`` list (an entry per object written: seconds of
    ansible-core's CPU at 10,000 objects) that changes nothing in what the role's ``set_fact`` stored (a task's
    result is never templated again). Any other value is read as templated."""
    if host not in hostvars:
        return None
    raw_get = getattr(hostvars, "raw_get", None)
    raw = raw_get(host) if raw_get is not None else None
    if isinstance(raw, Mapping) and isinstance(raw.get(name), list):
        return raw[name]
    return (hostvars.get(host) or {}).get(name)


def fleet_stats(clusters):
    """``set_stats`` data of the fleet: per cluster its stacks (as :func:`stats`), and the failures."""
    rows = fleet_rows(clusters)
    return {
        "stacksync": dict((name, stats(entries or [])) for name, entries, _failed in clusters),
        "stacksync_failed": ["%s/%s" % (cells[0], cells[1]) if cells[1] != "-" else cells[0]
                             for failed, cells in rows if failed],
    }
