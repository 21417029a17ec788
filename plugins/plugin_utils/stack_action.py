# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How the action plugins run the engine's modules, ``stacksync.k8s.stack`` and ``stacksync.k8s.stack_info``.

Each engine module (:data:`STACK`, :data:`STACK_INFO`: an :class:`EngineModule`) is run with its arguments
validated by its own spec, either in the controller's process, calling the engine (``module_utils/runner.py``,
``module_utils/info.py``) as a function, when the task would run on the controller with the same Python anyway
(:mod:`.execution`), or as a module process, as any module. :class:`ModuleRuns` holds that choice (made once per
task) and both ways to run; the ``stack`` and ``stack_info`` actions (:class:`StackAction`: validate, render ``src``,
run) and the ``sources`` action (one run per stack and phase, its manifests already rendered) use it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import sys
from collections.abc import Mapping

from ansible import constants as ansible_constants
from ansible.errors import AnsibleError
from ansible.executor.interpreter_discovery import discover_interpreter
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.common.parameters import remove_values
from ansible.module_utils.common.validation import check_type_bool
from ansible.plugins.action import ActionBase
from ansible.release import __version__ as CORE_VERSION
from ansible.utils.display import Display
from ansible.utils.vars import merge_hash
from ansible_collections.stacksync.k8s.plugins.module_utils.base.progress import Progress, interval_from_env, tee
from ansible_collections.stacksync.k8s.plugins.module_utils.base.vocabulary import spoken
from ansible_collections.stacksync.k8s.plugins.module_utils.common import credential_values, safe_params
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.gcpause import paused
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.prepare import Rendered
from ansible_collections.stacksync.k8s.plugins.module_utils.info import ARGUMENT_SPEC as INFO_SPEC
from ansible_collections.stacksync.k8s.plugins.module_utils.info import MUTUALLY_EXCLUSIVE as INFO_EXCLUSIVE
from ansible_collections.stacksync.k8s.plugins.module_utils.info import run_stack_info
from ansible_collections.stacksync.k8s.plugins.module_utils.runner import ARGUMENT_SPEC as STACK_SPEC
from ansible_collections.stacksync.k8s.plugins.module_utils.runner import MUTUALLY_EXCLUSIVE as STACK_EXCLUSIVE
from ansible_collections.stacksync.k8s.plugins.module_utils.runner import RunFailed, run_stack, start_prefetch
from ansible_collections.stacksync.k8s.plugins.plugin_utils import rendercache as rc
from ansible_collections.stacksync.k8s.plugins.plugin_utils.execution import (
    discovery_modes,
    effective_interpreter,
    interpreter_reason,
    task_reasons,
)

try:  # ansible-core >= 2.19: arguments may carry data tags; encode them as for a module
    from ansible.module_utils.common.json import Direction, get_module_encoder

    ARGS_ENCODER = get_module_encoder("legacy", Direction.CONTROLLER_TO_MODULE)
except ImportError:  # pragma: no cover - ansible-core < 2.19
    from ansible.parsing.ajson import AnsibleJSONEncoder as ARGS_ENCODER

display = Display()

DISCOVERED_FACT = "discovered_interpreter_python"


def args_json(value):
    """``value`` as compact JSON, as ansible-core encodes module arguments (:data:`ARGS_ENCODER`).

    The standard library's C encoder writes plain and tagged (subclassed) strings, numbers, lists and
    mappings the same way, 2-3 times faster (thousands of manifests); anything else (a vaulted value,
    a date, a set) goes through ansible-core's encoder.
    """
    try:
        return json.dumps(value, separators=(",", ":"))
    except (TypeError, ValueError):
        return json.dumps(value, cls=ARGS_ENCODER, separators=(",", ":"))


def plain_params(params):
    """The parameters but the manifests (``resources``, ``src``, ``render``) as plain values, as a module gets them;
    of ``other_sources``, each entry but its ``objects`` (:func:`plain_other_sources`)."""
    out = json.loads(args_json(dict((k, v) for k, v in params.items()
                                    if k not in ("resources", "src", "render", "other_sources"))))
    if "other_sources" in params:
        out["other_sources"] = plain_other_sources(params["other_sources"])
    return out


def plain_other_sources(entries):
    """``other_sources`` as plain values, but each entry's ``objects`` as it is: the sources action builds them of the
    manifests' own strings, once per source, and hands the same list to every run (the engine parses each once,
    :mod:`.run_sources`): thousands of ``[apiVersion, kind, namespace, name]`` per source, not copied per run."""
    if not isinstance(entries, list):
        return json.loads(args_json(entries))
    out = []
    for entry in entries:
        if isinstance(entry, dict) and isinstance(entry.get("objects"), list):
            plain = json.loads(args_json(dict((k, v) for k, v in entry.items() if k != "objects")))
            plain["objects"] = entry["objects"]
            out.append(plain)
        else:
            out.append(json.loads(args_json(entry)))
    return out


def validation_message(validated, module):
    """The message AnsibleModule ``module`` would fail with for a failed validation, or None."""
    if not validated.error_messages:
        return None
    msg = validated.errors.msg
    if type(validated.errors.errors[0]).__name__ == "UnsupportedError":
        msg = "Unsupported parameters for (%s) module: %s" % (module, msg)
    return msg


#: list-of-mappings options that can hold thousands of entries: ``resources`` (the manifests) and ``other_sources``
#: (what a sources run's other sources declare)
BULK_OPTIONS = ("resources", "other_sources")


def validate_args(args, argument_spec, mutually_exclusive=None):
    """The arguments validated with a module's spec, as ``ArgumentSpecValidator.validate`` would.

    The validator deep-copies every parameter; the thousands of entries of :data:`BULK_OPTIONS` that are already
    mappings (what they must hold) are validated as an empty list and then put back as they are.
    """
    bulk = dict((name, args[name]) for name in BULK_OPTIONS if name in argument_spec and isinstance(args.get(name), list)
                and args[name] and all(isinstance(r, dict) for r in args[name]))
    validator = ArgumentSpecValidator(argument_spec, mutually_exclusive=mutually_exclusive)
    validated = validator.validate(dict(args, **dict((name, []) for name in bulk)) if bulk else args)
    if bulk and not validated.error_messages:
        validated.validated_parameters.update(bulk)
    return validated


def run_in_process(runner, params, validated, argument_spec, rendered=False):
    """A module's result computed in this process: same checks, warnings, invocation and no_log masking.

    :param runner: ``runner(params, warn)``, the module's run (its return values; raises :class:`.runner.RunFailed`).
    :param params: the validated parameters (``src`` already rendered into ``resources``).
    :param validated: the ``ValidationResult`` they come from (alias warnings, no_log values).
    :param argument_spec: the module's spec (the invocation lists ``resources`` by identity, as the module does).
    :param rendered: ``resources`` were rendered from ``src`` by this task (or by the ``stacksync.k8s.sources`` task
        that runs it): plain values already (the render gives only JSON values, never tagged ones), the task's own,
        so not copied again.
    """
    # plain values, as a module process would receive them (ansible-core 2.19 tags templated values)
    if rendered:
        resources = params.get("resources")
        params = plain_params(params)
        params["resources"] = resources
    else:
        params = json.loads(args_json(params))
    warnings = ["Both option %s and its alias %s are set." % (w["option"], w["alias"])
                for w in getattr(validated, "_warnings", [])]
    no_log_values = set(getattr(validated, "_no_log_values", set())) | credential_values(params)
    try:
        result = runner(params, warnings.append)
    except RunFailed as e:
        result = dict(e.result, failed=True, msg=e.msg)
    result.setdefault("changed", False)
    result["invocation"] = {"module_args": safe_params(params, argument_spec)}
    if warnings:
        result["warnings"] = warnings
    # remove_values copies the whole result (thousands of entries) even with nothing to mask
    return remove_values(result, no_log_values) if no_log_values else result


def render_terms(terms, variables, loader, templar, **options):
    """:func:`.rendering.render_terms`, its code imported on the first render: a run that reads a kept render (and
    every run of ``resources``) loads none of the render's code (ansible-core compiles a collection's Python from
    source in every run)."""
    from ansible_collections.stacksync.k8s.plugins.plugin_utils.rendering import render_terms as render

    return render(terms, variables, loader, templar, **options)


def kept_rendered(manifests, directory, key):
    """:class:`.prepare.Rendered` of ``manifests`` read from the render ``key`` kept in ``directory``, with the
    checksums kept beside it, kept again by :meth:`~.prepare.Rendered.keep` when the run adds some. Only a render read
    from where it is kept has them: its manifests are the key's, whatever the files became since."""
    return Rendered(manifests, rc.kept_checksums(directory, key),
                    keep=lambda checksums: rc.keep_checksums(directory, key, checksums))


# -- the engine's modules, as an action runs them ------------------------------------------------------------------

class EngineModule:
    """One of the engine's modules as an action runs it: its name and argument spec, its run in this process
    (:meth:`runner`), what it may read ahead (:meth:`prefetch`) and its module process's arguments (:meth:`module_args`)."""

    name = None
    argument_spec = None
    mutually_exclusive = None

    def validate(self, args):
        """``(validated, error)``: ``args`` validated with the module's spec, and the message the module would fail
        with (None if they are valid)."""
        validated = validate_args(args, self.argument_spec, self.mutually_exclusive)
        return validated, validation_message(validated, self.name)

    def runner(self, task, prefetch=None, announce=None, shared=None, host=None):
        """``runner(params, warn)``: the module's run in this process (see :func:`run_in_process`) for ``task``
        (``shared``: the lists of the sources task the run is part of, :mod:`.shared_lists`; ``host``: the inventory
        host it runs for, named by its lines)."""
        raise NotImplementedError

    def prefetch(self, params):
        """What the run in this process may read ahead while ``src`` is rendered (an object with ``close()``), or None."""
        return None

    def module_args(self, action, args, params):
        """The module process's arguments (``args`` with ``src`` rendered into ``resources``)."""
        return args


def progress_prefix(host, stack):
    """What a progress line of ``stack``'s run for inventory host ``host`` starts with, as the sources action's lines
    start: ``stacksync [prod-eu] stack web: ``."""
    return "stacksync [%s] stack %s: " % (host or "localhost", stack)


class StackModule(EngineModule):
    """``stacksync.k8s.stack``: :func:`.runner.run_stack`."""

    name = "stacksync.k8s.stack"
    argument_spec = STACK_SPEC
    mutually_exclusive = STACK_EXCLUSIVE
    #: the manifests of a module process, next to the module in the task's remote temporary directory
    RESOURCES_FILE = "stacksync-resources.json"

    def runner(self, task, prefetch=None, announce=None, shared=None, host=None):
        def run(params, warn):
            # told of the run's progress: ``announce`` (the sources action's lines: its start line comes first), and
            # ``-v`` lines, named as the sources action names its lines (several hosts may sync a stack of one name)
            progress = tee(announce, Progress(display.v, interval_from_env(os.environ),
                                              prefix=progress_prefix(host, params["name"])))
            return run_stack(params, check_mode=bool(task.check_mode), diff=bool(task.diff), warn=warn,
                             verbosity=display.verbosity, progress=progress, prefetch=prefetch, shared=shared)
        return run

    def prefetch(self, params):
        """The engine's first reads (discovery, record, lists of the recorded kinds), started before ``src`` is
        rendered (``module_utils/engine/prefetch.py``); the connection options as the run gets them."""
        return start_prefetch(plain_params(params))

    def module_args(self, action, args, params):
        """The module process's arguments: the manifests go in a file next to the module, not in its arguments.

        The file is written to the task's remote temporary directory (private to the connection user,
        made readable to a ``become`` user like the module itself, removed with it after the run).
        Ansible would otherwise encode the manifests into the module's payload and the module would
        decode, copy and validate them again (a fifth of a second at 1,000 objects).
        """
        resources = params.get("resources")
        if not resources or params.get("state") == "absent":
            return args
        # pylint: disable=protected-access
        tmpdir = action._connection._shell.tmpdir or action._make_tmp_path()
        path = action._connection._shell.join_path(tmpdir, self.RESOURCES_FILE)
        action._transfer_data(path, args_json(resources))
        action._fixup_perms2((path,), execute=False)
        args = dict(args, resources_file=path)
        args.pop("resources", None)
        return args


class StackInfoModule(EngineModule):
    """``stacksync.k8s.stack_info``: :func:`.info.run_stack_info`."""

    name = "stacksync.k8s.stack_info"
    argument_spec = INFO_SPEC
    mutually_exclusive = INFO_EXCLUSIVE

    def runner(self, task, prefetch=None, announce=None, shared=None, host=None):
        return lambda params, warn: run_stack_info(params, warn=warn)  # reads only


STACK = StackModule()
STACK_INFO = StackInfoModule()


# -- where and how one task runs them ----------------------------------------------------------------------------

class ModuleRuns:
    """The runs of the engine's modules by one task of an action plugin (``action``, an ``ActionBase``).

    Where they run is decided once for the task (:meth:`module_process_reasons`): in this process, calling the
    engine as a function, or as module processes through the action's connection, as any module.
    """

    def __init__(self, action, task_vars):
        self._action = action
        self._task_vars = task_vars
        self._reasons = None

    def module_process_reasons(self):
        """Why the task's modules must run as module processes (empty: in this process); raises TypeError for a
        ``stacksync_in_process`` that is not a boolean."""
        if self._reasons is None:
            self._reasons = module_process_reasons(self._action, self._task_vars)
        return self._reasons

    def run(self, module, args, params, validated, rendered=False, prefetch=None, announce=None, vocabulary=None,
            shared=None):
        """The result of ``module``'s run of validated ``params`` (``args`` as given, ``src`` rendered).

        :param rendered: ``resources`` were rendered by this task: plain values, its own (:func:`run_in_process`).
        :param prefetch: the reads ahead of :meth:`EngineModule.prefetch` (this process only; the run closes it).
        :param announce: ``announce(verb, done, total)``, told of the run's progress (this process only).
        :param vocabulary: the names of the options in the caller's words (:func:`.vocabulary.spoken`; this process
            only: a module process speaks the module's).
        :param shared: the lists of the sources task (:class:`.shared_lists.SharedLists`; this process only).
        """
        action = self._action
        host = action._play_context.remote_addr  # pylint: disable=protected-access
        if self.module_process_reasons():
            display.vvv("%s: running as a module process (%s)" % (module.name, "; ".join(self._reasons)), host=host)
            return self._module_process(module, args, params)
        display.vvv("%s: running in the controller's process" % module.name, host=host)
        with paused(), spoken(vocabulary):  # thousands of manifests: see module_utils/engine/gcpause.py
            result = run_in_process(module.runner(action._task, prefetch, announce, shared,
                                                  host=self._task_vars.get("inventory_hostname", host)),
                                    params, validated, module.argument_spec, rendered=rendered)
        # pylint: disable-next=protected-access
        if action._discovered_interpreter_key:  # discovery ran here: the fact goes back, as after a module run
            # pylint: disable-next=protected-access
            result.setdefault("ansible_facts", {})[action._discovered_interpreter_key] = action._discovered_interpreter
        return result

    def _module_process(self, module, args, params):
        action = self._action
        # pylint: disable=protected-access
        wrap_async = action._task.async_val and not action._connection.has_native_async
        try:
            return with_module_stderr(action._execute_module(
                module_name=module.name, module_args=module.module_args(action, args, params), task_vars=self._task_vars,
                wrap_async=wrap_async))
        finally:
            if not wrap_async:  # an async task's wrapper removes the directory when the module is done
                action._remove_tmp_path(action._connection._shell.tmpdir)


def with_module_stderr(result, lines=3, limit=500):
    """``result`` of a module process, its ``msg`` followed by the first line and the last ``lines`` - 1 of the
    process's standard error (a shell or a shim says what failed first, a traceback last)
    when the process gave no result (ansible-core's "Module result deserialization failed" / "MODULE FAILURE": an
    interpreter that does not start, a crash), which ansible-core shows only with ``-vvv``: the cause in the task's
    message, as a plain module's failure shows it."""
    stderr = result.get("module_stderr") if isinstance(result, dict) and result.get("failed") else None
    if not isinstance(stderr, str) or not stderr.strip():
        return result
    said = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
    if len(said) > lines:
        said = [said[0], "...", *said[-(lines - 1):]]
    tail = " / ".join(said)
    if len(tail) > limit:
        tail = "..." + tail[-limit:]
    msg = str(result.get("msg") or "the module process failed")
    if tail not in msg:
        result = dict(result, msg="%s (the module process said: %s)" % (msg.rstrip(". "), tail))
    return result


def module_process_reasons(action, task_vars):
    """Why ``action``'s task must run the engine's modules as module processes; empty: in the controller's process.

    The task's own reasons (:func:`.execution.task_reasons`), else the interpreter's: a module process would run
    under the interpreter ansible-core resolves for the host (:func:`effective_interpreter_of`), which must be the
    controller's own Python. Raises TypeError for a ``stacksync_in_process`` that is not a boolean.
    """
    # pylint: disable=protected-access
    enabled = task_vars.get("stacksync_in_process", True)
    if isinstance(enabled, str):
        enabled = action._templar.template(enabled)
    task = action._task
    reasons = task_reasons(
        getattr(action._connection, "transport", None), become=action._play_context.become,
        async_val=task.async_val, delegate_to=task.delegate_to, environment=task.environment,
        enabled=check_type_bool(enabled))
    if reasons:  # the module process resolves (and if need be discovers) its interpreter itself
        return reasons
    interpreter, how = effective_interpreter_of(action, task_vars)
    reason = interpreter_reason(interpreter, sys.executable, how)
    return [reason] if reason else []


def effective_interpreter_of(action, task_vars):
    """The Python a module process of ``action``'s task would run under (``(path, how it was set)``), as
    ansible-core resolves it; runs interpreter discovery, as a module run would, when it is needed and has not run
    for the host yet (the fact goes back with the run's result)."""
    # pylint: disable=protected-access
    configured, origin = ansible_constants.config.get_config_value_and_origin("INTERPRETER_PYTHON", variables=task_vars)
    if isinstance(configured, str):
        configured = action._templar.template(configured)
    facts = task_vars.get("ansible_facts") or {}
    interpreter, how = effective_interpreter(
        configured, origin, discovered=facts.get(DISCOVERED_FACT),
        remote_is_local=bool(getattr(action._connection, "_remote_is_local", False)),
        playbook_python=task_vars.get("ansible_playbook_python"), modes=discovery_modes(CORE_VERSION))
    if interpreter is None:
        mode = (configured or "auto").strip() or "auto"
        interpreter = discover_interpreter(action=action, interpreter_name="python", discovery_mode=mode,
                                           task_vars=task_vars)
        # as ActionBase._configure_module does: the module process (if any) uses it, and the fact goes back
        task_vars.setdefault("ansible_facts", {})[DISCOVERED_FACT] = interpreter
        action._discovered_interpreter_key = DISCOVERED_FACT
        action._discovered_interpreter = interpreter
    return interpreter, how


# -- the stack and stack_info tasks --------------------------------------------------------------------------------

class StackAction(ActionBase):
    """A ``stack`` or ``stack_info`` task (:meth:`run`): validate, render ``src``, then run :attr:`ENGINE` (an
    :class:`EngineModule`) in this process or as a module process (:class:`ModuleRuns`)."""

    ENGINE = None

    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = True  # as a module process

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars if task_vars is not None else {}
        result = super(StackAction, self).run(tmp, task_vars)
        del tmp
        with paused():  # the task's worker process builds and reads thousands of manifests (gcpause.py)
            return self._run(result, task_vars)

    def _run(self, result, task_vars):
        args = dict(self._task.args)
        if isinstance(args.get("resources"), Mapping):
            # one manifest: what lookup() without wantlist=True gives for a tree of one (ansible-core unwraps a list
            # of one), taken as the list of one it stands for, as kubernetes.core.k8s takes its definition
            args["resources"] = [args["resources"]]
        validated, error = self.ENGINE.validate(args)
        if error:
            result.update(failed=True, msg=error)
            return result
        params = validated.validated_parameters
        runs = ModuleRuns(self, task_vars)
        try:
            in_process = not runs.module_process_reasons()
        except TypeError as e:
            result.update(failed=True, msg="stacksync_in_process: %s" % e)
            return result
        prefetch = self.ENGINE.prefetch(params) if in_process else None  # reads ahead while src is rendered
        try:
            try:
                rendered = self._render_src(args, params, task_vars)
            except AnsibleError as e:
                result.update(failed=True, msg=str(e))
                return result
            return merge_hash(result, runs.run(self.ENGINE, args, params, validated, rendered=rendered,
                                               prefetch=prefetch))
        finally:
            if prefetch is not None:  # the run closes it too
                prefetch.close()
            resources = params.get("resources")
            if isinstance(resources, Rendered):  # what the run's prepare found, for the next
                resources.keep()

    def _render_src(self, args, params, task_vars):
        """Replace ``src`` (and ``render``) of ``args`` and ``params`` with the manifests it renders to, if given;
        whether it did."""
        if params.get("src") is None:
            return False
        options = params.get("render") or {}

        def render():
            return render_terms([params["src"]], task_vars, self._loader, self._templar, **options)

        resources = self._kept_render(params, options, render)  # checked by the render
        params["resources"] = resources
        for name in ("src", "render"):
            args.pop(name, None)
            params.pop(name, None)
        args["resources"] = resources
        return True

    def _kept_render(self, params, options, render):
        """:class:`.prepare.Rendered`: ``render()``, or the render of ``src`` kept while its files stay the same
        (:func:`.rendercache.content_key`, in the discovery cache directory, with the stat of the files it read; none
        kept without one) with the checksums kept beside it (:func:`.rendercache.kept_checksums`)."""
        path = self._loader.path_dwim(str(params["src"]))  # as the render finds it
        identity = [str(params["src"]), options]
        directory = rc.kept_dir(params["discovery_cache_dir"], path) if params.get("discovery_cache_dir") else None

        def key():  # the files' bytes are read again only when a file's stat changed
            return rc.content_key(path, identity, memo_dir=directory)

        first = key() if directory else None
        if first is None:
            return Rendered(render())
        resources, kept = rc.rendered_once(directory, first, lambda: True, render, still=lambda: key() == first)
        if not kept:
            return Rendered(resources)
        display.vv("src %s: read from the render kept for its files" % params["src"], host=self._play_context.remote_addr)
        return kept_rendered(resources, directory, first)
