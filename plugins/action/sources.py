# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of ``stacksync.k8s.sources``: fetch, render, apply every stack, then prune what the prune gate lets.

The I/O is here (git checkouts, rendering, the engine's runs of each stack, the lines printed);
what to run in which order and how results read is in ``plugin_utils/sources.py``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import time

from ansible.errors import AnsibleError
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display
from ansible_collections.stacksync.k8s.plugins.plugin_utils import bytecode

bytecode.install()  # the collection's modules imported next are read from their __pycache__ (plugin_utils/bytecode.py)

from ansible_collections.stacksync.k8s.plugins.module_utils.base import vocabulary
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import approval as A
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.prepare import Rendered
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.shared_lists import SharedLists
from ansible_collections.stacksync.k8s.plugins.module_utils.runner import RunFailed, connection_key, write_plan
from ansible_collections.stacksync.k8s.plugins.module_utils.sources_spec import ARGUMENT_SPEC
from ansible_collections.stacksync.k8s.plugins.plugin_utils import plans
from ansible_collections.stacksync.k8s.plugins.plugin_utils import rename as rn
from ansible_collections.stacksync.k8s.plugins.plugin_utils import rendercache as rc
from ansible_collections.stacksync.k8s.plugins.plugin_utils import sources as sp
from ansible_collections.stacksync.k8s.plugins.plugin_utils import summary as report
from ansible_collections.stacksync.k8s.plugins.plugin_utils.caller import caller_ds
from ansible_collections.stacksync.k8s.plugins.plugin_utils.checkout import CheckoutError, checkout, run_token
from ansible_collections.stacksync.k8s.plugins.plugin_utils.stack_action import STACK, STACK_INFO, ModuleRuns, kept_rendered, plain_params, render_terms

display = Display()

#: the collection's directory as imported (a development checkout linked as a collection has another real path)
COLLECTION_ROOT = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def _reads_key(params):
    """What the reads ahead of a stack run of validated ``params`` read: its connection, stack, record namespace,
    discovery cache and concurrency (:func:`.runner.start_prefetch`)."""
    plain = plain_params(params)
    return (connection_key(plain), plain["name"], plain["record_namespace"], plain.get("discovery_cache_dir"),
            plain["concurrency"], plain["state"])


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False
    _shared = None  # the lists the task's stacks share (set by _run)
    _ahead = None  # the reads ahead of a single source's stack run, by stack (set by _run: _read_ahead)

    def run(self, tmp=None, task_vars=None):
        result = self._run(tmp, task_vars if task_vars is not None else {})
        if result.get("failed"):
            # ansible-core >= 2.19 shows a failed task's file and lines: the user's task that called the role,
            # not the role's own (plugin_utils/caller.py)
            ds = caller_ds(self._task, COLLECTION_ROOT)
            if ds is not None:
                self._task._ds = ds
        return result

    def _run(self, tmp, task_vars):
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
            self._approved = self._approved_plan(params["approved_plan"], task_vars)
        except (sp.SourceError, A.PlanError) as e:
            result.update(failed=True, msg=str(e), stacksync_results=[])
            return result
        # who calls (the task variable role stacksync.k8s.sync sets): messages name the options in its words
        caller = self._templar.template(task_vars.get(vocabulary.CALLER_VAR))
        self._caller = caller if caller in vocabulary.CALLERS else "module"
        self._sources = dict((s["stack"], s) for s in sources)
        self._emitting = bool(self._task.check_mode and (params["emit_plan"] or params["plan_file"]))
        self._notes = []
        self._runs = None  # where the stack runs go: decided at the first (plugin_utils/stack_action.py)
        # several stacks list each kind once for all of them (module_utils/engine/shared_lists.py)
        self._shared = SharedLists(s["stack"] for s in sources) if len(sources) > 1 else None
        self._ahead = self._read_ahead(sources, params, task_vars)
        prepared = []
        try:
            prepared.extend(self._prepare(s, params, task_vars) for s in sources)
            entries = self._sync(prepared, params, task_vars)
        finally:
            for _key, reads in self._ahead.values():  # a run that did not take them (its source failed)
                reads.close()
            for _source, _commit, resources, _error in prepared:
                if isinstance(resources, Rendered):  # what the stack runs' prepare found, for the next
                    resources.keep()
        if params["summary"]:
            display.display("\n".join(report.summary_lines(self._host, entries, bool(self._task.check_mode))))
        return self._result(result, entries, prepared, params)

    def _result(self, result, entries, prepared, params):
        """The task's result: ``stacksync_results`` as a fact (a task that fails sets no facts, so the result
        holds them too: role ``stacksync.k8s.sync`` sets the fact from it whatever happened), the stats, the
        warnings and diffs of every stack; failed, with the error as its message, if a stack failed."""
        warnings = self._notes + ["stack %s: %s" % (e["stack"], report.own_words(e["stack"], w)) for e in entries
                                  for w in e["warnings"]]
        if warnings:
            result["warnings"] = warnings
        diffs = [d for e in entries for ds in e.pop("diff") for d in (ds if isinstance(ds, list) else [ds])]
        if diffs:
            result["diff"] = diffs
        result.update(
            changed=any(e["changed"] for e in entries),
            stacks=[e["stack"] for e in entries],
            ansible_stats={"data": {"stacksync": {self._host: report.stats(entries)}}, "per_host": False,
                           "aggregate": True},
        )
        if self._caller == "module":
            result["ansible_facts"] = {"stacksync_results": entries}
        else:
            # role stacksync.k8s.sync sets the variable from this key (set_fact, as it must when the task fails): as a
            # fact too, ansible-core would copy the list again for every later task of the play (it cleans a host's
            # facts each time it gathers its variables), an entry per object written
            result["stacksync_results"] = entries
        if self._emitting:
            self._emit(result, prepared, params)
        if display.verbosity < 2:
            # -v is for the progress lines: the default callback prints no result of thousands of entries under them
            # (as gather_facts does for its facts); from -vv on it does. Registered, it holds them all. A failed task's
            # result is printed whatever the verbosity.
            result["_ansible_verbose_override"] = True
        failed = [e["stack"] for e in entries if e["failed"]]
        if failed:
            # the message is the error; a failed task's facts and stats are dropped by Ansible, which prints its whole
            # result (the entries list the objects written, not the thousands left unchanged)
            result.pop("ansible_facts", None)
            del result["ansible_stats"]
            result.update(failed=True, failed_stacks=failed, msg=report.failure_message(entries),
                          stacksync_results=entries)
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
        try:
            co = self._checkout(source, params)
        except CheckoutError as e:
            return source, "", None, str(e)
        root = co["dir"]
        src = root if source["path"] == "." else "%s/%s" % (root, source["path"])
        options = dict(include=source["include"] or None, exclude=source["exclude"] or None,
                       template_vars=source["vars"] or None, trusted=source["trusted"],
                       vault_id=source["vault_id"] or [], kustomize_remote=source["kustomize_remote"])

        def render():
            return render_terms([src], task_vars, self._loader, self._templar, root=root, **options)

        git_dir, key = os.path.join(root, ".git"), rc.cache_key(co["tree"], src, root, options)
        try:  # once for every host and run while its files stay the same, if it can (rendercache.py)
            resources, kept = rc.rendered_once(git_dir, key, lambda: rc.host_independent(src, root), render)
        except AnsibleError as e:
            return source, co["commit"], None, str(e)
        display.vv("stacksync [%s] stack %s: %s commit %s, %d objects %s in %.1f s"
                   % (self._host, source["stack"], "fetched" if co["fetched"] else "reused", co["commit"][:12],
                      len(resources), "read from the render kept for its files (host-independent)" if kept
                      else "rendered", time.monotonic() - started))
        # checked by the render; one read from where it is kept has the checksums kept beside it
        return source, co["commit"], kept_rendered(resources, git_dir, key) if kept else Rendered(resources), None

    def _checkout(self, source, params):
        """The checkout of ``source``: its version, or the approved plan's commit of its stack (reported if the
        version now resolves elsewhere). Fetched once per run of this task for every host; a later task (another
        include of the role, a second play) fetches again, so a play that commits and then syncs sees its commit."""
        token = "%s/%s" % (run_token(), self._task._uuid)
        co = checkout(source["repo"], source["version"], params["cache_dir"], token=token)
        commit = plans.pinned(self._approved, source["stack"])
        if commit and co["commit"] != commit:
            note = plans.moved_message(source["version"], co["commit"], commit)
            self._say(source["stack"], note)
            self._notes.append("stack %s: %s" % (source["stack"], note))
            co = checkout(source["repo"], commit, params["cache_dir"], token=token)
        return co

    # -- the run's plan: an approved one it is held to, or the one a check emits (plugin_utils/plans.py) -------------

    def _approved_plan(self, value, task_vars):
        """The host's part of the approved plan (:class:`.approval.Parsed`), or None; raises PlanError."""
        if value is None:
            return None
        value = plans.approved_value(value, self._host, dict(
            (k, self._templar.template(v)) for k, v in task_vars.items() if k == plans.artifact_key(self._host)))
        if isinstance(value, str):
            try:
                with open(os.path.expanduser(value), "rb") as f:
                    value = json.loads(f.read().decode("utf-8"))
            except (OSError, ValueError) as e:
                raise A.PlanError("approved_plan %s: %s" % (value, e)) from None
        parsed = None if value is None else A.parse(value, self._host)
        if parsed is not None:
            display.display("stacksync [%s] syncing the approved plan (%d stacks): its commits, and of what it would "
                            "delete only what the plan lists" % (self._host, len(parsed.stacks)))
        return parsed

    def _emit(self, result, prepared, params):
        """The host's plan of a check: returned, written to ``plan_file``, and the host's artifact (set_stats)."""
        plan = plans.host_plan(self._host, prepared, self._results["apply"], self._results["prune"],
                               sp.single_run(prepared))
        result["plan"] = plan
        result["ansible_stats"]["data"].update(plans.stats(self._host, plan))
        if params["plan_file"]:
            try:
                write_plan(params["plan_file"], plan)
            except RunFailed as e:
                result.update(failed=True, msg=e.msg)

    def _read_ahead(self, sources, params, task_vars):
        """The first reads (discovery, record, lists: :meth:`.stack_action.StackModule.prefetch`) of the stack run of
        a task's single source, started before the source is checked out and rendered, as the ``stack`` task starts
        them before its ``src`` is rendered, when the run is in this process: ``{stack: (what they read, reads)}``.
        Several sources list each kind once for all of them instead (:mod:`.shared_lists`)."""
        if len(sources) != 1 or sources[0]["state"] != "present":
            return {}
        source = sources[0]
        validated, error = STACK.validate(sp.stack_args(source, "", [], params, "all"))
        if error:
            return {}  # the run says why
        self._runs = ModuleRuns(self, task_vars)
        try:
            if self._runs.module_process_reasons():
                return {}
        except TypeError:
            return {}  # the run says why
        reads = STACK.prefetch(validated.validated_parameters)
        return {} if reads is None else {source["stack"]: (_reads_key(validated.validated_parameters), reads)}

    def _run_stack(self, args, task_vars, module=STACK, announce=None):
        """The result of a ``stacksync.k8s.stack`` (or ``module``, :data:`.stack_action.STACK_INFO`) run of ``args``:
        the engine called in this process, or the module run as a module process (:class:`.stack_action.ModuleRuns`,
        decided once for the task); ``announce(verb, done, total)`` is told of its progress as it writes (the first
        call prints the line that says what it is writing)."""
        source = self._sources.get(args["name"]) or {}  # a stack of an older name (rename.py) speaks as its source
        names = vocabulary.stack_names(self._caller, source.get("index"), args, source.get("given") or ())
        validated, error = module.validate(args)
        if error:
            return dict(failed=True, msg=error)
        if self._runs is None:
            self._runs = ModuleRuns(self, task_vars)
        try:
            self._runs.module_process_reasons()
        except TypeError as e:
            return dict(failed=True, msg="stacksync_in_process: %s" % e)
        key, reads = (self._ahead or {}).pop(args["name"], (None, None)) if module is STACK else (None, None)
        if reads is not None and key != _reads_key(validated.validated_parameters):
            reads.close()  # read for another run than this one: not taken (a taken one the run closes)
            reads = None
        # resources rendered by _prepare: plain values, this task's own, not copied again
        return self._runs.run(module, dict(args), validated.validated_parameters, validated,
                              rendered=isinstance(args.get("resources"), list), prefetch=reads, announce=announce,
                              vocabulary=names, shared=self._shared)

    # -- stacks named otherwise before 0.2.0: taken over once (plugin_utils/rename.py) -------------

    def _record(self, name, source, params, task_vars):
        """``(record or None, error message or None)`` of stack ``name`` with ``source``'s connection (``stack_info``;
        ``{}``: no record)."""
        args = sp.stack_args(dict(source, stack=name, state="absent"), "", None, params, "prune")
        res = self._run_stack(dict((k, v) for k, v in args.items() if k in STACK_INFO.argument_spec), task_vars,
                              STACK_INFO)
        if res.get("failed"):
            return None, res.get("msg") or "failed"
        return res.get("record") or {}, None

    def _take_overs(self, prepared, params, task_vars):
        """``({legacy name: [source]}, {stack: (line, unreachable, seconds)})``: the legacy stacks this run takes over
        (:func:`.rename.takes_over`), and why the legacy stack of a source could not be looked up: the line said if the
        source's own run does not fail (the same connection fails it, with its own message), the error if it is that
        the cluster could not be reached (else None), and the seconds it took."""
        out, unread = {}, {}
        if self._approved is not None:  # the plan lists no deletion of a legacy stack: its take-over waits
            return out, unread
        for legacy, sources in rn.renames([p[0] for p in prepared if not p[3]]).items():
            started = time.monotonic()
            old, error = self._record(legacy, sources[0], params, task_vars)
            if error is not None:
                unreachable = error if error.startswith("cannot reach ") else None
                for s in sources:
                    unread[s["stack"]] = (rn.unread_line(legacy, error), unreachable, time.monotonic() - started)
                continue
            if not old:
                continue
            news = [self._record(s["stack"], s, params, task_vars) for s in sources]
            if all(error is None and rn.takes_over(old, new) for new, error in news):
                out[legacy] = sources
        return out, unread

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
        # the run's own lines (waiting for the stack's lock), as they happen
        announce.note = lambda text: self._say(source["stack"], report.own_words(source["stack"], text))
        return announce

    # -- the sync: the steps of plugin_utils/sources.next_step (apply in order, then prune in reverse) -------------

    def _sync(self, prepared, params, task_vars):
        depended_on = sp.dependents([p[0] for p in prepared])
        take_overs, unread = self._take_overs(prepared, params, task_vars)
        for i, (source, commit, resources, error) in enumerate(prepared):
            _line, unreachable, _seconds = unread.get(source["stack"], (None, None, 0.0))
            if unreachable and not error:  # its cluster could not be reached: its run would try as long again
                prepared[i] = (source, commit, resources, unreachable)
        declarations = dict((s["stack"], sp.declared(r)) for s, _c, r, e in prepared if s["state"] == "present" and not e)
        done, results, seconds, others_of, lock_waits = {}, {"apply": {}, "prune": {}}, {}, {}, {}
        step = sp.next_step(prepared, done)
        while step is not None:
            stack = step.source["stack"]
            if step.phase is None:  # not run: a stack not applied says why; a prune the gate holds back is silent
                done.setdefault(stack, {})[step.stage] = sp.FAILED if step.stage == "apply" else sp.NOT_RUN
                if step.stage == "apply":
                    self._say(stack, step.message)
                step = sp.next_step(prepared, done)
                continue
            started = time.monotonic()
            if stack not in others_of:  # the same for its apply and its prune: made once
                others_of[stack] = sp.other_sources(prepared, step.source, params, declarations)
            others = others_of[stack]
            wait = step.stage == "apply" and stack in depended_on
            args = sp.stack_args(step.source, step.commit, step.resources, params, step.phase, wait=wait, others=others)
            then_wait = step.stage == "apply" and bool(args.get("wait")) and not self._task.check_mode
            res = self._run_stack(dict(args, **plans.stack_plan_args(self._approved, stack, self._emitting)),
                                  task_vars, announce=self._announcer(step.source, step.commit, step.resources, then_wait))
            # the wait for another run's lock is told apart from the run's own time
            lock_wait = min(float(res.get("lock_wait") or 0.0), time.monotonic() - started)
            took = time.monotonic() - started - lock_wait
            lock_waits[stack] = lock_waits.get(stack, 0.0) + lock_wait
            if stack in unread and stack not in seconds:  # its connection was tried first then
                took += unread[stack][2]
            seconds[stack] = seconds.get(stack, 0.0) + took
            results[step.stage][stack] = res
            done.setdefault(stack, {})[step.stage] = sp.FAILED if res.get("failed") else sp.DONE
            self._say(stack, report.outcome_line(stack, res, took, step.phase, self._task.check_mode))
            if not res.get("failed") and step.stage == "apply" and stack in unread:
                self._say(stack, unread[stack][0])
            step = sp.next_step(prepared, done)
        self._results = results
        phase_all = sp.single_run(prepared)
        failed = set(s for s, stages in done.items() if stages.get("apply") == sp.FAILED)
        for legacy, sources in take_overs.items() if not failed else ():
            self._take_over(legacy, sources, params, task_vars, results["apply"] if phase_all else results["prune"])
        return [sp.stack_entry(s, commit, len(resources or []), results["apply"].get(s["stack"]),
                               results["prune"].get(s["stack"]), phase_all=phase_all,
                               seconds=seconds.get(s["stack"], unread.get(s["stack"], (None, None, 0.0))[2]),
                               lock_wait=lock_waits.get(s["stack"], 0.0),
                               blocked=sp.blocked_by(s, failed) if s["stack"] not in results["apply"] else None,
                               error=error, health_waited=(bool(params.get("wait")) or s["stack"] in depended_on)
                               and not self._task.check_mode)
                for s, commit, resources, error in prepared]
