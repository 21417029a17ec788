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

from ansible.utils.display import Display
from ansible_collections.stacksync.k8s.plugins.module_utils.base.progress import Progress, interval_from_env, tee
from ansible_collections.stacksync.k8s.plugins.module_utils.base.vocabulary import spoken
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.gcpause import gc_paused
from ansible_collections.stacksync.k8s.plugins.module_utils.runner import (
    ARGUMENT_SPEC,
    MUTUALLY_EXCLUSIVE,
    run_stack,
    start_prefetch,
)
from ansible_collections.stacksync.k8s.plugins.plugin_utils.stack_action import (
    StackAction,
    args_json,
    plain_params,
    validate_args,
)

display = Display()

MODULE = "stacksync.k8s.stack"
RESOURCES_FILE = "stacksync-resources.json"


def validate(args):
    """The arguments validated with the module's spec (:func:`.stack_action.validate_args`)."""
    return validate_args(args, ARGUMENT_SPEC, MUTUALLY_EXCLUSIVE)


class ActionModule(StackAction):

    MODULE = MODULE
    ARGUMENT_SPEC = ARGUMENT_SPEC
    MUTUALLY_EXCLUSIVE = MUTUALLY_EXCLUSIVE

    @gc_paused  # the task's worker process builds and reads thousands of manifests; see module_utils/engine/gcpause.py
    def run(self, tmp=None, task_vars=None):
        """:meth:`.StackAction.run` (validate, render ``src``, run the module here or as a module process)."""
        return super(ActionModule, self).run(tmp, task_vars)

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

    def _prefetch(self, params):
        """The engine's first reads (discovery, record, lists of the recorded kinds), started before ``src`` is
        rendered (``module_utils/engine/prefetch.py``); the connection options as the run gets them."""
        return start_prefetch(plain_params(params))

    def _runner(self, params, warn):
        progress = Progress(display.v, interval_from_env(os.environ), prefix="stack %s: " % params["name"])
        prefetch, self._prefetched = self._prefetched, None  # the run closes it
        # set by the stacksync.k8s.sources action, which runs this one: told of the run's progress too
        progress = tee(progress, getattr(self, "stacksync_progress", None))
        # set by the stacksync.k8s.sources action too: the names of the options in its caller's words
        with spoken(getattr(self, "stacksync_vocabulary", None)):
            return run_stack(params, check_mode=bool(self._task.check_mode), diff=bool(self._task.diff), warn=warn,
                             verbosity=display.verbosity, progress=progress, prefetch=prefetch)
