#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: sources
short_description: Sync a cluster from git sources, one stack per source (fetch, render, apply all, then prune all)
version_added: 0.2.0
description:
  - What role C(stacksync.k8s.sync) runs, as one task. For each source it checks out the repository on the
    controller, renders its manifests with the C(stacksync.k8s.manifests) lookup, applies every stack with
    C(stacksync.k8s.stack) and only when every apply succeeded prunes every stack. An object that moved from one
    source to another in the same commit is therefore re-labelled by its new stack before the old one prunes.
  - Every source is checked (options, unique stack names, O(sources[].depends_on)), fetched and rendered before
    anything is written. A source that cannot be fetched or rendered fails alone (as in Flux). Its stack and the
    stacks that depend on it are not applied, the others are, nothing is pruned, and the task fails with the
    error (naming the file relative to the repository).
  - Checkouts live under O(cache_dir), one per repository and version. A checkout is fetched once per task
    run, whatever the number of hosts and forks, so every cluster the task syncs gets the same commit (a later
    task, such as another include of the role, fetches again). The repository URL (and any credentials in it) is given to C(git fetch) and never stored in the
    checkout.
  - Stacks are applied in the order of the sources, except that a stack comes after the stacks it depends on; a
    stack some other stack depends on is applied with O(stacksync.k8s.stack#module:wait=true), so its dependents are
    applied only once it is healthy. A stack whose dependency failed is not applied. Stacks are pruned in the
    reverse order.
  - Prints a line when a stack starts writing (what it writes, from which commit) and when it is done (what it did,
    or its error in one line) and, with O(summary), a table per host at the end. Sets the fact C(stacksync_results)
    and hands per-stack counts to C(set_stats) (key C(stacksync), per host), which AWX shows as the job's artifacts.
  - A stack that failed fails the task, with the error as its message. Ansible sets no facts and no stats of a failed
    task, so the result holds RV(stacksync_results) then (a registered result, or C(ansible_failed_result) in a
    C(rescue), reads every stack's outcome); role C(stacksync.k8s.sync) sets the fact from it.
options:
  sources:
    description:
      - The sources to sync. Each becomes one stack.
    type: list
    elements: dict
    required: true
    suboptions:
      repo:
        description: Git repository URL (C(https://), C(ssh://), scp-like, C(file://) or a local path).
        type: str
        required: true
      version:
        description: Branch, tag or commit (full or abbreviated). Defaults to O(version).
        type: str
      path:
        description: Directory inside the repository holding the manifests. Defaults to O(path).
        type: str
      stack:
        description:
          - Stack name (a label value). Defaults to a name derived from O(sources[].repo) and O(sources[].path)
            (filter C(stacksync.k8s.stack_name)). Stack names must be unique within one sync.
        type: str
      include:
        description: Glob patterns (relative to O(sources[].path)) of the files to read.
        type: list
        elements: str
      exclude:
        description: Glob patterns of files and directories to skip. Exclusion wins.
        type: list
        elements: str
      namespace:
        description: Namespace for namespaced objects that do not set one.
        type: str
      prune:
        description: Prune objects of this stack that left the source. Defaults to O(prune).
        type: bool
      state:
        description:
          - V(present) syncs the stack; V(absent) deletes every object of the stack (the repository is not read).
          - Defaults to V(present).
        type: str
        choices: [present, absent]
      vars:
        description: Extra variables for the C(*.j2) templates of this source.
        type: dict
      kubeconfig:
        description:
          - Kubeconfig (a path or a mapping) for this source, instead of the host's connection settings. When this or
            O(sources[].context) is set, none of O(kubeconfig), O(context), O(host), O(api_key), O(username),
            O(password), O(ca_cert), O(client_cert) or O(client_key) is used for this source.
        type: raw
      context:
        description: Kubeconfig context for this source, instead of the host's connection settings.
        type: str
      impersonate_user:
        description:
          - User this source applies and prunes as (Kubernetes impersonation). Defaults to O(impersonate_user); an
            empty string turns impersonation off for this source.
        type: str
      impersonate_groups:
        description: Groups to impersonate with O(sources[].impersonate_user). Defaults to O(impersonate_groups).
        type: list
        elements: str
      record_namespace:
        description: Namespace of this stack's record, key and lock. Defaults to O(record_namespace).
        type: str
      depends_on:
        description:
          - Names of stacks of this sync that must be applied and healthy before this one is applied (like the
            C(dependsOn) of a Flux Kustomization). A missing name, a dependency on a stack with state V(absent) or
            a cycle fails the task before anything is fetched or written.
        type: list
        elements: str
  version:
    description: Default branch, tag or commit of the sources; V(HEAD) is the remote's default branch.
    type: str
    default: HEAD
  path:
    description: Default directory inside the repositories.
    type: str
    default: "."
  prune:
    description: Default of O(sources[].prune).
    type: bool
    default: true
  summary:
    description: Print the summary table at the end.
    type: bool
    default: true
  allow_empty:
    description: As O(stacksync.k8s.stack#module:allow_empty), for every stack.
    type: bool
  concurrency:
    description: As O(stacksync.k8s.stack#module:concurrency).
    type: int
  discovery_cache_dir:
    description: As O(stacksync.k8s.stack#module:discovery_cache_dir).
    type: path
  fail_on_shared:
    description: As O(stacksync.k8s.stack#module:fail_on_shared).
    type: bool
  field_manager:
    description: As O(stacksync.k8s.stack#module:field_manager).
    type: str
  force_conflicts:
    description: As O(stacksync.k8s.stack#module:force_conflicts).
    type: bool
  full_prune_scan:
    description: As O(stacksync.k8s.stack#module:full_prune_scan).
    type: bool
  max_prune:
    description: As O(stacksync.k8s.stack#module:max_prune), per stack.
    type: str
  propagation_policy:
    description: As O(stacksync.k8s.stack#module:propagation_policy).
    type: str
    choices: [Background, Foreground, Orphan]
  recreate_on_immutable:
    description: As O(stacksync.k8s.stack#module:recreate_on_immutable).
    type: bool
  record_namespace:
    description: As O(stacksync.k8s.stack#module:record_namespace); O(sources[].record_namespace) wins.
    type: str
  takeover_managers:
    description: As O(stacksync.k8s.stack#module:takeover_managers).
    type: list
    elements: str
  wait:
    description: As O(stacksync.k8s.stack#module:wait), for every stack (stacks others depend on always wait).
    type: bool
  wait_condition:
    description: As O(stacksync.k8s.stack#module:wait_condition).
    type: list
    elements: dict
    suboptions:
      kind:
        description: Kind the rule is for.
        type: str
        required: true
      group:
        description: API group of O(wait_condition[].kind).
        type: str
      expression:
        description: JMESPath expression, true when the object is ready.
        type: str
        required: true
  wait_timeout:
    description: As O(stacksync.k8s.stack#module:wait_timeout).
    type: int
extends_documentation_fragment:
  - stacksync.k8s.k8s_auth
  - stacksync.k8s.git_checkout
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
attributes:
  action:
    details: Runs on the controller; each stack is applied and pruned by C(stacksync.k8s.stack).
  check_mode:
    support: full
    details: The checkouts are updated (they are the controller's cache); nothing is written to the clusters.
  diff_mode:
    support: full
    details: The diffs of every stack.
notes:
  - Role C(stacksync.k8s.sync) and playbook C(stacksync.k8s.sync) wrap this module; use it directly to sync from a
    play of your own.
seealso:
  - module: stacksync.k8s.stack
author:
  - stacksync.k8s contributors (@stacksync)
"""

EXAMPLES = r"""
- name: Sync infrastructure first, then the apps that need it
  stacksync.k8s.sources:
    kubeconfig: ~/.kube/prod
    sources:
      - repo: https://github.com/example/platform.git
        path: infra
        stack: infra
      - repo: https://github.com/example/platform.git
        path: apps
        stack: apps
        depends_on: [infra]

- name: Delete a stack whose repository is gone
  stacksync.k8s.sources:
    sources:
      - repo: https://github.com/example/old.git
        stack: old-apps
        state: absent
"""

RETURN = r"""
stacks:
  description: The stacks, in the order they were applied.
  returned: always
  type: list
  elements: str
  sample: [infra, apps]
failed_stacks:
  description: The stacks that failed (their apply or prune, or their checkout or render), or were not applied because a stack they depend on failed.
  returned: when a stack failed
  type: list
  elements: str
  sample: [apps]
stacksync_results:
  description:
    - When a stack failed, the entries of RV(ansible_facts.stacksync_results) (a failed task sets no facts), with
      C(applied) listing only the objects written (created or configured), as Ansible prints the whole result.
  returned: when a stack failed
  type: list
  elements: dict
  sample: [{"stack": "apps", "failed": true, "msg": "Kubeconfig file not found: /etc/prod.kubeconfig (check kubeconfig)",
            "counts": {"created": 0, "configured": 0, "unchanged": 0, "pruned": 0, "skipped": 0}, "pruning": "not run"}]
ansible_facts:
  description: Facts set by the task.
  returned: success
  type: dict
  contains:
    stacksync_results:
      description:
        - One entry per stack, in apply order, with C(stack), C(repo) (credentials removed), C(version), C(path),
          C(commit), C(state), C(objects), C(depends_on), C(changed), C(failed), C(msg), C(pruning) (V(done),
          V(disabled), V(not run) or V(failed)), C(counts) (created, configured, unchanged, pruned, skipped),
          C(health) (V(not checked) unless the objects written were waited for, else V(healthy) or V(unhealthy)),
          C(applied), C(pruned), C(skipped), C(unhealthy) (applied objects waited for that are not healthy, with
          C(health) and C(health_reason)), C(warnings) and C(seconds).
      type: list
      elements: dict
      sample: [{"stack": "apps", "commit": "4f1c0e9a1b2c3d4e5f60718293a4b5c6d7e8f901", "counts": {"created": 2,
                "configured": 0, "unchanged": 40, "pruned": 1, "skipped": 0}, "pruning": "done", "failed": false}]
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.stacksync.k8s.plugins.module_utils.sources_spec import ARGUMENT_SPEC  # noqa: E402


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    module.fail_json(msg="stacksync.k8s.sources runs on the controller as an action plugin; it has no module process")


if __name__ == "__main__":
    main()
