#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: stack
short_description: Converge a stack of Kubernetes objects to a desired set (apply, label, prune)
version_added: 0.1.0
description:
  - Converges the cluster to the whole desired set of a I(stack), a named group of objects (usually one directory of a
    git repository), in one run with server-side apply. What is desired is created or updated; what the stack owns and
    no longer declares is pruned (deleted). A run where the cluster already matches writes nothing and reports
    C(changed=false).
  - Every object it applies carries the label C(stacksync.io/stack=<name>). Role C(stacksync.k8s.sync) and module
    M(stacksync.k8s.sources) run it for each source of git repositories; the notes say how it decides what to write
    and what to prune.
options:
  name:
    description:
      - Name of the stack. Must be a valid label value (at most 63 characters).
    type: str
    required: true
  resources:
    description:
      - The desired manifests (for example from the C(stacksync.k8s.manifests) lookup). The C(stacksync.io/source)
        annotation the lookup adds is removed before applying.
      - Objects annotated C(stacksync.io/ignore=true) are neither applied nor pruned.
      - A single mapping is taken as a list of one manifest, as C(kubernetes.core.k8s) takes its C(definition). It is
        what C(lookup('stacksync.k8s.manifests', dir)) without C(wantlist=True) returns for a tree holding one
        manifest (Ansible unwraps a list of one). C(query()) always returns a list.
      - Ignored with O(state=absent). Mutually exclusive with O(src) and O(resources_file).
    type: list
    elements: dict
    default: []
  resources_file:
    description:
      - A JSON file on the managed host holding the desired manifests (a list of mappings), read by the module
        instead of O(resources).
      - When the module runs as a separate process (a remote host, C(become), C(async), C(delegate_to), another
        Python), the action plugin passes O(resources) (or what O(src) rendered) in such a file, written to the
        task's temporary directory next to the module and removed with it after the run, so that the manifests are
        not encoded into the module's arguments.
      - Ignored with O(state=absent). Mutually exclusive with O(resources) and O(src).
    type: path
  src:
    description:
      - A directory (or single manifest file) on the controller whose manifests are the desired set, rendered by the
        action plugin exactly as the C(stacksync.k8s.manifests) lookup renders it (templates in the sandbox, with
        O(render.template_vars) only, vault data with the secrets of O(render.vault_id) only; O(render.trusted=true)
        for the task's variables and every secret), with the options in O(render).
      - Faster than O(resources) for large stacks, as the manifests are not templated into the task's arguments.
        A directory that fails to render fails the task before anything is written.
      - A relative path is relative to the playbook directory, as for the lookup. Mutually exclusive with O(resources)
        and O(resources_file).
    type: path
  state:
    description:
      - V(present) applies O(resources) and prunes what the stack no longer declares.
      - V(absent) deletes every object of the stack, then its record.
    type: str
    choices: [ present, absent ]
    default: present
  phase:
    description:
      - V(all) applies then prunes.
      - V(apply) only applies (and widens the record); use it for every source first when several sources are
        synced together, so an object moving between sources is never deleted.
      - V(prune) only prunes, with O(resources) as the desired set; nothing is applied.
    type: str
    choices: [ all, apply, prune ]
    default: all
  prune:
    description:
      - Delete objects of the stack that are no longer in O(resources).
    type: bool
    default: true
  allow_empty:
    description:
      - Allow pruning to an empty desired set. Without it, an empty O(resources) with O(prune=true) fails, which
        protects against a broken checkout wiping the stack.
    type: bool
    default: false
  propagation_policy:
    description:
      - Deletion propagation policy used when pruning.
    type: str
    choices: [ Background, Foreground, Orphan ]
    default: Background
  namespace:
    description:
      - Namespace for namespaced objects that do not name one.
      - Defaults to the namespace of the kubeconfig context, else V(default).
      - Cluster-scoped objects never get a namespace (scope comes from API discovery); a cluster-scoped manifest
        that names one is applied without it, with a warning.
    type: str
  field_manager:
    description:
      - Field manager name for server-side apply.
    type: str
    default: stacksync
  takeover_managers:
    description:
      - Field managers whose fields on the stack's objects are taken over, as people's tools' changes are (see the
        README's Drift section and C(docs/adoption.md)); before applying, their
        C(managedFields) entries become the stack's (guarded by C(resourceVersion)), so the apply removes whatever git
        does not say and writes back what it does. Fields of any other manager (controllers, autoscalers, admission
        defaults, C(status)) are never touched and are not drift.
      - Each entry is a manager name, or a prefix ending in C(*), optionally followed by C(:Update) or C(:Apply) to
        match only that operation (V(acme-deployer), V(acme-*:Update)).
      - Default (not set) is V(kubectl*) (client-side C(apply), C(create), C(edit), C(label), C(annotate), C(patch),
        C(replace), C(set), C(scale), C(rollout) and server-side C(apply)), V(before-first-apply) and
        V(OpenAPI-Generator) (the Python client and the C(kubernetes.core.k8s) module). Give the list in full to
        change it; an empty list takes nothing over.
      - An object annotated C(stacksync.io/ssa=merge) is never taken over; C(stacksync.io/ssa=if-not-present) is
        created when missing and never changed after.
    type: list
    elements: str
  force_conflicts:
    description:
      - Take over fields owned by other field managers (git is the source of truth, out-of-band edits are
        reverted). With V(false) a conflict fails the object.
    type: bool
    default: true
  fail_on_shared:
    description:
      - Fail before any write if a desired object belongs to another stack, instead of taking it over with a
        warning naming the other stack. V(true) also fails for objects another deployment tool manages (Helm,
        kubectl's client-side apply, Argo CD, Flux; one GET per object the stack does not hold yet).
      - Unset (the default), a confined stack (any of O(allowed_namespaces), O(allowed_kinds), O(denied_kinds),
        O(allow_cluster_scoped) set) fails for objects of other stacks, so that a tenant cannot take over what
        another stack (the platform's) holds in its namespaces; an unconfined stack takes them over. V(false) lets
        a confined stack take them over too (a stack renamed by a change of its repository or path).
    type: bool
  recreate_on_immutable:
    description:
      - When an apply is refused because an immutable field changed, delete and recreate the object. Without it
        (and without the C(stacksync.io/recreate-on-immutable=true) annotation on the object) the run fails naming
        the object and field.
      - This includes a kind that lets only some of its fields change and refuses any other change whole, like a
        StatefulSet's C(volumeClaimTemplates), C(serviceName) or C(podManagementPolicy) (the field named is C(spec)).
      - A refusal counts as one of an immutable field when the API server says so in the words of its validation --
        C(field is immutable) (a Deployment's or Job's C(selector), a Job's C(template), a Secret's C(type), a
        ConfigMap or Secret set C(immutable)), C(may not change once set) (a Service's C(clusterIP)), C(cannot change
        roleRef) (a RoleBinding's), C(is immutable after creation), C(fields other than ...), C(updates to ... are
        forbidden).
      - A recreated object is reported as V(recreated) (in check mode too, as what the run would do), counted under
        C(recreated) in RV(counts), and a warning names it and the field the server refused to change. Deleting it
        deletes what it owns (with C(Foreground) propagation, a Deployment's Pods, a Job's Pods), and a Service gets a
        new cluster IP unless git sets one.
    type: bool
    default: false
  record_namespace:
    description:
      - Namespace of the stack's record ConfigMap, HMAC key Secret and lock Lease. Must exist.
      - The stack is its name and this namespace; each object it applies is annotated
        C(stacksync.io/record-namespace) with it, so two stacks of one name whose records live in different
        namespaces never prune each other's objects. Changing it therefore makes another stack; after the first run
        with the new namespace, delete the old record and key (C(stacksync-<name>), C(stacksync-<name>-key)) from
        the old one (until then, what the old record declares is released to it rather than deleted).
    type: str
    default: kube-system
  record_namespaces:
    description:
      - Other namespaces that hold the records of stacks (other tenants' O(record_namespace)). Before deleting
        anything, a run reads the records of every stack, so that it never deletes what another stack still
        declares (it releases it instead), nor the objects of another stack of the same name whose record lives
        elsewhere. It lists them cluster-wide (C(list) on C(configmaps) at cluster scope, label
        C(stacksync.io/record-of)); where its credentials may not, it reads them in O(record_namespace), in these
        namespaces and in those its objects name, and if it may not read one of them it deletes nothing it cannot
        prove undeclared, naming the missing right.
      - Only the records in O(record_namespace) and these namespaces are believed (a record is a ConfigMap anyone
        who may write ConfigMaps in its namespace can make); what one found elsewhere declares is neither pruned
        nor handed over (skipped, reason C(record-elsewhere), naming it). List here the record namespaces of stacks
        that other jobs sync on the cluster.
      - M(stacksync.k8s.sources) sets it to the record namespaces of all the stacks of the sync.
    type: list
    elements: str
  commit:
    description:
      - Source commit to store in the stack's record.
    type: str
  wait:
    description:
      - Wait until every object of the stack the run applies or finds unchanged is ready (Deployments, StatefulSets
        and DaemonSets rolled out, Jobs complete, CRDs established, Namespaces active, PVCs bound, APIServices
        available, anything else with a C(Ready) condition when it has one), not only the objects it writes; a run
        with nothing to write waits too, so a retry after a timeout fails as the first run did. Objects it leaves
        alone (ignored, V(if-not-present), declared by another source) are not waited for.
      - Each object is judged first from what the run already read (the apply's answer, the lists of the plan); only
        those not ready yet are read again, every second, so a run whose objects are all ready makes no extra
        request. An object that will not become ready without a change (a stalled rollout, a failed Job) fails the
        run at once.
      - Not in check mode (nothing is waited for), nor with O(phase=prune).
    type: bool
    default: false
  wait_timeout:
    description:
      - How long to wait for readiness (O(wait)), for a recreated object to go away, and for the lock.
      - A number of seconds (V(300)) or a duration as for O(prune_grace) (V(90s), V(5m), V(1h), V(1h30m); units
        C(s), C(m), C(h), C(d), C(w)), as Flux writes its timeouts. Anything else fails the task before any request.
    type: raw
    default: 300
  wait_condition:
    description:
      - Readiness rules replacing the built-in one for a kind.
    type: list
    elements: dict
    suboptions:
      kind:
        description: Kind the rule applies to.
        type: str
        required: true
      group:
        description: API group of the kind (any group when omitted; V("") is the core group).
        type: str
      expression:
        description: JMESPath expression evaluated on the live object; the object is ready when it is truthy.
        type: str
        required: true
  concurrency:
    description:
      - Maximum number of API requests in flight (applies and deletes run in parallel within an ordering stage).
    type: int
    default: 16
  full_prune_scan:
    description:
      - List every listable kind of the cluster with the stack's label when pruning, instead of only the
        group/kinds in the stack's record. For recovery (for example after the record was deleted).
    type: bool
    default: false
  max_prune:
    description:
      - The prune budget of one run, for the day a broken render or a wrong path makes most of a stack look removed
        from git. A number of objects (V(25)), or a percentage of the objects the stack owns on the cluster
        (V(30%), rounded up); V(100%) means no limit.
      - A run that would delete more fails before any write, listing what it would delete; check mode fails the
        same way. Raise it for that one run when the deletions are intended.
      - Default (not set) is half the stack's objects, and never fewer than 10 objects.
      - Not applied with O(state=absent), nor to an empty desired set with O(allow_empty=true), which both delete the
        whole stack on purpose, nor to the deletions of an O(approved_plan) (approved over the budget on purpose).
      - With O(prune_grace), an object counts in the run that deletes it, not in the one that marks it.
    type: str
  approved_plan:
    description:
      - Hold the run to a plan a check made (O(emit_plan) / O(plan_file)) and a person approved. The plan itself (the
        mapping RV(plan) returned), or the path of the JSON file O(plan_file) wrote.
      - The run recomputes everything and does only what the plan says. It fails B(before any write), saying what
        differs, when it would delete or mark an object the plan does not list, when an object it would delete is
        another one than the plan's (another uid) or changed since in what decides its prune (its decision
        fingerprint), when the objects to apply changed since (other objects, or other fields the apply would write
        back), when its O(commit) or O(source) is not the plan's, or when the plan has no entry for the stack. A status
        update or a controller's bump of C(resourceVersion) changes none of that.
      - A deletion of the plan that no longer applies (the object is gone, declared again, or now kept for a reason
        of its own) is skipped and reported (RV(skipped_objects), code V(plan-skipped), and a warning); an object
        the plan lists only as marked or waiting for its prune grace is not deleted (code V(not-approved)).
      - So a plan only narrows a run, and whoever supplies one cannot make it delete anything it would not delete on
        its own; its digests (sha256) refuse a plan changed or cut short by accident, before any request. The plan's
        deletions may exceed O(max_prune), which is what approving them is for.
      - A plan whose C(approved) list (a list of stack names) leaves the stack out approves none of its deletions;
        the run applies as the plan says and prunes nothing.
    type: raw
  source:
    description:
      - The source the stack comes from (an opaque identity, for example the normalised repository URL and path);
        C(stacksync.k8s.sources) sets it for every source.
      - The stack's record remembers it. A run with another O(source) than the recorded one fails before any write
        (nothing is applied or pruned), naming both sources and how to move the stack on purpose, so two sources
        that resolve to one stack name never overwrite or prune each other's objects.
      - A stack whose record names no source (an older record, or runs without O(source)) is adopted by the first
        run that has one. A run without O(source) is not checked and leaves the recorded source as it is.
    type: str
  other_sources:
    description:
      - Set by C(stacksync.k8s.sources) (not meant to be set by hand) with what the other sources of the same run
        declare, whatever became of their applies. Each entry has C(stack), C(source), C(namespace) (the namespace
        of its objects that name none), C(earlier) (whether it comes before this stack in the run's order) and
        C(objects), each V([apiVersion, kind, namespace, name]) (none, V(null), for a source that could not be
        rendered; what carries its stack's label is then left to it, and its record counts as declared).
      - Nothing they declare is pruned by this stack; it is released to their stack, as when another stack's record
        declares it.
      - An object one of them declares too stays with the stack that owns it (its label), or, when neither does, with
        the one that comes first; this stack leaves it alone (a C(skipped_objects) entry with the code
        V(declared-twice), and a warning naming both sources) until that source stops declaring it.
    type: list
    elements: dict
  report_unchanged:
    description:
      - List the objects left unchanged in RV(applied) too, each with C(action) V(unchanged).
      - By default RV(applied) lists the objects the run created or configured (and, with O(wait), the unchanged ones
        the wait found not healthy); the others are counted in RV(counts), as role C(stacksync.k8s.sync) reports them.
        Ansible copies a task's result entry by entry several times, so listing 10,000 unchanged objects costs
        about 0.4 s of CPU per run.
    type: bool
    default: false
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
      - Runs the module in the controller's own process when it would run there anyway, with the same Python (see the notes).
  async:
    support: full
    details: An async task always runs as a module process.
  bypass_host_loop:
    support: none
  check_mode:
    support: full
    details:
      - Applies are server-side dry runs, so what validation and admission would refuse fails check mode with the
        run's message; prunes are reported, not done. No object of the stack is written.
      - The objects of a namespace the run would create are dry-run in a stand-in namespace
        (C(stacksync-check-<random>), with the labels and annotations the namespace would have), created for the
        check and deleted before it ends; without the rights to create and delete namespaces they are listed with
        C(not_validated) in RV(applied).
  diff_mode:
    support: full
    details: Per-object before/after for applied and pruned objects; Secret values are redacted.
  platform:
    platforms: posix
notes:
  - Stamps. Every applied object gets the label C(stacksync.io/stack=<name>), the annotation C(stacksync.io/checksum)
    (SHA-256 of the object's own desired manifest in canonical form, identity included, the stack's own stamps, status
    and server-set metadata excluded; HMAC-SHA256 with a per-stack key for Secrets, so the annotation cannot confirm a
    guessed value) and the annotation C(stacksync.io/owner) (a short hash of the stack name and the object's own
    identity, so a label copied onto another object never makes it the stack's).
  - What is pruned. An object is pruned only if its label and owner mark say it is the stack's, its identity is not
    desired, its checksum is not that of any desired manifest, it has no ownerReferences, it does not carry
    C(stacksync.io/ignore=true), and every apply in the run succeeded. A Namespace (or CRD) is not pruned while it
    still holds objects that are not pruned with it (judged on discovery read from the API server, never on the
    cache; an object with owners counts as pruned with it only if its owners are), nor while some API group cannot be
    discovered. A run that would delete more objects than O(max_prune) allows fails before any write, listing them.
  - Objects of other stacks. An object that another stack's record still declares is not deleted but released to
    that stack (its label and owner mark become the other stack's), with a warning. An object already being deleted
    (finalizers pending) is reported under RV(terminating), not deleted again and not counted as a change. Manifests
    may not declare any stack's state (a record, key or Lease in O(record_namespace) or O(record_namespaces), or an
    existing object labelled C(stacksync.io/record-of) anywhere).
  - Fenced deletes. Each DELETE carries the uid and resourceVersion the plan saw; an object changed since (taken over
    by another stack, edited) is read again and decided again, never deleted on a stale view. Each is sent only after
    a write of the stack's Lease that the server accepted at most a tenth of the Lease's duration before (6 seconds by
    default); a run that lost or outlived its lock stops before deleting.
  - The record. The stack's record is a ConfigMap C(stacksync-<name>) in O(record_namespace) with the label
    C(stacksync.io/record-of=<name>), holding the stack checksum, the commit, the group/kinds the stack uses (the only
    kinds listed when pruning) and the time of the last sync that changed something. The HMAC key for Secret
    checksums is the Secret C(stacksync-<name>-key) there, and the Lease C(stacksync-<name>) there locks the stack
    while a run writes.
  - Drift. Whether the cluster matches is decided from field ownership (C(managedFields)), as the API server decides
    it, never by comparing values the server normalises; fields that people's tools wrote (O(takeover_managers)) are
    taken over and reverted to git, fields of controllers are left alone. Check mode and C(applied) entries report
    each drift (field manager and field paths).
  - "Diffs. With C(--diff), each changed object is shown as YAML (both sides, so Ansible prints the changed lines),
    without the C(stacksync.io/checksum) and C(stacksync.io/owner) annotations, Secret values redacted; a created or
    pruned object is one line (its whole body with C(-vv))."
  - "Progress. A long run reports its progress while it applies, waits and prunes, at most one line every 5 seconds
    (the environment variable E(STACKSYNC_PROGRESS_INTERVAL) sets the seconds): for example C(stack web: applied
    400/1000 objects), with the seconds since the run started. In the controller's process the lines are shown with
    C(-v); a module process writes them to the managed host's log (syslog or journal)."
  - Where it runs. Like any module, on the task's host through its connection. When that host is the controller
    itself (connection C(local), no C(become), no C(delegate_to), no C(async), no task C(environment)) and its
    C(ansible_python_interpreter) is the Python running C(ansible-playbook) (as for the implicit C(localhost), or when
    set to C({{ ansible_playbook_python }})), the action plugin runs the same code in the controller's process
    instead of starting a module process, with the same parameters, checks, results and Secret redaction, and about
    half a second less per task. Set the variable C(stacksync_in_process=false) to always start a module process.
    With C(-vvv) the task says which way it ran.
author:
  - stacksync.k8s contributors (@stacksync)
"""

EXAMPLES = r"""
- name: Sync the apps stack from a directory of a git checkout (rendered on the controller)
  stacksync.k8s.stack:
    name: apps
    src: "{{ checkout_dir }}/apps"
    render:
      root: "{{ checkout_dir }}"
      exclude: ["legacy/**"]
      template_vars:
        replicas: 3
      vault_id: [apps]  # its !vault values are encrypted with --vault-id apps@...
    commit: "{{ checkout.after }}"

- name: The same with the manifests passed as a list
  stacksync.k8s.stack:
    name: apps
    resources: "{{ lookup('stacksync.k8s.manifests', checkout_dir ~ '/apps', wantlist=True) }}"
    commit: "{{ checkout.after }}"

- name: Apply two sources, then prune both (an object moving between them is never deleted)
  stacksync.k8s.stack:
    name: "{{ item.stack }}"
    resources: "{{ item.resources }}"
    phase: apply
  loop: "{{ sources }}"

- name: Prune the same sources
  stacksync.k8s.stack:
    name: "{{ item.stack }}"
    resources: "{{ item.resources }}"
    phase: prune
  loop: "{{ sources }}"

- name: Check, and keep the plan of what a sync would do
  stacksync.k8s.stack:
    name: apps
    src: "{{ checkout_dir }}/apps"
    commit: "{{ checkout.after }}"
    plan_file: /srv/plans/apps.json
  check_mode: true

- name: Later, once a person read and approved it, sync exactly that
  stacksync.k8s.stack:
    name: apps
    src: "{{ checkout_dir }}/apps"
    commit: "{{ checkout.after }}"
    approved_plan: /srv/plans/apps.json

- name: Mark what left git and delete it a day later (unless it comes back)
  stacksync.k8s.stack:
    name: apps
    src: "{{ checkout_dir }}/apps"
    prune_grace: 1d

- name: Remove a stack and everything it owns
  stacksync.k8s.stack:
    name: old-apps
    state: absent
"""

RETURN = r"""
applied:
  description:
    - Desired objects the run created or configured, and what happened to them (V(created), V(configured), or
      V(recreated) -- deleted and created again because an immutable field changed (O(recreate_on_immutable)), with
      C(reason), the field and the server's message).
      With O(report_unchanged), the objects left unchanged too (V(unchanged)); without it, only those that O(wait)
      found not healthy; the others are counted in RV(counts).
    - With O(wait), each entry carries C(health) (V(Healthy), V(Progressing), V(Degraded), ...) and C(health_reason),
      what the wait found last.
    - An object configured because the cluster drifted from git carries C(drift), a list of the field managers whose
      changes are reverted (C(manager), C(operation), C(fields) as paths; never values).
    - In check mode, an object the API server could not validate with a dry run carries C(not_validated), the reason
      (its CRD is created by the same sync, no rights to create and delete the stand-in namespace it would be checked
      in, ...); every other object created or configured was accepted by the server's dry run.
  returned: always
  type: list
  elements: dict
  sample: [{"apiVersion": "v1", "kind": "ConfigMap", "namespace": "web", "name": "settings", "action": "configured",
            "drift": [{"manager": "kubectl-label", "operation": "Update", "fields": ["metadata.labels.team"]}]}]
pruned:
  description: Objects deleted (or, in check mode, that would be deleted).
  returned: always
  type: list
  elements: dict
  sample: [{"apiVersion": "v1", "kind": "ConfigMap", "namespace": "web", "name": "old", "reason": null}]
skipped_objects:
  description:
    - Objects neither applied nor pruned, each with a C(reason) (the message), a C(code) (V(ignored), V(not-applied),
      V(not-owned), V(checksum-desired), V(has-owner), V(prune-disabled), V(not-deletable), V(holds-others),
      V(contents-unknown), V(delete-refused), V(release-refused), V(records-unreadable) -- the credentials may not
      read the records that would prove nobody else declares it --, V(record-unknown) -- applied before objects named
      their record namespace, while a stack of the same name keeps its record elsewhere,
      V(record-elsewhere) -- a record outside the run's record namespaces declares it (see O(record_namespaces)) --,
      V(declared-twice) -- another source of the run declares it too and keeps it --, V(grace) -- marked for pruning,
      waiting for O(prune_grace) to pass, with C(prune_after) --, V(plan-skipped) -- a deletion of the O(approved_plan)
      that no longer applies --, V(not-approved) -- the O(approved_plan) lists it only as marked) and the C(phase)
      (V(apply) or V(prune)). An object that changed after the run observed it keeps the code of the rule that spares it now (for
      example V(not-owned) once another stack took it over; V(other-record) for a stack of the same name).
    - Not called C(skipped), which Ansible reads as "the task was skipped".
  returned: always
  type: list
  elements: dict
  sample: [{"apiVersion": "v1", "kind": "Namespace", "namespace": null, "name": "web",
            "reason": "still contains objects not pruned by this stack: ConfigMap web/manual"}]
warnings:
  description: Warnings of the run (taken over objects, kinds that could not be listed, ...), shown as Ansible warnings.
  returned: when there are warnings
  type: list
  elements: str
terminating:
  description:
    - Objects of the stack that were deleted by an earlier run and are still there, waiting for their finalizers.
      They are not deleted again and do not make the task changed.
  returned: always
  type: list
  elements: dict
  sample: [{"apiVersion": "v1", "kind": "ConfigMap", "namespace": "web", "name": "old",
            "reason": "terminating: deleted, waiting for its finalizers"}]
released:
  description:
    - Objects no longer in this stack that another stack's record still declares. They are not deleted; their
      stack label and owner mark now name that stack (C(stack)), which applies them on its next run.
  returned: always
  type: list
  elements: dict
  sample: [{"apiVersion": "v1", "kind": "ConfigMap", "namespace": "web", "name": "shared", "stack": "other"}]
marked:
  description:
    - With O(prune_grace), objects that left git and were marked for pruning by this run (in check mode, would be),
      each with C(prune_after), when a run may delete it (the server's time, or null when it is not known yet).
  returned: always
  type: list
  elements: dict
  sample: [{"apiVersion": "v1", "kind": "ConfigMap", "namespace": "web", "name": "old",
            "prune_after": "2026-05-02T10:00:01Z"}]
unmarked:
  description: With O(prune_grace), objects back in git whose prune mark this run removed (in check mode, would remove).
  returned: always
  type: list
  elements: dict
plan:
  description:
    - In check mode with O(emit_plan) or O(plan_file), the plan of the run (what O(approved_plan) takes).
    - C(format) (V(stacksync.k8s/plan/v1)), C(host) (set by C(stacksync.k8s.sources)), C(digest) (sha256 of the
      stacks' digests), C(stacks) with this stack's entry -- C(source), C(commit), C(record_namespace), C(apply) (the
      numbers to C(create) and C(change), and a C(digest) of them), C(prune), C(mark), C(wait) (objects by
      C("<apiVersion> <Kind>") and namespace, each V([name, uid, resourceVersion, fingerprint]), with the time to prune
      after for C(mark) and C(wait)), C(over_budget) when the deletions exceed O(max_prune), and its own C(digest).
    - About 85 bytes per object to delete or mark (850 KB for 10,000); creates and changes only count.
  returned: when a check emits a plan
  type: dict
  sample: {"format": "stacksync.k8s/plan/v1", "host": null, "digest": "sha256:5e0c...", "stacks": {"apps": {
           "source": null, "commit": "3f2a...", "record_namespace": "kube-system",
           "apply": {"create": 1, "change": 0, "digest": "sha256:9b1d..."},
           "prune": {"v1 ConfigMap": {"web": [["old", "6f1c0d2e-...", "48213", "a4a398bbedac"]]}},
           "mark": {}, "wait": {}, "digest": "sha256:0c77..."}}}
checksum:
  description: Checksum of the whole stack (aggregate of the per-object C(stacksync.io/checksum) annotations).
  returned: success
  type: str
  sample: sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae
counts:
  description: Number of objects per outcome.
  returned: always
  type: dict
  sample: {"created": 1, "configured": 2, "recreated": 0, "unchanged": 10, "pruned": 1, "skipped": 0, "terminating": 0,
           "released": 0, "marked": 0, "unmarked": 0}
lock_wait:
  description:
    - Seconds the run waited for the stack's lock (its Lease) held by another run (0 if it did not wait); the wait is
      said at once (a C(-v) line, and a line of role C(stacksync.k8s.sync)) naming the holder and when its Lease
      expires, and as a warning once the lock is held. A run that was interrupted holds it until its Lease expires.
  returned: always
  type: float
  sample: 0.0
failed_phase:
  description: V(prune) when the run failed because the prune was refused before any write (an empty desired set
    without O(allow_empty), or more deletions than O(max_prune) allows). A run an O(approved_plan) refuses fails
    before any write too, without C(failed_phase) (it applies nothing either).
  returned: when the run failed that way
  type: str
  sample: prune
api_requests:
  description: API requests made by the run, per HTTP method.
  returned: always
  type: dict
  sample: {"GET": 9}
diff:
  description: Per-object before/after (diff mode only). Secret C(data) values are replaced by markers.
  returned: when diff mode is enabled
  type: list
  elements: dict
"""

import gc  # noqa: E402
import os  # noqa: E402

from ansible_collections.stacksync.k8s.plugins.module_utils.base.progress import Progress, interval_from_env  # noqa: E402
from ansible_collections.stacksync.k8s.plugins.module_utils.common import StackModule  # noqa: E402
from ansible_collections.stacksync.k8s.plugins.module_utils.runner import (  # noqa: E402
    ARGUMENT_SPEC,
    MUTUALLY_EXCLUSIVE,
    RunFailed,
    run_stack,
)


def main():
    # a process for one run: nothing to gain from collecting reference cycles among the thousands of
    # manifests and live objects it reads (a full collection walks all of them); it exits after
    gc.disable()
    module = StackModule(argument_spec=ARGUMENT_SPEC, mutually_exclusive=MUTUALLY_EXCLUSIVE, supports_check_mode=True)
    try:
        progress = Progress(module.log, interval_from_env(os.environ), prefix="stack %s: " % module.params["name"])
        result = run_stack(module.params, check_mode=module.check_mode, diff=module._diff, warn=module.warn,
                           verbosity=module._verbosity, progress=progress)
    except RunFailed as e:
        module.fail_json(msg=e.msg, **e.result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
