# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of ``stacksync.k8s.summary``: every cluster's sync of the play in one table (``plugin_utils/summary.py``)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display
from ansible_collections.stacksync.k8s.plugins.plugin_utils import bytecode

bytecode.install()  # the collection's modules imported next are read from their __pycache__ (plugin_utils/bytecode.py)

from ansible_collections.stacksync.k8s.plugins.plugin_utils import summary as report

display = Display()

ARGUMENT_SPEC = dict(
    hosts=dict(type="list", elements="str"),
    results=dict(type="str", default="stacksync_results"),
)


class ActionModule(ActionBase):

    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars if task_vars is not None else {}
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        params = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)[1]  # raises AnsibleActionFail
        hosts = params["hosts"] if params["hosts"] is not None else list(task_vars.get("ansible_play_hosts_all") or [])
        active = report.active_hosts(task_vars, hosts)
        hostvars = task_vars.get("hostvars") or {}
        clusters = []
        for host in hosts:
            entries = report.host_entries(hostvars, host, params["results"])
            clusters.append((host, list(entries) if isinstance(entries, list) else None, host not in active))
        display.display("\n".join(report.fleet_lines(clusters, bool(self._task.check_mode))))
        data = report.fleet_stats(clusters)
        result.update(changed=False, clusters=[dict(zip(report.FLEET_COLUMNS, cells), failed=failed)
                                               for failed, cells in report.fleet_rows(clusters)],
                      failed_stacks=data["stacksync_failed"],
                      ansible_stats={"data": data, "per_host": False, "aggregate": True})
        return result
