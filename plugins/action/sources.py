# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of ``stacksync.k8s.sources``: fetch, render, apply every stack, then prune every stack.

The I/O is here (git checkouts, the manifests lookup, ``stacksync.k8s.stack`` runs, the lines printed);
what to run in which order and how results read is in ``plugin_utils/sources.py``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible.errors import AnsibleError
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.plugins.action import ActionBase
from ansible.plugins.loader import lookup_loader
from ansible.utils.display import Display
from ansible_collections.stacksync.k8s.plugins.module_utils import vocabulary
from ansible_collections.stacksync.k8s.plugins.module_utils.sources_spec import ARGUMENT_SPEC
from ansible_collections.stacksync.k8s.plugins.plugin_utils import sources as sp
from ansible_collections.stacksync.k8s.plugins.plugin_utils import summary as report
from ansible_collections.stacksync.k8s.plugins.plugin_utils.checkout import CheckoutError, checkout, run_token

display = Display()

STACK = "stacksync.k8s.stack"
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
            result.update(failed=True, msg="stacksync.k8s.sources: %s" % validated.errors.msg, stacksync_results=[])
            return result
        params = validated.validated_parameters
        self._host = task_vars.get("inventory_hostname", "localhost")
        try:
            sources = sp.order(sp.resolve(params["sources"], dict(
                version=params["version"], path=params["path"], prune=params["prune"])))
        except sp.SourceError as e:
            result.update(failed=True, msg=str(e), stacksync_results=[])
            return result
        # who calls (the task variable role stacksync.k8s.sync sets): messages name the options in its words
        caller = self._templar.template(task_vars.get(vocabulary.CALLER_VAR))
        self._caller = caller if caller in vocabulary.CALLERS else "module"
        self._sources = dict((s["stack"], s) for s in sources)
        entries = self._sync([self._prepare(s, params, task_vars) for s in sources], params, task_vars)
        if params["summary"]:
            display.display("\n".join(report.summary_lines(self._host, entries, bool(self._task.check_mode))))
        return self._result(result, entries)

    def _result(self, result, entries):
        """The task's result: ``stacksync_results`` as a fact (a task that fails sets no facts, so the result
        holds them too: role ``stacksync.k8s.sync`` sets the fact from it whatever happened), the stats, the
        warnings and diffs of every stack; failed, with the error as its message, if a stack failed."""
        warnings = ["stack %s: %s" % (e["stack"], report.own_words(e["stack"], w)) for e in entries
                    for w in e["warnings"]]
        if warnings:
            result["warnings"] = warnings
        diffs = [d for e in entries for ds in e.pop("diff") for d in (ds if isinstance(ds, list) else [ds])]
        if diffs:
            result["diff"] = diffs
        result.update(
            changed=any(e["changed"] for e in entries),
            stacks=[e["stack"] for e in entries],
            ansible_facts={"stacksync_results": entries},
            ansible_stats={"data": {"stacksync": {self._host: report.stats(entries)}}, "per_host": False,
                           "aggregate": True},
        )
        failed = [e["stack"] for e in entries if e["failed"]]
        if failed:
            # the message is the error; a failed task's facts and stats are dropped by Ansible, and Ansible prints
            # its whole result: the objects left unchanged are not listed there (thousands, for a large stack)
            del result["ansible_facts"], result["ansible_stats"]
            result.update(failed=True, failed_stacks=failed, msg=report.failure_message(entries),
                          stacksync_results=[report.written_only(e) for e in entries])
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
        try:
            co = checkout(source["repo"], source["version"], params["cache_dir"],
                          token="%s/%s" % (run_token(), self._task._uuid))
        except CheckoutError as e:
            return source, "", None, str(e)
        root = co["dir"]
        src = root if source["path"] == "." else "%s/%s" % (root, source["path"])
        lookup = lookup_loader.get(LOOKUP, loader=self._loader, templar=self._templar)
        try:
            resources = lookup.run([src], variables=task_vars, root=root, include=source["include"] or None,
                                   exclude=source["exclude"] or None, template_vars=source["vars"] or None)
        except AnsibleError as e:
            return source, co["commit"], None, str(e)
        display.vv("stacksync [%s] stack %s: %s commit %s, %d objects rendered in %.1f s"
                   % (self._host, source["stack"], "fetched" if co["fetched"] else "reused", co["commit"][:12],
                      len(resources), time.monotonic() - started))
        return source, co["commit"], resources, None

    def _run_stack(self, args, task_vars, announce=None):
        """The result of a ``stacksync.k8s.stack`` run of ``args``; ``announce(verb, done, total)`` is told of its
        progress as it writes (the first call prints the line that says what it is writing)."""
        source = self._sources[args["name"]]
        names = vocabulary.stack_names(self._caller, source["index"], args, source["given"])
        task = self._task.copy(exclude_parent=False, exclude_tasks=True)
        task.args = args
        action = self._shared_loader_obj.action_loader.get(
            STACK, task=task, connection=self._connection, play_context=self._play_context, loader=self._loader,
            templar=self._templar, shared_loader_obj=self._shared_loader_obj)
        action.stacksync_progress = announce
        action.stacksync_vocabulary = names  # in the controller's process; a module process speaks the module's
        return action.run(task_vars=task_vars)

    def _say(self, stack, text):
        if text:
            display.display("stacksync [%s] stack %s: %s" % (self._host, stack, text))

    def _announcer(self, source, commit, resources, then_wait):
        """``announce(verb, done, total)`` for :meth:`_run_stack`: the first call says what the run writes."""
        said = []
        origin = "%s%s @ %s" % (source["repo_label"], "" if source["path"] == "." else " " + source["path"],
                                commit[:12])

        def announce(verb, done, total):
            if not said:
                said.append(verb)
                self._say(source["stack"], report.start_line(verb, done, total, len(resources or []), origin,
                                                             then_wait))
        return announce

    # -- the sync: apply every stack (in dependency order), then prune every stack (in reverse) ------

    def _sync(self, prepared, params, task_vars):
        present = [p for p in prepared if p[0]["state"] == "present"]
        one_run = len(prepared) == 1 and bool(present) and present[0][0]["prune"]
        waited = sp.dependents([p[0] for p in prepared])
        applied, failed, seconds = {}, set(), {}
        for source, commit, resources, error in present:
            blocked = sp.blocked_by(source, failed)
            if error:
                failed.add(source["stack"])
                self._say(source["stack"], "FAILED: %s" % report.one_line(error))
                continue
            if blocked:
                failed.add(source["stack"])
                self._say(source["stack"], "not applied: it depends on %s, which failed" % ", ".join(blocked))
                continue
            started = time.monotonic()
            args = sp.stack_args(source, commit, resources, params, "all" if one_run else "apply",
                                 wait=source["stack"] in waited)
            res = self._run_stack(args, task_vars, self._announcer(source, commit, resources, args.get("wait")))
            seconds[source["stack"]] = time.monotonic() - started
            applied[source["stack"]] = res
            if res.get("failed"):
                failed.add(source["stack"])
            self._say(source["stack"], report.outcome_line(source["stack"], res, seconds[source["stack"]],
                                                           "all" if one_run else "apply", self._task.check_mode))
        pruned = {}
        if not failed and not one_run:
            for source, commit, resources, _error in reversed(prepared):
                if source["state"] == "present" and not source["prune"]:
                    continue
                started = time.monotonic()
                res = self._run_stack(sp.stack_args(source, commit, resources, params, "prune"), task_vars,
                                      self._announcer(source, commit, resources, False))
                took = time.monotonic() - started
                seconds[source["stack"]] = seconds.get(source["stack"], 0.0) + took
                pruned[source["stack"]] = res
                self._say(source["stack"], report.outcome_line(
                    source["stack"], res, took, "prune" if source["state"] == "present" else "delete",
                    self._task.check_mode))
        return [sp.stack_entry(s, commit, len(resources or []), applied.get(s["stack"]), pruned.get(s["stack"]),
                               one_run=one_run, seconds=seconds.get(s["stack"], 0.0),
                               blocked=sp.blocked_by(s, failed) if s["stack"] not in applied else None, error=error,
                               waited=bool(params.get("wait")) or s["stack"] in waited)
                for s, commit, resources, error in prepared]
