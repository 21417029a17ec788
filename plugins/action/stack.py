# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of ``stacksync.k8s.stack``: renders ``src`` on the controller, then runs the module.

The module runs in the controller's process when it would run on the controller with the same
Python anyway (``plugin_utils/execution.py``), else as a module process, as any module would
(``plugin_utils/stack_action.py``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.stacksync.k8s.plugins.plugin_utils import bytecode

bytecode.install()  # the collection's modules imported next are read from their __pycache__ (plugin_utils/bytecode.py)

from ansible_collections.stacksync.k8s.plugins.plugin_utils.stack_action import STACK, StackAction


class ActionModule(StackAction):

    ENGINE = STACK
