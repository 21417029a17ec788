# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The plan of a ``stacksync.k8s.sources`` run (issue 29), pure: which approved plan a host runs, the commits it
pins, what each stack run is given, and the plan a check emits from its stack runs' plans.

Plans are per host (cluster): a check emits one plan per host, set as the artifact :func:`.plan_file.artifact_key`
of the host (one key per host, so the artifacts of job slices, which AWX merges key by key, keep every host's); a
run is given the plan of its host, and a host the approved plan has no plan for is refused before anything is done.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.stacksync.k8s.plugins.module_utils.engine import approval as A
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.plan_file import artifact_key, document, merged, seal


def approved_value(value, host, variables):
    """The approved plan a ``sources`` task is given (``approved_plan``): ``True`` means this host's artifact (the
    variable :func:`.plan_file.artifact_key`, from ``variables``), anything else is the plan itself (a file path is
    read by the caller). Raises :class:`.approval.PlanError` when ``True`` finds no artifact."""
    if isinstance(value, str) and value.strip().lower() in ("true", "yes"):  # a survey's text
        value = True
    if value is True:
        key = artifact_key(host)
        found = variables.get(key)
        if found is None:
            raise A.PlanError("approved_plan is true, but there is no plan for host %s (variable %s: the artifact a "
                              "check with emit_plan sets): nothing was done on it" % (host, key))
        return found
    if value is False:
        return None
    return value


def pinned(parsed, stack):
    """The commit the approved plan syncs ``stack`` at (None: none, or no plan)."""
    if parsed is None:
        return None
    return (parsed.stacks.get(stack) or {}).get("commit")


def moved_message(version, now, commit):
    return ("version %s now resolves to %s; the approved plan's commit %s is synced" % (version, now[:12], commit[:12]))


def stack_plan_args(parsed, stack, emitting):
    """What the ``stacksync.k8s.stack`` runs of ``stack`` get for the run's plan: its part of the approved plan, or
    ``emit_plan`` for a check that emits one."""
    args = {}
    if parsed is not None:
        args["approved_plan"] = A.reduced(parsed, stack)
    if emitting:
        args["emit_plan"] = True
    return args


def _entry(result, stack):
    return ((result or {}).get("plan") or {}).get("stacks", {}).get(stack)


def host_plan(host, prepared, applies, prunes, phase_all):
    """The plan of ``host`` from the stack runs of a check (``applies`` / ``prunes``: ``{stack: result}``); a stack
    whose runs made no plan (not applied, failed) is left out, and so cannot be approved; one whose prune did not run
    (``prune: false``) deletes nothing."""
    stacks = {}
    for source, commit, _resources, _error in prepared:
        stack = source["stack"]
        apply_entry, prune_entry = _entry(applies.get(stack), stack), _entry(prunes.get(stack), stack)
        if phase_all:
            entry = apply_entry
        elif source["state"] == "absent":
            entry = prune_entry
        else:
            entry = merged(apply_entry, prune_entry) if apply_entry else None
        if entry:
            stacks[stack] = seal(dict(entry, repo=source["repo_label"], version=source["version"],
                                      path=source["path"], commit=entry.get("commit") or commit or None))
    return document(stacks, host)


def stats(host, plan):
    """The ``set_stats`` data of a host's plan: AWX shows it as the job's artifact and passes it to the next node."""
    return {artifact_key(host): plan}
