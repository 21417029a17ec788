# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of ``stacksync.k8s.checkout``: one git checkout on the controller (``plugin_utils/checkout.py``)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.plugins.action import ActionBase
from ansible_collections.stacksync.k8s.plugins.plugin_utils import bytecode

bytecode.install()  # the collection's modules imported next are read from their __pycache__ (plugin_utils/bytecode.py)

from ansible_collections.stacksync.k8s.plugins.module_utils.checkout_spec import ARGUMENT_SPEC
from ansible_collections.stacksync.k8s.plugins.plugin_utils.checkout import CheckoutError, checkout_source, run_token


class ActionModule(ActionBase):

    TRANSFERS_FILES = False
    _supports_check_mode = True  # it writes only the controller's cache, never a cluster
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        p = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)[1]  # raises AnsibleActionFail
        try:
            # fetched once per run of this task, whatever the number of hosts (as stacksync.k8s.sources does)
            source = checkout_source(p["repo"], p["version"], p["path"], p["cache_dir"], p["stack"],
                                     token="%s/%s" % (run_token(), self._task._uuid))
        except CheckoutError as e:
            result.update(failed=True, msg=str(e), reason=e.reason)
            return result
        result.update(source, changed=False)  # the controller's cache: only changes to a cluster count
        return result
