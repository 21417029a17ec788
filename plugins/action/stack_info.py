# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of ``stacksync.k8s.stack_info``: renders ``src`` on the controller, then runs the module.

Asked exactly like ``stacksync.k8s.stack``: the same ``src`` / ``render`` / ``resources``, rendered by the
same lookup, and the module runs in the controller's process or as a module process on the same
decision (``plugin_utils/stack_action.py``, ``plugin_utils/execution.py``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.stacksync.k8s.plugins.module_utils.engine.gcpause import gc_paused
from ansible_collections.stacksync.k8s.plugins.module_utils.info import ARGUMENT_SPEC, MUTUALLY_EXCLUSIVE, run_stack_info
from ansible_collections.stacksync.k8s.plugins.plugin_utils.stack_action import StackAction


class ActionModule(StackAction):

    MODULE = "stacksync.k8s.stack_info"
    ARGUMENT_SPEC = ARGUMENT_SPEC
    MUTUALLY_EXCLUSIVE = MUTUALLY_EXCLUSIVE

    @gc_paused  # as stack's: rendering, the engine's lists and the per-object report allocate thousands of objects
    def run(self, tmp=None, task_vars=None):
        return super(ActionModule, self).run(tmp, task_vars)

    def _runner(self, params, warn):
        return run_stack_info(params, warn=warn)
