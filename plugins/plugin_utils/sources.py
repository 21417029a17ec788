# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pure part of ``stacksync.k8s.sources``: sources resolved and checked, their order, the results.

No I/O here: the action plugin fetches, renders and runs ``stacksync.k8s.stack``; these functions
decide what to run in which order and turn the runs' results into ``stacksync_results`` entries
(what a sync prints and its ``set_stats`` data are in :mod:`.summary`).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.stacksync.k8s.plugins.module_utils import health_status as hs
from ansible_collections.stacksync.k8s.plugins.module_utils.naming import redact_url
from ansible_collections.stacksync.k8s.plugins.module_utils.sources_spec import PASSTHROUGH
from ansible_collections.stacksync.k8s.plugins.plugin_utils.checkout import repo_subpath, source_stack
from ansible_collections.stacksync.k8s.plugins.plugin_utils.summary import own_words

SOURCE_OPTIONS = ("repo", "version", "path", "stack", "include", "exclude", "namespace", "prune", "state", "vars",
                  "kubeconfig", "context", "impersonate_user", "impersonate_groups", "record_namespace", "depends_on")
SOURCE_DEFAULTS = {"version": "HEAD", "path": ".", "stack": "", "include": [], "exclude": [], "namespace": "",
                   "prune": True, "state": "present", "vars": {}, "depends_on": []}
#: the host's credentials, not given to a source with its own kubeconfig or context
HOST_CREDENTIALS = ("kubeconfig", "context", "host", "api_key", "username", "password", "ca_cert", "client_cert",
                    "client_key")
HEALTHY = (hs.HEALTHY, hs.CURRENT)  # health as stack_info / wait report it


class SourceError(ValueError):
    """A source is invalid: raised before anything is fetched or written."""


def resolve(sources, defaults):
    """Each source with the defaults filled in and its stack name; raises :class:`SourceError`.

    ``defaults`` holds the role-wide values (version, path, prune); a source's own ``None`` means unset.
    """
    base = dict(SOURCE_DEFAULTS, **dict((k, v) for k, v in defaults.items() if v is not None))
    resolved = []
    for i, source in enumerate(sources):
        if not isinstance(source, dict):
            raise SourceError("source %d is not a mapping" % (i + 1))
        unknown = sorted(set(source) - set(SOURCE_OPTIONS))
        if unknown:
            raise SourceError("source %d: unknown option(s) %s (known: %s)"
                              % (i + 1, ", ".join(unknown), ", ".join(SOURCE_OPTIONS)))
        entry = dict(base, **dict((k, v) for k, v in source.items() if v is not None))
        resolved.append(_checked(i + 1, entry))
        resolved[-1]["given"] = sorted(k for k, v in source.items() if v not in (None, "", []))  # for messages
    check_stacks(resolved)
    return resolved


def _checked(number, entry):
    repo = entry.get("repo")
    if not isinstance(repo, str) or not repo.strip():
        raise SourceError("source %d has no repo" % number)
    label = redact_url(repo)
    if entry["state"] not in ("present", "absent"):
        raise SourceError("source %s: state must be present or absent, not %r" % (label, entry["state"]))
    try:
        entry["path"] = repo_subpath(entry["path"])
        entry["stack"] = source_stack(repo, entry["path"], entry["stack"])
    except ValueError as e:
        raise SourceError("source %s: %s" % (label, e)) from None
    entry["depends_on"] = list(entry["depends_on"] or [])
    entry["own_auth"] = bool(entry.get("kubeconfig") or entry.get("context"))
    entry["repo_label"] = label
    entry["index"] = number - 1  # where it is in the task's list, for messages
    return entry


def check_stacks(sources):
    """Unique stack names and valid ``depends_on`` (names that exist, no cycle); raises :class:`SourceError`."""
    names = [s["stack"] for s in sources]
    twice = sorted(set(n for n in names if names.count(n) > 1))
    if twice:
        raise SourceError("two sources resolve to the same stack name (%s): give each source its own `stack`, "
                          "otherwise pruning one would delete the other's objects" % ", ".join(twice))
    by_name = dict((s["stack"], s) for s in sources)
    for s in sources:
        for dep in s["depends_on"]:
            if dep not in by_name:
                raise SourceError("stack %s depends on %r, which is not a stack of this sync (stacks: %s)"
                                  % (s["stack"], dep, ", ".join(names)))
            if by_name[dep]["state"] == "absent" and s["state"] == "present":
                raise SourceError("stack %s depends on %s, which has state absent" % (s["stack"], dep))
    order(sources)


def order(sources):
    """The sources in apply order: each after the stacks it depends on, otherwise as given.

    Raises :class:`SourceError` naming the stacks of a dependency cycle.
    """
    done, ordered, remaining = set(), [], list(sources)
    while remaining:
        ready = [s for s in remaining if all(d in done for d in s["depends_on"])]
        if not ready:
            raise SourceError("dependency cycle between stacks %s" % ", ".join(_cycle(remaining)))
        for s in ready:
            done.add(s["stack"])
            ordered.append(s)
        remaining = [s for s in remaining if s["stack"] not in done]
    return ordered


def _cycle(remaining):
    """One cycle among ``remaining`` (sources none of which can go first), as a path of names."""
    by_name = dict((s["stack"], s) for s in remaining)
    path, name = [], remaining[0]["stack"]
    while name not in path:
        path.append(name)
        name = next(d for d in by_name[name]["depends_on"] if d in by_name)
    return [*path[path.index(name):], name]


def dependents(sources):
    """Names of the stacks some other stack depends on (applied and waited for before their dependents)."""
    return set(d for s in sources for d in s["depends_on"])


def blocked_by(source, failed):
    """The stacks ``source`` depends on that failed or were blocked themselves (it is not applied then)."""
    return [d for d in source["depends_on"] if d in failed]


def stack_args(source, commit, resources, params, phase, wait=False):
    """The arguments of the ``stacksync.k8s.stack`` run of ``source`` in ``phase`` (apply, prune or all).

    ``params`` are the task's (validated) options; those of :data:`sources_spec.PASSTHROUGH` that are set go to
    every stack, except the host's credentials for a source with its own kubeconfig or context.
    """
    args = dict((k, params[k]) for k in PASSTHROUGH if params.get(k) is not None)
    if source["own_auth"]:
        for k in HOST_CREDENTIALS:
            args.pop(k, None)
    for k in ("kubeconfig", "context", "impersonate_user", "impersonate_groups", "record_namespace"):
        if source.get(k) not in (None, ""):
            args[k] = source[k]
    if source.get("impersonate_user") == "":  # an empty string turns the host's impersonation off
        args.pop("impersonate_user", None)
        args.pop("impersonate_groups", None)
    args.update(name=source["stack"], state=source["state"], prune=True)
    if source["namespace"]:
        args["namespace"] = source["namespace"]
    if source["state"] == "present":
        args.update(resources=resources, phase=phase, commit=commit)
    if wait:
        args["wait"] = True
    return args


def _refs(objects):
    return [o for o in objects or [] if isinstance(o, dict)]


def _prune_failed(result):
    return bool(result.get("failed")) and (result.get("failed_phase") == "prune" or bool(result.get("pruned")))


def stack_entry(source, commit, objects, apply=None, prune=None, one_run=False, seconds=0.0, blocked=None,
                error=None, waited=False):
    """The ``stacksync_results`` entry of one stack from its apply and prune results (``None``: not run).

    ``error``: the stack's source could not be fetched or rendered (nothing of it was applied).
    ``waited``: the apply waited until the objects it wrote were healthy (``health`` says what was found).

    With ``one_run`` the apply result is a single run that applied and pruned (phase all): it is split so
    the entry reads as with two runs.
    """
    apply, prune = dict(apply or {}), dict(prune or {})
    if one_run and apply:
        prune = dict(apply, failed=_prune_failed(apply)) if not apply.get("failed") or _prune_failed(apply) else {}
        apply["failed"] = bool(apply.get("failed")) and not _prune_failed(apply)
    apply_failed, prune_failed = bool(apply.get("failed")), bool(prune.get("failed"))
    seen = set()
    skipped = []
    for phase in (apply, prune):
        for o in _refs(phase.get("skipped_objects")):
            key = (o.get("kind"), o.get("namespace"), o.get("name"))
            if (phase is prune and o.get("code") == "not-applied") or key in seen:
                continue
            seen.add(key)
            skipped.append(o)
    counts = dict((k, int((apply.get("counts") or {}).get(k, 0))) for k in ("created", "configured", "unchanged"))
    counts["pruned"] = int((prune.get("counts") or {}).get("pruned", 0))
    counts["skipped"] = len(skipped)
    applied = _refs(apply.get("applied"))
    unhealthy = [o for o in applied if o.get("health") and o["health"] not in HEALTHY]
    # the entry names its stack: its message does not again
    msg = own_words(source["stack"], apply.get("msg", "") if apply_failed else (prune.get("msg", "") if prune_failed else ""))
    if blocked:
        msg = "not applied: it depends on %s, which failed" % ", ".join(blocked)
    if error:
        msg = error
    return {
        "stack": source["stack"], "repo": source["repo_label"], "version": source["version"],
        "path": source["path"], "commit": commit or "", "state": source["state"], "objects": objects,
        "depends_on": source["depends_on"],
        "changed": bool(apply.get("changed")) or bool(prune.get("changed")),
        "failed": apply_failed or prune_failed or bool(blocked) or bool(error), "msg": msg,
        "pruning": _pruning(source, prune, prune_failed),
        "counts": counts, "applied": applied, "pruned": _refs(prune.get("pruned")), "skipped": skipped,
        "unhealthy": unhealthy, "health": _health(applied, unhealthy, waited and not apply_failed),
        "warnings": _merged(apply.get("warnings"), prune.get("warnings")),
        # one run: its result stands for both phases, so its diff is listed once
        "diff": [d for d in (apply.get("diff"), None if one_run else prune.get("diff")) if d],
        "seconds": round(seconds, 2),
    }


def _health(applied, unhealthy, waited):
    """``not checked`` (nothing written was waited for), ``healthy`` or ``unhealthy``."""
    if unhealthy:
        return "unhealthy"
    checked = waited and any(o.get("action") in ("created", "configured") for o in applied)
    return "healthy" if checked else "not checked"


def _merged(*lists):
    out = []
    for item in (i for items in lists for i in items or []):
        if item not in out:
            out.append(item)
    return out


def _pruning(source, prune, prune_failed):
    if prune_failed:
        return "failed"
    if prune:
        return "done"
    return "disabled" if not source["prune"] and source["state"] == "present" else "not run"
