#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: summary
short_description: One table of the syncs of every cluster of the play, failures first
version_added: 0.2.0
description:
  - Prints one line (one cluster) or a table (several) of what role C(stacksync.k8s.sync) did on each cluster of
    the play, per cluster and stack, the failed ones first. Playbook C(stacksync.k8s.sync) runs it once at the end
    of the play.
  - Reads the fact C(stacksync_results) of every host, which the role sets whether the sync failed or not. A host
    that failed before its sync (no results) is listed as failed.
  - Hands the rows to C(set_stats) (keys C(stacksync), per cluster and stack, and C(stacksync_failed)), which AWX
    shows as the job's artifacts.
options:
  hosts:
    description: The clusters (inventory hosts) to list. Defaults to every host of the play (C(ansible_play_hosts_all)).
    type: list
    elements: str
  results:
    description: The name of the variable that holds each host's results.
    type: str
    default: stacksync_results
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
attributes:
  action:
    support: full
    details: Runs on the controller and only reads variables.
  async:
    support: none
  bypass_host_loop:
    support: none
  platform:
    platforms: all
  check_mode:
    support: full
    details: It changes nothing either way.
  diff_mode:
    support: none
notes:
  - Run it with C(run_once), after the role, in an C(always) section so the clusters that failed are listed too.
seealso:
  - module: stacksync.k8s.sources
author:
  - stacksync.k8s contributors (@stacksync)
"""

EXAMPLES = r"""
- name: Sync every cluster, then list them all
  hosts: clusters
  connection: local
  gather_facts: false
  tasks:
    - name: Sync
      block:
        - name: Sync the cluster
          ansible.builtin.include_role:
            name: stacksync.k8s.sync
      always:
        - name: Summary of every cluster
          stacksync.k8s.summary:
          run_once: true
"""

RETURN = r"""
clusters:
  description: The rows of the table, failures first.
  returned: always
  type: list
  elements: dict
  contains:
    cluster:
      description: The inventory host.
      type: str
    stack:
      description: The stack (V(-) for a host that failed before its sync).
      type: str
    source:
      description: Repository (credentials removed) and path.
      type: str
    commit:
      description: The commit synced (12 characters).
      type: str
    synced:
      description: Objects the stack holds after the sync (created, configured or unchanged), V(-) if it failed.
      type: str
    pruned:
      description: Objects pruned.
      type: str
    result:
      description: V(ok), V(deleted), C(FAILED) with the error in one line, or why the stack was not applied.
      type: str
    failed:
      description: Whether the row is a failure.
      type: bool
  sample: [{"cluster": "prod-b", "stack": "apps", "source": "https://github.com/acme/platform.git apps",
            "commit": "4f1c0e9a1b2c", "synced": "-", "pruned": "0", "result": "FAILED: ...", "failed": true}]
failed_stacks:
  description: C(cluster/stack) of each failure (the cluster alone for a host that failed before its sync).
  returned: always
  type: list
  elements: str
  sample: [prod-b/apps]
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402


def main():
    module = AnsibleModule(argument_spec=dict(hosts=dict(type="list", elements="str"),
                                              results=dict(type="str", default="stacksync_results")),
                           supports_check_mode=True)
    module.fail_json(msg="stacksync.k8s.summary runs on the controller as an action plugin; it has no module process")


if __name__ == "__main__":
    main()
