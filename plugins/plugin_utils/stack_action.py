# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the action plugins of ``stacksync.k8s.stack`` and ``stacksync.k8s.stack_info`` share.

Both validate their arguments with their module's spec, render ``src`` on the controller with the
``stacksync.k8s.manifests`` lookup, and then run their module either in the controller's process
(when it would run on the controller with the same Python anyway, :mod:`.execution`) or as a module
process. :class:`StackAction` holds those steps and the whole task as ``run``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import sys

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
from ansible_collections.stacksync.k8s.plugins.module_utils.common import credential_values, safe_params
from ansible_collections.stacksync.k8s.plugins.module_utils.runner import RunFailed
from ansible_collections.stacksync.k8s.plugins.plugin_utils.execution import (
    discovery_modes,
    effective_interpreter,
    interpreter_reason,
    task_reasons,
)
from ansible_collections.stacksync.k8s.plugins.plugin_utils.rendering import render_terms

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
    """The parameters but the manifests (``resources``, ``src``, ``render``) as plain values, as a module gets them."""
    return json.loads(args_json(dict((k, v) for k, v in params.items() if k not in ("resources", "src", "render"))))


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


class StackAction(ActionBase):
    """A task (:meth:`run`): validate, render ``src``, then run the module in this process or as a module process.

    Subclasses set :attr:`MODULE`, :attr:`ARGUMENT_SPEC` and :attr:`MUTUALLY_EXCLUSIVE` and implement
    :meth:`_runner`; :meth:`_module_args` may send the module process something else than the arguments.
    """

    MODULE = None
    ARGUMENT_SPEC = None
    MUTUALLY_EXCLUSIVE = None
    #: ``resources`` were rendered by the action that runs this one (``stacksync.k8s.sources``): plain values, its own
    rendered_by_caller = False

    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = True  # as a module process

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars if task_vars is not None else {}
        result = super(StackAction, self).run(tmp, task_vars)
        del tmp
        args = dict(self._task.args)
        validated = validate_args(args, self.ARGUMENT_SPEC, self.MUTUALLY_EXCLUSIVE)
        error = validation_message(validated, self.MODULE)
        if error:
            result.update(failed=True, msg=error)
            return result
        params = validated.validated_parameters
        try:
            reasons = self._module_process_reasons(task_vars)
        except TypeError as e:
            result.update(failed=True, msg="stacksync_in_process: %s" % e)
            return result
        self._prefetched = None if reasons else self._prefetch(params)  # reads ahead while src is rendered
        try:
            return self._run_task(result, args, params, validated, reasons, task_vars)
        finally:
            if self._prefetched is not None:
                self._prefetched.close()

    def _run_task(self, result, args, params, validated, reasons, task_vars):
        """:meth:`run` once the arguments are valid and where the module runs is known."""
        try:
            self._render_src(args, params, task_vars)
        except AnsibleError as e:
            result.update(failed=True, msg=str(e))
            return result
        if reasons:
            display.vvv("%s: running as a module process (%s)" % (self.MODULE, "; ".join(reasons)),
                        host=self._play_context.remote_addr)
            wrap_async = self._task.async_val and not self._connection.has_native_async
            try:
                module_args = self._module_args(args, params)
                result = merge_hash(result, self._execute_module(module_name=self.MODULE, module_args=module_args,
                                                                 task_vars=task_vars, wrap_async=wrap_async))
            finally:
                if not wrap_async:  # an async task's wrapper removes the directory when the module is done
                    self._remove_tmp_path(self._connection._shell.tmpdir)
            return result
        display.vvv("%s: running in the controller's process" % self.MODULE, host=self._play_context.remote_addr)
        result.update(self._run_in_process(params, validated))
        if self._discovered_interpreter_key:  # discovery ran here: the fact goes back, as after a module run
            result.setdefault("ansible_facts", {})[self._discovered_interpreter_key] = self._discovered_interpreter
        return result

    def _runner(self, params, warn):
        """The module's run on validated ``params`` (see :func:`run_in_process`)."""
        raise NotImplementedError

    def _prefetch(self, params):
        """What the run in this process may read ahead while ``src`` is rendered (an object with ``close()``), or None."""
        return None

    def _module_args(self, args, params):
        """The module process's arguments (``args`` with ``src`` rendered into ``resources``)."""
        return args

    def _render_src(self, args, params, task_vars):
        """Replace ``src`` (and ``render``) of ``args`` and ``params`` with the manifests it renders to, if given."""
        self._rendered = self.rendered_by_caller
        if params.get("src") is None:
            return
        resources = self._render(params["src"], params.get("render") or {}, task_vars)
        self._rendered = True
        params["resources"] = resources
        for name in ("src", "render"):
            args.pop(name, None)
            params.pop(name, None)
        args["resources"] = resources

    def _render(self, src, options, task_vars):
        """The manifests under ``src``, rendered as the manifests lookup renders them (templates, vault, kustomize)."""
        return render_terms([src], task_vars, self._loader, self._templar, **options)

    def _module_process_reasons(self, task_vars):
        enabled = task_vars.get("stacksync_in_process", True)
        if isinstance(enabled, str):
            enabled = self._templar.template(enabled)
        reasons = task_reasons(
            getattr(self._connection, "transport", None), become=self._play_context.become,
            async_val=self._task.async_val, delegate_to=self._task.delegate_to, environment=self._task.environment,
            enabled=check_type_bool(enabled))
        if reasons:  # the module process resolves (and if need be discovers) its interpreter itself
            return reasons
        interpreter, how = self._effective_interpreter(task_vars)
        reason = interpreter_reason(interpreter, sys.executable, how)
        return [reason] if reason else []

    def _effective_interpreter(self, task_vars):
        """The Python a module process would run under (``(path, how it was set)``), as ansible-core resolves it;
        runs interpreter discovery, as a module run would, when it is needed and has not run for the host yet."""
        configured, origin = ansible_constants.config.get_config_value_and_origin("INTERPRETER_PYTHON", variables=task_vars)
        if isinstance(configured, str):
            configured = self._templar.template(configured)
        facts = task_vars.get("ansible_facts") or {}
        interpreter, how = effective_interpreter(
            configured, origin, discovered=facts.get(DISCOVERED_FACT),
            remote_is_local=bool(getattr(self._connection, "_remote_is_local", False)),
            playbook_python=task_vars.get("ansible_playbook_python"), modes=discovery_modes(CORE_VERSION))
        if interpreter is None:
            mode = (configured or "auto").strip() or "auto"
            interpreter = discover_interpreter(action=self, interpreter_name="python", discovery_mode=mode,
                                               task_vars=task_vars)
            # as ActionBase._configure_module does: the module process (if any) uses it, and the fact goes back
            task_vars.setdefault("ansible_facts", {})[DISCOVERED_FACT] = interpreter
            self._discovered_interpreter_key = DISCOVERED_FACT
            self._discovered_interpreter = interpreter
        return interpreter, how

    def _run_in_process(self, params, validated):
        """The module's result, computed here (see :func:`run_in_process`)."""
        return run_in_process(self._runner, params, validated, self.ARGUMENT_SPEC, rendered=self._rendered)
