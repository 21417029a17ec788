# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of ``stacksync.k8s.sources``: fetch, render, apply every stack, then prune every stack.

The I/O is here (git checkouts, the manifests lookup, ``stacksync.k8s.stack`` runs, the lines printed);
what to run in which order and how results read is in ``plugin_utils/sources.py``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import time

from ansible.errors import AnsibleError
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.plugins.action import ActionBase
from ansible.plugins.loader import lookup_loader
from ansible.utils.display import Display
from ansible_collections.stacksync.k8s.plugins.module_utils.info import ARGUMENT_SPEC as INFO_SPEC
from ansible_collections.stacksync.k8s.plugins.module_utils.sources_spec import ARGUMENT_SPEC
from ansible_collections.stacksync.k8s.plugins.plugin_utils import rename as rn
from ansible_collections.stacksync.k8s.plugins.plugin_utils import rendercache as rc
from ansible_collections.stacksync.k8s.plugins.plugin_utils import sources as sp
from ansible_collections.stacksync.k8s.plugins.plugin_utils.checkout import CheckoutError, checkout, run_token

display = Display()

STACK = "stacksync.k8s.stack"
INFO = "stacksync.k8s.stack_info"
LOOKUP = "stacksync.k8s.manifests"


class ActionModule(ActionBase):

    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars if task_vars is not None else {}
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        validated = ArgumentSpecValidator(ARGUMENT_SPEC).validate(self._task.args)
        if validated.error_messages:
            result.update(failed=True, msg="stacksync.k8s.sources: %s" % validated.errors.msg)
            return result
        params = validated.validated_parameters
        self._host = task_vars.get("inventory_hostname", "localhost")
        try:
            sources = sp.order(sp.resolve(params["sources"], dict(
                version=params["version"], path=params["path"], prune=params["prune"])))
        except sp.SourceError as e:
            result.update(failed=True, msg=str(e))
            return result
        entries = self._sync([self._prepare(s, params, task_vars) for s in sources], params, task_vars)
        if params["summary"]:
            display.display("\n".join(sp.summary_lines(self._host, entries, bool(self._task.check_mode))))
        result.update(
            changed=any(e["changed"] for e in entries),
            stacks=[e["stack"] for e in entries],
            ansible_facts={"stacksync_results": entries},
            ansible_stats={"data": {"stacksync": {self._host: sp.stats(entries)}}, "per_host": False,
                           "aggregate": True},
        )
        warnings = ["stack %s: %s" % (e["stack"], w) for e in entries for w in e["warnings"]]
        if warnings:
            result["warnings"] = warnings
        diffs = [d for e in entries for ds in e.pop("diff") for d in (ds if isinstance(ds, list) else [ds])]
        if diffs:
            result["diff"] = diffs
        failed = [e["stack"] for e in entries if e["failed"]]
        if failed:
            # the message is the error; the details are in the result (stacksync_results)
            result.update(failed=True, failed_stacks=failed, msg=sp.failure_message(entries))
        return result

    # -- the edges: git, rendering, stack runs ------------------------------------------------------

    def _prepare(self, source, params, task_vars):
        """``(source, commit, resources, error)``: the source checked out and rendered (nothing for state absent).

        A source that cannot be fetched or rendered fails alone: the stacks that do not depend on it are
        applied, nothing is pruned (as when an apply fails), and its error is the task's message.
        """
        if source["state"] == "absent":
            return source, "", None, None
        started = time.monotonic()
        # fetched once per run of this task for every host; a later task (another include of the role, a
        # second play) fetches again, so a play that commits and then syncs sees its commit
        token = "%s/%s" % (run_token(), self._task._uuid)
        try:
            co = checkout(source["repo"], source["version"], params["cache_dir"], token=token)
        except CheckoutError as e:
            return source, "", None, str(e)
        root = co["dir"]
        src = root if source["path"] == "." else "%s/%s" % (root, source["path"])
        lookup = lookup_loader.get(LOOKUP, loader=self._loader, templar=self._templar)
        options = dict(include=source["include"] or None, exclude=source["exclude"] or None,
                       template_vars=source["vars"] or None)

        def render():
            return lookup.run([src], variables=task_vars, root=root, **options)

        shared = False
        try:
            if len(task_vars.get("ansible_play_hosts_all") or ()) > 1:  # once for every host if it can (rendercache.py)
                resources, shared = rc.rendered_once(os.path.join(root, ".git"), token,
                                                     rc.cache_key(token, co["commit"], src, options),
                                                     lambda: rc.host_independent(src, root), render)
            else:
                resources = render()
        except AnsibleError as e:
            return source, co["commit"], None, str(e)
        display.vv("stacksync [%s] stack %s: %s commit %s, %d objects %s in %.1f s"
                   % (self._host, source["stack"], "fetched" if co["fetched"] else "reused", co["commit"][:12],
                      len(resources), "read from this run's render (host-independent)" if shared else "rendered",
                      time.monotonic() - started))
        return source, co["commit"], resources, None

    def _run_stack(self, args, task_vars, module=STACK):
        task = self._task.copy(exclude_parent=False, exclude_tasks=True)
        task.args = args
        action = self._shared_loader_obj.action_loader.get(
            module, task=task, connection=self._connection, play_context=self._play_context, loader=self._loader,
            templar=self._templar, shared_loader_obj=self._shared_loader_obj)
        action.rendered_by_caller = isinstance(args.get("resources"), list)  # rendered by _prepare: not copied again
        return action.run(task_vars=task_vars)

    # -- stacks named otherwise before 0.2.0: taken over once (plugin_utils/rename.py) -------------

    def _record(self, name, source, params, task_vars):
        """``(read, record)`` of stack ``name`` with ``source``'s connection (``stack_info``; ``{}``: no record)."""
        args = sp.stack_args(dict(source, stack=name, state="absent"), "", None, params, "prune")
        res = self._run_stack(dict((k, v) for k, v in args.items() if k in INFO_SPEC), task_vars, INFO)
        if res.get("failed"):
            self._say(source["stack"], "cannot read the record of stack %s, so the stack of this source's name before "
                                       "0.2.0 is not taken over: %s" % (name, res.get("msg")))
            return False, None
        return True, res.get("record") or {}

    def _take_overs(self, prepared, params, task_vars):
        """``{legacy name: [source]}``: the legacy stacks this run takes over (:func:`.rename.takes_over`)."""
        out = {}
        for legacy, sources in rn.renames([p[0] for p in prepared if not p[3]]).items():
            read, old = self._record(legacy, sources[0], params, task_vars)
            if not read or not old:
                continue
            news = [self._record(s["stack"], s, params, task_vars) for s in sources]
            if all(r and rn.takes_over(old, new) for r, new in news):
                out[legacy] = sources
        return out

    def _take_over(self, legacy, sources, params, task_vars, results):
        """Delete the legacy stack once its sources applied and pruned; its outcome goes to their results."""
        if any((results.get(s["stack"]) or {}).get("failed") for s in sources):
            return
        absent = None
        if not self._task.check_mode:  # a dry run would list as pruned what the new stack's real run relabels
            absent = self._run_stack(sp.stack_args(dict(sources[0], stack=legacy, state="absent"), "", None, params,
                                                   "prune"), task_vars)
            results[sources[0]["stack"]] = rn.renamed_result(results.get(sources[0]["stack"]), legacy, absent)
        for s in sources:
            self._say(s["stack"], rn.rename_line(legacy, absent, bool(self._task.check_mode)))

    def _say(self, stack, text):
        display.display("stacksync [%s] stack %s: %s" % (self._host, stack, text))

    # -- the sync: apply every stack (in dependency order), then prune every stack (in reverse) ------

    def _sync(self, prepared, params, task_vars):
        present = [p for p in prepared if p[0]["state"] == "present"]
        one_run = len(prepared) == 1 and bool(present) and present[0][0]["prune"]
        waited = sp.dependents([p[0] for p in prepared])
        take_overs = self._take_overs(prepared, params, task_vars)
        applied, failed, seconds = {}, set(), {}
        for source, commit, resources, error in present:
            blocked = sp.blocked_by(source, failed)
            if error:
                failed.add(source["stack"])
                self._say(source["stack"], "not applied: its source could not be fetched or rendered (the error is in "
                                           "the task's message)")
                continue
            if blocked:
                failed.add(source["stack"])
                self._say(source["stack"], "not applied: it depends on %s, which failed" % ", ".join(blocked))
                continue
            self._say(source["stack"], "applying %d objects from %s %s @ %s%s"
                      % (len(resources), source["repo_label"], source["path"], commit[:12],
                         ", then waiting until they are healthy" if source["stack"] in waited else ""))
            started = time.monotonic()
            args = sp.stack_args(source, commit, resources, params, "all" if one_run else "apply",
                                 wait=source["stack"] in waited)
            res = self._run_stack(args, task_vars)
            seconds[source["stack"]] = time.monotonic() - started
            applied[source["stack"]] = res
            if res.get("failed"):
                failed.add(source["stack"])
            self._say(source["stack"], self._outcome(res, seconds[source["stack"]], "all" if one_run else "apply"))
        pruned = {}
        if not failed and not one_run:
            for source, commit, resources, _error in reversed(prepared):
                if source["state"] == "present" and not source["prune"]:
                    continue
                started = time.monotonic()
                res = self._run_stack(sp.stack_args(source, commit, resources, params, "prune"), task_vars)
                took = time.monotonic() - started
                seconds[source["stack"]] = seconds.get(source["stack"], 0.0) + took
                pruned[source["stack"]] = res
                self._say(source["stack"], self._outcome(res, took, "prune" if source["state"] == "present" else "delete"))
        for legacy, sources in take_overs.items() if not failed else ():
            self._take_over(legacy, sources, params, task_vars, applied if one_run else pruned)
        return [sp.stack_entry(s, commit, len(resources or []), applied.get(s["stack"]), pruned.get(s["stack"]),
                               one_run=one_run, seconds=seconds.get(s["stack"], 0.0),
                               blocked=sp.blocked_by(s, failed) if s["stack"] not in applied else None, error=error)
                for s, commit, resources, error in prepared]

    @staticmethod
    def _outcome(res, seconds, phase):
        """The line printed when a stack's run ends (``phase``: apply, all, prune or delete)."""
        c = res.get("counts") or {}
        if res.get("failed"):
            return "FAILED after %.1f s (the error is in the task's message)" % seconds
        if phase in ("prune", "delete"):
            return "%s %d objects in %.1f s" % ("pruned" if phase == "prune" else "deleted", c.get("pruned", 0), seconds)
        parts = ["%s %d" % (k, c.get(k, 0)) for k in ("created", "configured", "unchanged")]
        if phase == "all":
            parts.append("pruned %d" % c.get("pruned", 0))
        parts.append("skipped %d" % len(res.get("skipped_objects") or []))
        return "%s in %.1f s" % (", ".join(parts), seconds)
