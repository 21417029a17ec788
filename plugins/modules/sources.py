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
    C(stacksync.k8s.stack), then prunes each stack whose own apply succeeded (the prune gate of
    C(stacksync.k8s.stack) decides). No stack deletes what another source of the run declares, whatever became of
    that source's apply; it is released to that source's stack. An object that moved from one source to another in
    the same commit is therefore never deleted. A stack with O(sources[].state=absent) is deleted only when every
    apply succeeded.
  - An object two sources of the run declare stays with the stack that owns it (its label), or with the first of
    them when neither does; the other one leaves it alone, with a warning naming both sources, until the owner stops
    declaring it. Move an object between repositories by adding it to the new one first, then removing it from the
    old one.
  - Each stack's record remembers its source (the normalised repository URL and path, O(stacksync.k8s.stack#module:source)).
    A run from another source with the same stack name fails before any write, naming both sources.
  - Every source is checked (options, unique stack names, O(sources[].depends_on)), fetched and rendered before
    anything is written. A source that cannot be fetched or rendered fails alone (as in Flux). Its stack and the
    stacks that depend on it are neither applied nor pruned, the others are (what its record declares counts as
    declared), and the task fails with the error (naming the file relative to the repository).
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
    (run by role C(stacksync.k8s.sync), the task returns it and the role sets the variable) and hands per-stack
    counts to C(set_stats) (key C(stacksync), per host), which AWX shows as the job's artifacts.
  - A stack that failed fails the task, with the error as its message. Ansible sets no facts and no stats of a failed
    task, so the result holds RV(stacksync_results) then (a registered result, or C(ansible_failed_result) in a
    C(rescue), reads every stack's outcome); role C(stacksync.k8s.sync) sets the variable from it.
options:
  sources:
    description:
      - The sources to sync. Each becomes one stack.
    type: list
    elements: dict
    required: true
    suboptions:
      repo:
        description:
          - Git repository URL (C(https://), C(ssh://), scp-like, C(file://) or a local path). Other transports
            (C(http://), C(git://), C(ext::), C(fd::)) and a URL beginning with C(-) are refused before anything is
            fetched; git's C(protocol.allow) is set to these transports for every git command.
          - Messages, results and the summary show it without credentials (C(user:token@) and the query string).
        type: str
        required: true
      version:
        description:
          - Branch, tag or commit (full or abbreviated). Defaults to O(version).
          - A name C(git check-ref-format) refuses, or one beginning with C(-) or C(+), is refused before anything is
            fetched (it is never read as a git option, so a survey field is safe).
        type: str
      path:
        description: Directory inside the repository holding the manifests. Defaults to O(path).
        type: str
      stack:
        description:
          - Stack name (a label value). Defaults to a name derived from O(sources[].repo) and O(sources[].path)
            (filter C(stacksync.k8s.stack_name)), the repository's last path segment and the path, then a hash of
            the normalised URL and path (C(infra-clusters-prod-3f0c9a1b2d)). Stack names must be unique within one
            sync.
          - "Releases before 0.2.0 derived another name (C(github.com-acme-infra-clusters-prod)). A source with a
            derived name takes the stack of its old name over on its first sync: when that stack has a record and
            the new one never completed a sync, the new stack applies (the objects become its own, none is deleted),
            then the old stack is deleted with state absent once every stack applied and pruned (it releases what the
            new stack declares and deletes only what left git), and the task says so once. To keep the old name, set
            O(sources[].stack) to it (filter C(stacksync.k8s.stack_name) with C(legacy=true))."
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
        description:
          - Variables for the C(*.j2) templates of this source. Its templates render in a sandbox (see
            O(sources[].trusted)) and get these and C(inventory_hostname) only - never C(hostvars), the other
            sources' settings or any credential.
        type: dict
      trusted:
        description:
          - Render this source's templates with full Ansible templating (the play's variables, lookups, every filter)
            and decrypt its vault data with every vault secret of the play (unless O(sources[].vault_id) is set),
            instead of in the sandbox. B(Its templates can then run commands on the controller and copy every
            variable of the play, other sources' credentials included, into the cluster), so it is only for
            repositories whose authors may run the job itself.
          - Defaults to V(false). See lookup C(stacksync.k8s.manifests) for what the sandbox allows.
        type: bool
      vault_id:
        description:
          - The vault ids whose secrets may decrypt this source's vault-encrypted files and C(!vault) values (the labels
            of the job's C(--vault-id label@source), C(default) for C(--vault-password-file)). Give each tenant its
            own vault id, so that a vault value copied from one tenant's repository into another's is not decrypted.
          - Defaults to none (no vault data is decrypted), or, with O(sources[].trusted=true), every secret of the play.
        type: list
        elements: str
      kustomize_remote:
        description:
          - Let this source's kustomizations refer to remote bases, resources and files (git repositories and URLs
            that kustomize fetches from the network on the controller). Defaults to V(false), refused before
            kustomize runs.
          - Never allowed - a C(file:) URL (the controller's own files), a query value git would read as an option
            (C(?ref=--upload-pack=...)).
        type: bool
      kubeconfig:
        description:
          - Kubeconfig (a path or a mapping) for this source, instead of the host's connection settings. When this or
            O(sources[].context) is set, this source uses it alone, none of the task's connection options (O(host),
            O(api_key), O(username), O(password), O(context), O(validate_certs), O(ca_cert), O(client_cert),
            O(client_key), O(proxy), O(no_proxy), O(proxy_headers), O(impersonate_user), O(impersonate_groups),
            O(persist_config)) and no E(K8S_AUTH_*) environment variable (its stack runs with
            O(stacksync.k8s.stack#module:k8s_auth_env=false)). A context alone is looked up in the task's O(kubeconfig)
            file, else in E(K8S_AUTH_KUBECONFIG), else in E(KUBECONFIG) or C(~/.kube/config).
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
      prune_grace:
        description: As O(stacksync.k8s.stack#module:prune_grace), for this stack. Defaults to O(prune_grace).
        type: str
        version_added: 0.2.0
      fail_on_shared:
        description:
          - As O(stacksync.k8s.stack#module:fail_on_shared), for this stack. Defaults to O(fail_on_shared); unset,
            a source confined by O(sources[].allowed_namespaces) (or the other confinement options) fails for
            objects of other stacks, any other takes them over with a warning.
        type: bool
        version_added: 0.2.0
      allowed_namespaces:
        description:
          - Confine this source's stack to these namespaces (names or globs), as
            O(stacksync.k8s.stack#module:allowed_namespaces). An object in another namespace (after O(sources[].namespace)
            filled it in) fails the stack before any write, naming the stack, the object and the rule, and a live one
            is never pruned. Confining a source also refuses cluster-scoped objects unless
            O(sources[].allow_cluster_scoped=true).
          - Defaults to O(allowed_namespaces).
        type: list
        elements: str
        version_added: 0.2.0
      allowed_kinds:
        description:
          - Confine this source's stack to these kinds (V(ConfigMap), V(Deployment.apps), V(*.cert-manager.io)), as
            O(stacksync.k8s.stack#module:allowed_kinds). Defaults to O(allowed_kinds).
        type: list
        elements: str
        version_added: 0.2.0
      denied_kinds:
        description:
          - Kinds this source's stack may not hold, as O(stacksync.k8s.stack#module:denied_kinds). Defaults to
            O(denied_kinds).
        type: list
        elements: str
        version_added: 0.2.0
      allow_cluster_scoped:
        description:
          - Whether this source's stack, once confined, may hold cluster-scoped objects, as
            O(stacksync.k8s.stack#module:allow_cluster_scoped). Defaults to O(allow_cluster_scoped).
        type: bool
        version_added: 0.2.0
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
  prune_grace:
    description: As O(stacksync.k8s.stack#module:prune_grace), for every stack without its own.
    type: str
    version_added: 0.2.0
  emit_plan:
    description:
      - In check mode, emit the B(plan) of the host (RV(plan)) -- for each stack, its source, the commit it syncs and
        what its run would create, change, delete, mark or leave waiting (see
        O(stacksync.k8s.stack#module:emit_plan)) -- and hand it to C(set_stats) as the key
        C(stacksync_plan_<host>) (the inventory name, every character but letters, digits and C(_) as C(_)), which AWX
        keeps as the job's artifact and passes to the next node of a workflow as an extra variable.
      - One key per host, because AWX merges the artifacts of job slices key by key; the plans of every host of every
        slice reach the next node. A stack whose check failed is left out of the plan (and cannot be approved).
      - Ignored outside check mode.
    type: bool
    default: false
    version_added: 0.2.0
  plan_file:
    description: In check mode, also write the host's plan (as with O(emit_plan)) to this file, as JSON. With several
      hosts, give each its own file (C("plans/{{ inventory_hostname }}.json")).
    type: path
    version_added: 0.2.0
  approved_plan:
    description:
      - Hold the run to the plan a check emitted and a person approved. The plan itself, a mapping of host to plan
        (what the artifacts of a check over several hosts hold), the path of a JSON file O(plan_file) wrote, or
        V(true) for the plan the check left as this host's artifact (the variable C(stacksync_plan_<host>) AWX passes
        from the check node).
      - Each source is checked out at the plan's commit of its stack, whatever its O(sources[].version) resolves to
        now (a version that moved is said, in the output and as a warning). Each stack is held to its own part of the
        plan as O(stacksync.k8s.stack#module:approved_plan) says, so a stack whose part is stale (or missing) fails
        before any write of it while the others apply and prune as approved; deletions over O(max_prune) listed in
        the plan are made. A plan's C(approved) list (stack names) can leave stacks out, whose deletions are then not
        approved.
      - A host the plan has no plan for is refused before anything is done on it (run the check for it, or leave it
        out with C(--limit)); a plan made for another host, changed after it was made (its digests) or not a plan
        fails the task before anything is fetched. Stacks named as before 0.2.0 are not taken over during such a run.
    type: raw
    version_added: 0.2.0
  allow_cluster_scoped:
    description: As O(stacksync.k8s.stack#module:allow_cluster_scoped), for every stack without its own.
    type: bool
    version_added: 0.2.0
  allow_empty:
    description: As O(stacksync.k8s.stack#module:allow_empty), for every stack.
    type: bool
  allowed_kinds:
    description: As O(stacksync.k8s.stack#module:allowed_kinds), for every stack without its own.
    type: list
    elements: str
    version_added: 0.2.0
  allowed_namespaces:
    description: As O(stacksync.k8s.stack#module:allowed_namespaces), for every stack without its own.
    type: list
    elements: str
    version_added: 0.2.0
  concurrency:
    description: As O(stacksync.k8s.stack#module:concurrency).
    type: int
  denied_kinds:
    description: As O(stacksync.k8s.stack#module:denied_kinds), for every stack without its own.
    type: list
    elements: str
    version_added: 0.2.0
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
  record_namespaces:
    description:
      - As O(stacksync.k8s.stack#module:record_namespaces). When the sources of the sync keep their records in more
        than one namespace, every stack gets all of them (with these), so that a source whose credentials may not list
        records cluster-wide still reads the others' (or, lacking the right, prunes nothing it cannot prove undeclared).
    type: list
    elements: str
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
    description: As O(stacksync.k8s.stack#module:wait_timeout) (seconds, or a duration such as V(5m)).
    type: raw
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

- name: A check that makes the plan to approve (AWX keeps it as the job's artifact stacksync_plan_<host>)
  stacksync.k8s.sources:
    sources: "{{ stacksync_sources }}"
    emit_plan: true
    plan_file: "/srv/plans/{{ inventory_hostname }}.json"
  check_mode: true

- name: The run after the approval, held to that plan (its commits, and exactly its deletions)
  stacksync.k8s.sources:
    sources: "{{ stacksync_sources }}"
    approved_plan: "/srv/plans/{{ inventory_hostname }}.json"

- name: Delete a stack whose repository is gone
  stacksync.k8s.sources:
    sources:
      - repo: https://github.com/example/old.git
        stack: old-apps
        state: absent
"""

RETURN = r"""
plan:
  description:
    - In check mode with O(emit_plan) or O(plan_file), the host's plan (what O(approved_plan) takes) -- C(format),
      C(host), C(digest) and C(stacks), each stack's entry as RV(stacksync.k8s.stack#module:plan) describes it, with
      the source's C(repo) (credentials removed), C(version) and C(path).
  returned: when a check emits a plan
  type: dict
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
    - The entries of RV(ansible_facts.stacksync_results), when a stack failed (a failed task sets no facts) or when
      role C(stacksync.k8s.sync) runs the task (the role sets the
      variable C(stacksync_results) from them, and the task sets no fact).
  returned: when a stack failed, or when role stacksync.k8s.sync runs the task
  type: list
  elements: dict
  sample: [{"stack": "apps", "failed": true, "msg": "Kubeconfig file not found: /etc/prod.kubeconfig (check kubeconfig)",
            "counts": {"created": 0, "configured": 0, "recreated": 0, "unchanged": 0, "pruned": 0, "skipped": 0},
            "pruning": "not run"}]
ansible_facts:
  description: Facts set by the task.
  returned: success, unless role stacksync.k8s.sync runs the task
  type: dict
  contains:
    stacksync_results:
      description:
        - One entry per stack, in apply order, with C(stack), C(repo) (credentials removed), C(version), C(path),
          C(commit), C(state), C(objects), C(depends_on), C(changed), C(failed), C(msg), C(pruning) (V(done),
          V(disabled), V(not run) or V(failed)), C(counts) (created, configured, recreated, unchanged, pruned, skipped),
          C(health) (V(not checked) unless the stack's objects, written or unchanged, were waited for -- O(wait), or a
          stack others depend on, never in check mode -- else V(healthy) or V(unhealthy)),
          C(applied) (the objects written, created, configured or recreated -- deleted and created again because an
          immutable field changed, with C(reason) --; those left unchanged are counted in
          C(counts.unchanged), not listed), C(pruned), C(skipped), C(marked) (marked for pruning, with C(prune_after); see
          O(prune_grace)), C(unhealthy) (objects waited for, written or unchanged, that are not healthy, with C(health)
          and C(health_reason)), C(warnings), C(seconds) (the time of its runs) and C(lock_wait) (the seconds they
          waited for the stack's lock held by another run, apart from C(seconds)).
      type: list
      elements: dict
      sample: [{"stack": "apps", "commit": "4f1c0e9a1b2c3d4e5f60718293a4b5c6d7e8f901", "counts": {"created": 2,
                "configured": 0, "recreated": 0, "unchanged": 40, "pruned": 1, "skipped": 0}, "pruning": "done", "failed": false}]
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.stacksync.k8s.plugins.module_utils.sources_spec import ARGUMENT_SPEC  # noqa: E402


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    module.fail_json(msg="stacksync.k8s.sources runs on the controller as an action plugin; it has no module process")


if __name__ == "__main__":
    main()
