# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of ``stacksync.k8s.stack``: renders ``src`` on the controller, then runs the module.

The module runs in the controller's process when it would run on the controller with the same
Python anyway (``plugin_utils/execution.py``), else as a module process, as any module would.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible.errors import AnsibleError
from ansible.utils.display import Display
from ansible.utils.vars import merge_hash
from ansible_collections.stacksync.k8s.plugins.module_utils.gcpause import gc_paused
from ansible_collections.stacksync.k8s.plugins.module_utils.progress import Progress, interval_from_env
from ansible_collections.stacksync.k8s.plugins.module_utils.runner import (
    ARGUMENT_SPEC,
    MUTUALLY_EXCLUSIVE,
    run_stack,
)
from ansible_collections.stacksync.k8s.plugins.plugin_utils.stack_action import (
    StackActionBase,
    args_json,
    validate_args,
    validation_message,
)

display = Display()

MODULE = "stacksync.k8s.stack"
RESOURCES_FILE = "stacksync-resources.json"


def validation_error(validated):
    """The message AnsibleModule would fail with for a failed validation, or None."""
    return validation_message(validated, MODULE)


def validate(args):
    """The arguments validated with the module's spec (:func:`.stack_action.validate_args`)."""
    return validate_args(args, ARGUMENT_SPEC, MUTUALLY_EXCLUSIVE)


class ActionModule(StackActionBase):

    MODULE = MODULE
    ARGUMENT_SPEC = ARGUMENT_SPEC
    MUTUALLY_EXCLUSIVE = MUTUALLY_EXCLUSIVE

    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = True  # as a module process

    @gc_paused  # the task's worker process builds and reads thousands of manifests; see module_utils/gcpause.py
    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars if task_vars is not None else {}
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        args = dict(self._task.args)
        validated = validate(args)
        error = validation_error(validated)
        if error:
            result.update(failed=True, msg=error)
            return result
        params = validated.validated_parameters

        if params.get("src") is not None:
            try:
                resources = self._render(params["src"], params.get("render") or {}, task_vars)
            except AnsibleError as e:
                result.update(failed=True, msg=str(e))
                return result
            params["resources"] = resources
            for name in ("src", "render"):
                args.pop(name, None)
                params.pop(name, None)
            args["resources"] = resources

        try:
            reasons = self._module_process_reasons(task_vars)
        except TypeError as e:
            result.update(failed=True, msg="stacksync_in_process: %s" % e)
            return result
        if reasons:
            display.vvv("%s: running as a module process (%s)" % (MODULE, "; ".join(reasons)),
                        host=self._play_context.remote_addr)
            wrap_async = self._task.async_val and not self._connection.has_native_async
            try:
                module_args = self._module_args(args, params)
                result = merge_hash(result, self._execute_module(module_name=MODULE, module_args=module_args,
                                                                 task_vars=task_vars, wrap_async=wrap_async))
            finally:
                if not wrap_async:  # an async task's wrapper removes the directory when the module is done
                    self._remove_tmp_path(self._connection._shell.tmpdir)
            return result
        display.vvv("%s: running in the controller's process" % MODULE, host=self._play_context.remote_addr)
        result.update(self._run_in_process(params, validated))
        if self._discovered_interpreter_key:  # discovery ran here: the fact goes back, as after a module run
            result.setdefault("ansible_facts", {})[self._discovered_interpreter_key] = self._discovered_interpreter
        return result

    def _module_args(self, args, params):
        """The module process's arguments: the manifests go in a file next to the module, not in its arguments.

        The file is written to the task's remote temporary directory (private to the connection user,
        made readable to a ``become`` user like the module itself, removed with it after the run).
        Ansible would otherwise encode the manifests into the module's payload and the module would
        decode, copy and validate them again (a fifth of a second at 1,000 objects).
        """
        resources = params.get("resources")
        if not resources or params.get("state") == "absent":
            return args
        tmpdir = self._connection._shell.tmpdir or self._make_tmp_path()
        path = self._connection._shell.join_path(tmpdir, RESOURCES_FILE)
        self._transfer_data(path, args_json(resources))
        self._fixup_perms2((path,), execute=False)
        args = dict(args, resources_file=path)
        args.pop("resources", None)
        return args

    def _runner(self, params, warn):
        progress = Progress(display.v, interval_from_env(os.environ), prefix="stack %s: " % params["name"])
        return run_stack(params, check_mode=bool(self._task.check_mode), diff=bool(self._task.diff), warn=warn,
                         verbosity=display.verbosity, progress=progress)
