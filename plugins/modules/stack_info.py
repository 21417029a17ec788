#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: stack_info
short_description: Report a stack's live objects and what the next sync would do
version_added: 0.1.0
description:
  - Reads a stack written by M(stacksync.k8s.stack) without changing anything. Lists the stack's live objects
    (those with its label, in the group/kinds its record names) with their checksum status, the commit and time
    of the last sync recorded for it, and the kinds that could not be listed.
  - With O(resources), each object is compared with the desired set (V(in_sync), V(drifted), V(out_of_date),
    V(missing), V(would_prune) or V(kept) with a reason).
options:
  name:
    description: Name of the stack.
    type: str
    required: true
  resources:
    description:
      - The desired manifests to compare against (as given to M(stacksync.k8s.stack)). Without them, objects are
        reported with status V(present) (or V(kept) when protected).
    type: list
    elements: dict
  namespace:
    description:
      - Namespace for namespaced objects in O(resources) that do not name one (default the kubeconfig context's
        namespace, else V(default)).
    type: str
  field_manager:
    description: The field manager the stack is applied with (as in M(stacksync.k8s.stack)); drift is judged by its fields.
    type: str
    default: stacksync
  takeover_managers:
    description:
      - Field managers whose fields count as drift, as M(stacksync.k8s.stack)'s O(stacksync.k8s.stack#module:takeover_managers)
        (same default).
    type: list
    elements: str
  record_namespace:
    description: Namespace of the stack's record.
    type: str
    default: kube-system
  full_prune_scan:
    description: List every listable kind with the stack's label instead of the recorded group/kinds.
    type: bool
    default: false
  concurrency:
    description: Maximum number of API requests in flight.
    type: int
    default: 16
  discovery_cache_dir:
    description:
      - Directory for the discovery cache shared between runs (see M(stacksync.k8s.stack)).
      - Set to an empty string to read discovery from the API server on every run.
    type: path
    default: ~/.kube/cache/stacksync
extends_documentation_fragment:
  - stacksync.k8s.k8s_auth
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: The module never changes anything.
  diff_mode:
    support: N/A
    details: The module never changes anything.
  platform:
    platforms: posix
author:
  - stacksync.k8s contributors (@stacksync)
"""

EXAMPLES = r"""
- name: What would the next sync of the apps stack do?
  stacksync.k8s.stack_info:
    name: apps
    resources: "{{ lookup('stacksync.k8s.manifests', checkout_dir ~ '/apps', wantlist=True) }}"
  register: info

- name: Show objects that would be pruned
  ansible.builtin.debug:
    msg: "{{ info.objects | selectattr('status', 'equalto', 'would_prune') | list }}"
"""

RETURN = r"""
objects:
  description:
    - The stack's live objects (and desired objects not on the cluster), each with a C(status).
    - With O(resources) the statuses are V(in_sync), V(drifted) (desired checksum, but a field it sets was changed),
      V(out_of_date) (older checksum), V(missing) (desired, not on the cluster), V(would_prune), V(would_release) (no
      longer desired but declared by the other stack named in C(stack)), V(terminating) (deleted earlier, waiting for
      finalizers) and V(kept) (not pruned, with C(reason) and a C(code) such as V(has-owner), V(ignored),
      V(holds-others), V(contents-unknown), V(not-owned)).
    - V(would_prune) comes from the same prune plan the M(stacksync.k8s.stack) module executes, so it lists exactly
      what a sync with the same resources would delete (a prune over the O(stacksync.k8s.stack#module:max_prune) budget
      fails the sync instead).
    - Without O(resources), V(present) or V(kept).
  returned: always
  type: list
  elements: dict
  sample: [{"apiVersion": "v1", "kind": "ConfigMap", "namespace": "web", "name": "settings", "status": "in_sync",
            "checksum": "sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae"}]
commit:
  description: Source commit recorded by the last sync, if any.
  returned: always
  type: str
last_sync_time:
  description: Time of the last sync that changed the stack (UTC, RFC 3339).
  returned: always
  type: str
group_kinds:
  description: Group/kinds recorded for the stack (C(Kind.group)).
  returned: always
  type: list
  elements: str
unverified_kinds:
  description: Group/kinds that could not be listed (forbidden); their objects are not reported.
  returned: always
  type: list
  elements: str
checksum:
  description: Checksum of the desired set given in O(resources).
  returned: when O(resources) is given
  type: str
record:
  description: The raw data of the stack's record ConfigMap (empty if the stack was never synced).
  returned: always
  type: dict
"""

from ansible_collections.stacksync.k8s.plugins.module_utils.auth import (  # noqa: E402
    AUTH_ARG_SPEC,
    CLIENT_REQUIREMENTS,
    AuthError,
    build_client,
)
from ansible_collections.stacksync.k8s.plugins.module_utils.common import StackModule, check_requirements  # noqa: E402
from ansible_collections.stacksync.k8s.plugins.module_utils.manager import StackError, StackManager  # noqa: E402
from ansible_collections.stacksync.k8s.plugins.module_utils.options import OptionError, options_from_params  # noqa: E402

ARGUMENT_SPEC = dict(
    name=dict(type="str", required=True),
    resources=dict(type="list", elements="dict"),
    namespace=dict(type="str"),
    field_manager=dict(type="str", default="stacksync"),
    takeover_managers=dict(type="list", elements="str"),
    record_namespace=dict(type="str", default="kube-system"),
    full_prune_scan=dict(type="bool", default=False),
    concurrency=dict(type="int", default=16),
    discovery_cache_dir=dict(type="path", default="~/.kube/cache/stacksync"),
)
ARGUMENT_SPEC.update(AUTH_ARG_SPEC)


def main():
    module = StackModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    check_requirements(module, CLIENT_REQUIREMENTS)
    params = module.params
    try:
        client, context_namespace = build_client(params, maxsize=max(params["concurrency"], 1))
    except AuthError as e:
        module.fail_json(msg=str(e))
    try:
        opts = options_from_params(params, context_namespace, check_mode=True)
        report = StackManager(client, params["name"], opts=opts).inspect(params["resources"])
    except (StackError, OptionError) as e:
        module.fail_json(msg=str(e))
    for warning in report.pop("warnings"):
        module.warn(warning)
    module.exit_json(changed=False, **report)


if __name__ == "__main__":
    main()
