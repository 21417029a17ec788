#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: stack_info
short_description: Report a stack's live objects, their sync and health, and what the next sync would do
version_added: 0.1.0
description:
  - Reads a stack written by M(stacksync.k8s.stack) without changing anything. Lists the stack's live objects
    (those with its label, in the group/kinds its record names) with their checksum status, sync and health, the
    commit and time of the last sync recorded for it, and the kinds that could not be listed.
  - Asked exactly like the sync. With the desired set given as M(stacksync.k8s.stack) takes it (O(src) rendered on
    the controller with O(render), or O(resources)), each object is compared with it (V(in_sync), V(drifted),
    V(out_of_date), V(missing), V(would_prune), V(would_release), V(terminating) or V(kept) with a reason), from the
    same plan the sync executes, so V(would_prune) is what a sync with the same source would delete.
  - Health follows kstatus' rules (C(metadata.generation) against C(status.observedGeneration), the C(Ready),
    C(Reconciling) and C(Stalled) conditions, and per-kind rules for built-in kinds) in Argo CD's vocabulary, for every
    kind, custom resources included.
options:
  name:
    description: Name of the stack.
    type: str
    required: true
  resources:
    description:
      - The desired manifests to compare against (as given to M(stacksync.k8s.stack)). Without them (and without
        O(src)), objects are reported with status V(present) (or V(kept) when protected).
      - A single mapping is taken as a list of one manifest, as by M(stacksync.k8s.stack).
      - Mutually exclusive with O(src).
    type: list
    elements: dict
  src:
    description:
      - A directory (or single manifest file) on the controller whose manifests are the desired set, rendered by the
        action plugin exactly as M(stacksync.k8s.stack) renders its O(stacksync.k8s.stack#module:src) (the
        C(stacksync.k8s.manifests) lookup, with the options in O(render)).
      - A relative path is relative to the playbook directory, as for the lookup. A directory that fails to render
        fails the task. Mutually exclusive with O(resources).
    type: path
  namespace:
    description:
      - Namespace for namespaced objects in the desired set that do not name one (default the kubeconfig context's
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
  record_namespaces:
    description: As O(stacksync.k8s.stack#module:record_namespaces) (what C(would_prune) says is what a sync deletes).
    type: list
    elements: str
  full_prune_scan:
    description: List every listable kind with the stack's label instead of the recorded group/kinds.
    type: bool
    default: false
  concurrency:
    description: Maximum number of API requests in flight.
    type: int
    default: 16
  commit:
    description: The commit the desired set comes from, as M(stacksync.k8s.stack) takes it; only what a plan says
      (O(emit_plan)), so that a run of that commit can be held to it.
    type: str
extends_documentation_fragment:
  - stacksync.k8s.confinement
  - stacksync.k8s.k8s_auth
  - stacksync.k8s.render
  - stacksync.k8s.discovery_cache
  - stacksync.k8s.plan
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
attributes:
  action:
    support: full
    details:
      - Renders O(src) on the controller.
      - Runs the module in the controller's own process when it would run there anyway, with the same Python, on the
        same decision as M(stacksync.k8s.stack) (see its notes; C(stacksync_in_process=false) turns it off).
  async:
    support: full
    details: An async task always runs as a module process.
  bypass_host_loop:
    support: none
  check_mode:
    support: full
    details: The module never changes anything; it reports as check mode does, and emits a plan (O(emit_plan),
      O(plan_file)) whether or not it runs in check mode.
  diff_mode:
    support: N/A
    details: The module never changes anything.
  platform:
    platforms: posix
seealso:
  - module: stacksync.k8s.stack
  - plugin: stacksync.k8s.manifests
    plugin_type: lookup
author:
  - stacksync.k8s contributors (@stacksync)
"""

EXAMPLES = r"""
- name: What would the next sync of the apps stack do? (asked exactly like the sync)
  stacksync.k8s.stack_info:
    name: apps
    src: "{{ checkout_dir }}/apps"
    render:
      root: "{{ checkout_dir }}"
  register: info

- name: The same with the manifests passed as a list
  stacksync.k8s.stack_info:
    name: apps
    resources: "{{ lookup('stacksync.k8s.manifests', checkout_dir ~ '/apps', wantlist=True) }}"
  register: info

- name: Show objects that would be pruned
  ansible.builtin.debug:
    msg: "{{ info.objects | selectattr('sync', 'equalto', 'Extraneous') | list }}"

- name: Fail when anything of the stack is unhealthy, naming it and why
  ansible.builtin.assert:
    that: info.counts.health.Degraded | default(0) == 0
    fail_msg: "{{ info.objects | selectattr('health', 'equalto', 'Degraded')
                  | map(attribute='name') | zip(info.objects | selectattr('health', 'equalto', 'Degraded')
                  | map(attribute='health_reason')) | list }}"

- name: The plan of a sync, to approve (and then give to stacksync.k8s.stack as approved_plan)
  stacksync.k8s.stack_info:
    name: apps
    src: "{{ checkout_dir }}/apps"
    commit: "{{ checkout.after }}"
    prune_grace: 1d
    plan_file: /srv/plans/apps.json

- name: The stack's live objects as they are (no desired set)
  stacksync.k8s.stack_info:
    name: apps
  register: live
"""

RETURN = r"""
objects:
  description:
    - The stack's live objects (and desired objects not on the cluster), each with its C(status), C(sync) and C(health).
    - V(would_prune) comes from the same prune plan the M(stacksync.k8s.stack) module executes, so it lists exactly
      what a sync with the same desired set would delete (a prune over the
      O(stacksync.k8s.stack#module:max_prune) budget fails the sync instead).
  returned: always
  type: list
  elements: dict
  contains:
    apiVersion:
      description: API version of the object (the live one when it exists).
      type: str
      sample: apps/v1
    kind:
      description: Kind of the object.
      type: str
      sample: Deployment
    namespace:
      description: Namespace of the object (null for cluster-scoped objects).
      type: str
      sample: web
    name:
      description: Name of the object.
      type: str
      sample: frontend
    status:
      description:
        - With a desired set (O(src) or O(resources)), V(in_sync); V(drifted) (desired checksum, but a field it sets was
          changed, see C(drift)); V(out_of_date) (an older checksum, git changed); V(missing) (desired, not on the
          cluster); V(would_prune); V(would_release) (no longer desired but declared by the stack named in C(stack));
          V(terminating) (deleted earlier, waiting for finalizers) or V(kept) (not pruned, see C(reason) and C(code)).
        - With O(prune_grace), V(would_mark) (left git, a sync would mark it for pruning) and V(marked) (marked,
          waiting for the grace to pass), each with C(prune_after).
        - Without a desired set, V(present) or V(kept).
      type: str
      sample: in_sync
    sync:
      description:
        - Sync state in Argo CD's vocabulary. V(Synced) (V(in_sync), V(kept), V(present)), V(OutOfSync) (V(drifted),
          V(out_of_date)), V(Missing) (V(missing)), V(Extraneous) (V(would_prune), V(would_release), V(terminating),
          V(would_mark), V(marked)).
      type: str
      sample: Synced
    health:
      description:
        - V(Healthy), V(Progressing), V(Degraded) (failed or stalled, for example C(Ready=False),
          C(ProgressDeadlineExceeded), C(CrashLoopBackOff)), V(Suspended), V(Missing) (not on the cluster) or V(Unknown).
      type: str
      sample: Degraded
    health_reason:
      description: >-
        Why the object has that health, as C(<reason>) or C(<reason>: <message>) (for example of the condition that decided it).
      type: str
      returned: when the rules give a reason
      sample: "ProgressDeadlineExceeded: ReplicaSet \"frontend-7d4b9c\" has timed out progressing."
    checksum:
      description: The object's C(stacksync.io/checksum) annotation (for V(missing) objects, the desired checksum).
      type: str
      sample: sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae
    reason:
      description: Why the object is kept, terminating or released.
      type: str
      returned: for V(kept), V(terminating) and V(would_release) objects
      sample: has ownerReferences (managed by a controller)
    code:
      description: Machine-readable reason of a V(kept) object, such as V(has-owner), V(ignored), V(holds-others),
        V(contents-unknown), V(not-owned).
      type: str
      returned: for V(kept) objects
      sample: has-owner
    stack:
      description: The stack whose record still declares a V(would_release) object.
      type: str
      returned: for V(would_release) objects
      sample: other
    prune_after:
      description: When a sync may delete a V(would_mark) or V(marked) object (the API server's time; null when not
        known yet).
      type: str
      returned: for V(would_mark) and V(marked) objects
      sample: "2026-05-02T10:00:01Z"
    drift:
      description: For V(drifted) objects, the field managers that changed fields git sets, with the field paths.
      type: list
      elements: dict
      returned: for V(drifted) objects
      sample: [{"manager": "kubectl-edit", "operation": "Update", "fields": ["spec.replicas"]}]
  sample:
    - {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "web", "name": "settings", "status": "in_sync",
       "sync": "Synced", "health": "Healthy",
       "checksum": "sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae"}
    - {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "web", "name": "frontend", "status": "drifted",
       "sync": "OutOfSync", "health": "Progressing", "health_reason": "LessAvailable: Available: 0/3",
       "drift": [{"manager": "kubectl-edit", "operation": "Update", "fields": ["spec.replicas"]}],
       "checksum": "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}
    - {"apiVersion": "example.com/v1", "kind": "Database", "namespace": "web", "name": "orders", "status": "in_sync",
       "sync": "Synced", "health": "Degraded", "health_reason": "ProvisioningFailed: volume quota exceeded",
       "checksum": "sha256:60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752"}
    - {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "web", "name": "legacy", "status": "would_prune",
       "sync": "Extraneous", "health": "Healthy",
       "checksum": "sha256:fd61a03af4f77d870fc21e05e7e80678095c92d808cfb3b5c279ee04c74aca13"}
    - {"apiVersion": "v1", "kind": "Service", "namespace": "web", "name": "api", "status": "missing",
       "sync": "Missing", "health": "Missing",
       "checksum": "sha256:a665a45920422f9d417e4867efdc4fb8a04a1f3fff1fa07e998e86f7f7a27ae3"}
counts:
  description: Number of objects per C(sync) and per C(health) state (states no object is in are left out).
  returned: always
  type: dict
  contains:
    sync:
      description: Objects per sync state.
      type: dict
      sample: {"Synced": 3, "OutOfSync": 1, "Extraneous": 1, "Missing": 1}
    health:
      description: Objects per health state.
      type: dict
      sample: {"Healthy": 3, "Progressing": 1, "Degraded": 1, "Missing": 1}
  sample: {"sync": {"Synced": 3, "OutOfSync": 1, "Extraneous": 1, "Missing": 1},
           "health": {"Healthy": 3, "Progressing": 1, "Degraded": 1, "Missing": 1}}
commit:
  description: Source commit recorded by the last sync, if any.
  returned: always
  type: str
  sample: 3f786850e387550fdab836ed7e6dc881de23001b
last_sync_time:
  description: Time of the last sync that changed the stack (UTC, RFC 3339).
  returned: always
  type: str
  sample: "2026-12-03T10:15:02Z"
group_kinds:
  description: Group/kinds recorded for the stack (C(Kind.group)).
  returned: always
  type: list
  elements: str
  sample: ["ConfigMap", "Database.example.com", "Deployment.apps", "Service"]
unverified_kinds:
  description: Group/kinds that could not be listed (forbidden); their objects are not reported.
  returned: always
  type: list
  elements: str
  sample: []
checksum:
  description: Checksum of the desired set (from O(src) or O(resources)).
  returned: when a desired set is given
  type: str
  sample: sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
record:
  description: The raw data of the stack's record ConfigMap (empty if the stack was never synced).
  returned: always
  type: dict
plan:
  description:
    - With O(emit_plan) or O(plan_file) and a desired set, the plan of a sync of it, as
      RV(stacksync.k8s.stack#module:plan) describes it (the O(stacksync.k8s.stack#module:approved_plan) of a later
      sync). Its C(source) is null; give it to a run of M(stacksync.k8s.stack) without a source.
  returned: when a plan is asked for
  type: dict
"""

from ansible_collections.stacksync.k8s.plugins.module_utils.common import StackModule  # noqa: E402
from ansible_collections.stacksync.k8s.plugins.module_utils.info import (  # noqa: E402
    ARGUMENT_SPEC,
    MUTUALLY_EXCLUSIVE,
    run_stack_info,
)
from ansible_collections.stacksync.k8s.plugins.module_utils.runner import RunFailed  # noqa: E402


def main():
    module = StackModule(argument_spec=ARGUMENT_SPEC, mutually_exclusive=MUTUALLY_EXCLUSIVE, supports_check_mode=True)
    try:
        result = run_stack_info(module.params, warn=module.warn)
    except RunFailed as e:
        module.fail_json(msg=e.msg, **e.result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
