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

import os
from collections import namedtuple

from ansible_collections.stacksync.k8s.plugins.module_utils.base.naming import legacy_stack_name, redact_url, source_id
from ansible_collections.stacksync.k8s.plugins.module_utils.base.stack_spec import BY_NAME
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import gate
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.changeset import UNCHANGED
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.confinement import POLICY_OPTIONS
from ansible_collections.stacksync.k8s.plugins.module_utils.health import status as hs
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.auth import AUTH_ARG_SPEC
from ansible_collections.stacksync.k8s.plugins.module_utils.sources_spec import PASSTHROUGH
from ansible_collections.stacksync.k8s.plugins.plugin_utils.checkout import check_source, repo_subpath, source_stack
from ansible_collections.stacksync.k8s.plugins.plugin_utils.rename import renamed_dependencies
from ansible_collections.stacksync.k8s.plugins.plugin_utils.summary import one_line, own_words

SOURCE_OPTIONS = ("repo", "version", "path", "stack", "include", "exclude", "namespace", "prune", "state", "vars",
                  "kubeconfig", "context", "impersonate_user", "impersonate_groups", "record_namespace", "depends_on",
                  "trusted", "vault_id", "kustomize_remote", "prune_grace", "fail_on_shared", *POLICY_OPTIONS)
SOURCE_DEFAULTS = {"version": "HEAD", "path": ".", "stack": "", "include": [], "exclude": [], "namespace": "",
                   "prune": True, "state": "present", "vars": {}, "depends_on": [],
                   "trusted": False, "vault_id": [], "kustomize_remote": False}
#: the job's connection settings, none of which a source with its own kubeconfig or context gets (nor the
#: K8S_AUTH_* environment: its stack runs with k8s_auth_env false); only request_timeout is not a credential
HOST_CREDENTIALS = tuple(sorted(set(AUTH_ARG_SPEC) - {"request_timeout"}))
RECORD_NAMESPACE = BY_NAME["record_namespace"].default  # the stack module's default


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
    check_stacks(renamed_dependencies(resolved))
    for entry in resolved:  # each stack reads the records of the others (stack_args), None: the task's default
        entry["sync_record_namespaces"] = [s.get("record_namespace") or None for s in resolved]
    return resolved


def _checked(number, entry):
    repo = entry.get("repo")
    if not isinstance(repo, str) or not repo.strip():
        raise SourceError("source %d has no repo" % number)
    label = redact_url(repo)
    if entry["state"] not in ("present", "absent"):
        raise SourceError("source %s: state must be present or absent, not %r" % (label, entry["state"]))
    try:
        if entry["state"] == "present":
            check_source(repo, entry["version"])
        entry["path"] = repo_subpath(entry["path"])
        entry["legacy_stack"] = None if entry["stack"] else _legacy_name(repo, entry["path"])
        entry["stack"] = source_stack(repo, entry["path"], entry["stack"])
        # the stack's owning source, as its record remembers it (credential-free: no userinfo, no query)
        entry["source_id"] = source_id(repo, entry["path"])
    except ValueError as e:
        raise SourceError("source %s: %s" % (label, e)) from None
    entry["depends_on"] = list(entry["depends_on"] or [])
    entry["own_auth"] = bool(entry.get("kubeconfig") or entry.get("context"))
    entry["repo_label"] = label
    entry["index"] = number - 1  # where it is in the task's list, for messages
    return entry


def _legacy_name(repo, path):
    """The default name releases before 0.2.0 gave the source (None if they could not derive one)."""
    try:
        return legacy_stack_name(repo, path)
    except ValueError:
        return None


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


def own_connection(source, params, environ=None):
    """The connection arguments of a source with its own kubeconfig or context: those alone, never the job's
    (``k8s_auth_env`` false: no ``K8S_AUTH_*`` either). A context alone is looked up in the job's kubeconfig
    file (the task's ``kubeconfig``, else ``K8S_AUTH_KUBECONFIG``, else kubectl's ``KUBECONFIG``)."""
    environ = os.environ if environ is None else environ
    args = {"k8s_auth_env": False}
    kubeconfig = source.get("kubeconfig") or params.get("kubeconfig") or environ.get("K8S_AUTH_KUBECONFIG")
    if kubeconfig:
        args["kubeconfig"] = kubeconfig
    return args


# -- the schedule: apply every stack in order, then prune every stack the prune gate lets prune, in reverse ------
#: outcomes of a step, in ``done`` (see :func:`next_step`)
DONE, FAILED, NOT_RUN = "done", "failed", "not run"

#: one step of a sources run: run ``source``'s stack in ``phase`` (all, apply, prune or delete), or, with ``phase``
#: None, not (``message`` says why); ``stage`` is the part of the run it belongs to (apply or prune)
Step = namedtuple("Step", ["stage", "source", "commit", "resources", "phase", "message"])


def single_run(prepared):
    """One present source: applied and (as its stack's prune gate says) pruned by one stack run (phase all)."""
    return len(prepared) == 1 and prepared[0][0]["state"] == "present"


def _failed_applies(done):
    return set(stack for stack, stages in done.items() if stages.get("apply") == FAILED)


def prune_decision(prepared, index, done):
    """The prune gate's answer (:func:`.gate.decide`) for the stack of ``prepared[index]`` once every apply is done."""
    source, _commit, _resources, error = prepared[index]
    failed = _failed_applies(done)
    own = done.get(source["stack"], {}).get("apply")
    return gate.decide(gate.Facts(
        caller=gate.SOURCES, stack=source["stack"], state=source["state"], prune=source["prune"],
        source_failed=bool(error), blocked=tuple(blocked_by(source, failed)),
        apply_errors=(1 if own == FAILED else 0) if source["state"] == "present" else None,
        others_failed=bool(failed - {source["stack"]}),
        unrendered=tuple(p[0]["stack"] for p in prepared if p[3] and p[0] is not source)))


def next_step(prepared, done):
    """The next :class:`Step` of a sources run, or None when it is over (pure).

    :param prepared: ``[(source, commit, resources, error)]`` in apply order (``error``: it could not be fetched or
        rendered).
    :param done: ``{stack: {stage: outcome}}``, the outcome (:data:`DONE`, :data:`FAILED` or :data:`NOT_RUN`) of
        each step so far, which the caller records.

    Every present source is applied in order, but not one whose source failed or which depends on a stack that
    failed. Then, in reverse order, each stack prunes (or, state absent, is deleted) as the prune gate says: one
    stack's failed apply does not hold back another's prune (what the run's other sources declare is passed to it,
    :func:`other_sources`), but a stack whose own apply failed or did not run never prunes.
    """
    failed = _failed_applies(done)
    for source, commit, resources, error in prepared:
        if source["state"] != "present" or "apply" in done.get(source["stack"], {}):
            continue
        blocked = blocked_by(source, failed)
        if error:
            return Step("apply", source, commit, resources, None, "FAILED: %s" % one_line(error))
        if blocked:
            return Step("apply", source, commit, resources, None,
                        "not applied: it depends on %s, which failed" % ", ".join(blocked))
        return Step("apply", source, commit, resources, "all" if single_run(prepared) else "apply", None)
    if single_run(prepared):
        return None
    for index in reversed(range(len(prepared))):
        source, commit, resources, _error = prepared[index]
        if "prune" in done.get(source["stack"], {}):
            continue
        decision = prune_decision(prepared, index, done)
        phase = ("prune" if source["state"] == "present" else "delete") if decision.prune else None
        return Step("prune", source, commit, resources, phase, decision.message or None)
    return None


def declared(resources):
    """The identities ``resources`` declare, as the stack option ``other_sources`` lists them."""
    out = []
    for m in resources or []:
        meta = m.get("metadata") if isinstance(m, dict) else None
        if isinstance(meta, dict) and isinstance(m.get("apiVersion"), str) and isinstance(m.get("kind"), str) \
                and isinstance(meta.get("name"), str):
            out.append([m["apiVersion"], m["kind"], meta.get("namespace") or "", meta["name"]])
    return out


def other_sources(prepared, source, params, declarations):
    """The stack option ``other_sources`` of ``source``'s runs: what every other present source of the run rendered
    (whatever became of its apply). A source that could not be rendered is listed without objects (None): what it
    owns stays with it, and what its record declares counts as declared.

    ``declarations``: ``{stack: declared(resources)}``, computed once per run.
    """
    out, earlier = [], True
    for other, _commit, resources, error in prepared:
        if other is source:
            earlier = False
            continue
        if other["state"] != "present":
            continue
        entry = {"stack": other["stack"], "source": other["source_id"], "earlier": earlier,
                 "namespace": other["namespace"] or params.get("namespace") or "",
                 "objects": None if error or resources is None else declarations[other["stack"]]}
        policy = _policy(other, params)
        if policy:  # what it declares outside its confinement is no claim: its own run refuses to write it
            entry["policy"] = policy
        out.append(entry)
    return out


def _policy(source, params):
    """The confinement options in force for ``source`` (its own, else the task's), only those set."""
    return dict((k, source[k] if source.get(k) is not None else params.get(k)) for k in POLICY_OPTIONS
                if source.get(k) is not None or params.get(k) is not None)


def stack_args(source, commit, resources, params, phase, wait=False, environ=None, others=None):
    """The arguments of the ``stacksync.k8s.stack`` run of ``source`` in ``phase`` (apply, prune or all).

    ``params`` are the task's (validated) options; those of :data:`sources_spec.PASSTHROUGH` that are set go to
    every stack, except the job's connection settings for a source with its own kubeconfig or context
    (:func:`own_connection`). ``others``: what the run's other sources declare (:func:`other_sources`).
    """
    args = dict((k, params[k]) for k in PASSTHROUGH if params.get(k) is not None)
    if source["own_auth"]:
        for k in HOST_CREDENTIALS:
            args.pop(k, None)
        args.update(own_connection(source, params, environ))
    for k in ("kubeconfig", "context", "impersonate_user", "impersonate_groups", "record_namespace", "prune_grace",
              "fail_on_shared", *POLICY_OPTIONS):
        if source.get(k) not in (None, ""):
            args[k] = source[k]
    if source.get("impersonate_user") == "":  # an empty string turns the host's impersonation off
        args.pop("impersonate_user", None)
        args.pop("impersonate_groups", None)
    default = params.get("record_namespace") or RECORD_NAMESPACE
    known = set(ns or default for ns in source.get("sync_record_namespaces") or ())
    if len(known) > 1:  # where a source's credentials may not list records cluster-wide, it reads these
        args["record_namespaces"] = sorted(known | set(params.get("record_namespaces") or ()))
    args.update(name=source["stack"], state=source["state"], prune=source["prune"], source=source["source_id"])
    if others is not None:  # even none: the stack knows it is a sources run, and that the run writes nothing else
        args["other_sources"] = others
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


def stack_entry(source, commit, objects, apply=None, prune=None, phase_all=False, seconds=0.0, blocked=None,
                error=None, health_waited=False, lock_wait=0.0):
    """The ``stacksync_results`` entry of one stack from its apply and prune results (``None``: not run).

    ``error``: the stack's source could not be fetched or rendered (nothing of it was applied).
    ``health_waited``: the apply waited (``wait``, not in check mode) until the stack's objects, written or
    unchanged, were healthy (``health`` says what was found).
    ``seconds``: the time of its runs, without ``lock_wait``, the seconds they waited for another run's lock.

    With ``phase_all`` the apply result is a single run that applied and pruned (phase all): it is split so
    the entry reads as with two runs.
    """
    apply, prune = dict(apply or {}), dict(prune or {})
    if phase_all and apply:
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
    counts = dict((k, int((apply.get("counts") or {}).get(k, 0))) for k in ("created", "configured", "recreated", "unchanged"))
    counts["pruned"] = int((prune.get("counts") or {}).get("pruned", 0))
    counts["skipped"] = len(skipped)
    applied = _refs(apply.get("applied"))
    unhealthy = [o for o in applied if hs.unhealthy(o.get("health"))]
    # the objects written: the unchanged ones are counted, not listed (at 10,000 objects listing them cost 2 s of CPU
    # in ansible-core, which copies, tags and templates a task's result and the role's fact entry by entry)
    written = [o for o in applied if o.get("action") != UNCHANGED]
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
        "counts": counts, "applied": written, "pruned": _refs(prune.get("pruned")), "skipped": skipped,
        "marked": _refs(prune.get("marked")),  # prune_grace: marked for pruning, with prune_after
        "unhealthy": unhealthy, "health": _health(counts, unhealthy, health_waited and not apply_failed),
        "warnings": _merged(apply.get("warnings"), prune.get("warnings")),
        # phase all: its result stands for both phases, so its diff is listed once
        "diff": [d for d in (apply.get("diff"), None if phase_all else prune.get("diff")) if d],
        "seconds": round(seconds, 2), "lock_wait": round(lock_wait, 2),
    }


def _health(counts, unhealthy, health_waited):
    """``unhealthy`` (a wait found objects not healthy), ``healthy`` (the apply waited for the stack's objects,
    written or unchanged, and found them healthy) or ``not checked`` (no wait, or nothing to wait for)."""
    if unhealthy:
        return "unhealthy"
    checked = health_waited and any(counts.get(k) for k in ("created", "configured", "recreated", "unchanged"))
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
    if not source["prune"] and source["state"] == "present":
        return "disabled"
    return "done" if prune else "not run"
