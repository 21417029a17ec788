# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The plan: apply stages, what to apply, and the prune plan -- every "is this object deleted?"
decision in one pure function (:func:`prune_plan`), with a typed reason for each object kept.

The facts that need the API (what a Namespace or CRD still holds, which identities other stacks'
records declare) are gathered by :mod:`.prune` and fed in as data. ``sync``, check mode,
``stack_info`` and ``state: absent`` all plan with it, so they cannot disagree.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.stacksync.k8s.plugins.module_utils.base.constants import CHECKSUM_ANNOTATION
from ansible_collections.stacksync.k8s.plugins.module_utils.base.identity import identity_digest
from ansible_collections.stacksync.k8s.plugins.module_utils.base.vocabulary import option
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import changeset as C
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.diff import in_sync
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.drift import drift as drift_of
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.drift import entries as drift_entries
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.gcpause import gc_paused
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.objects import (
    annotation,
    is_ignored,
    live_api_version,
    owned_by,
    prune_disabled,
)

#: Apply stages (prune runs them in reverse). Stage 0 must exist before anything can go in it:
#: Namespaces and CRDs (after which we wait for CRDs to be Established and re-read discovery).
#: Stage 1: cluster/namespace prerequisites other objects refer to at admission time. Stage 3:
#: webhooks and API services last, so a webhook whose backend is not yet deployed cannot block the
#: applies of the stack that deploys it. Everything else (incl. custom resources) is stage 2.
STAGES = {
    ("", "Namespace"): 0,
    ("apiextensions.k8s.io", "CustomResourceDefinition"): 0,
    ("scheduling.k8s.io", "PriorityClass"): 1,
    ("storage.k8s.io", "StorageClass"): 1,
    ("node.k8s.io", "RuntimeClass"): 1,
    ("networking.k8s.io", "IngressClass"): 1,
    ("", "ResourceQuota"): 1,
    ("", "LimitRange"): 1,
    ("", "ServiceAccount"): 1,
    ("rbac.authorization.k8s.io", "ClusterRole"): 1,
    ("rbac.authorization.k8s.io", "Role"): 1,
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): 1,
    ("rbac.authorization.k8s.io", "RoleBinding"): 1,
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"): 3,
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"): 3,
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"): 3,
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"): 3,
    ("apiregistration.k8s.io", "APIService"): 3,
}
DEFAULT_STAGE = 2
NAMESPACE_GK = ("", "Namespace")
CRD_GK = ("apiextensions.k8s.io", "CustomResourceDefinition")
#: Kinds whose objects serve other kinds: deleting one changes what discovery says.
KIND_SERVING = frozenset((CRD_GK, ("apiregistration.k8s.io", "APIService")))


def stage_of(group_kind):
    return STAGES.get(tuple(group_kind), DEFAULT_STAGE)


def by_stage(items, key=lambda x: x):
    """``[(stage, [items])]`` in apply order; ``key`` gives an item's ObjectId."""
    stages = {}
    for item in items:
        stages.setdefault(stage_of(key(item).group_kind), []).append(item)
    return sorted(stages.items())


class Reason(str):
    """Why an object is left alone: the message, with a constant :attr:`code` (one of the codes below)."""

    def __new__(cls, code, message):
        out = str.__new__(cls, message)
        out.code = code
        return out


# reason codes (typed: the role and tests read these, never the message)
NOT_OWNED = "not-owned"
STILL_DESIRED = "still-desired"
CHECKSUM_DESIRED = "checksum-desired"
HAS_OWNER = "has-owner"
IGNORED = "ignored"
PRUNE_DISABLED = "prune-disabled"
IF_NOT_PRESENT = "if-not-present"
NOT_DELETABLE = "not-deletable"
TERMINATING = "terminating"
HOLDS_OTHERS = "holds-others"
CONTENTS_UNKNOWN = "contents-unknown"
DELETE_REFUSED = "delete-refused"
RELEASE_REFUSED = "release-refused"
NOT_APPLIED = "not-applied"
#: the facts say it may be another stack's: the records that would tell cannot all be read
RECORDS_UNREADABLE = "records-unreadable"
#: stamped before objects named their record namespace, and a stack of the same name has its record elsewhere
RECORD_UNKNOWN = "record-unknown"
#: a record outside the run's record namespaces declares it: not believed enough to hand it over, nor ignored
RECORD_ELSEWHERE = "record-elsewhere"
#: bound to another record namespace (a stack of the same name took it over after the observation)
OTHER_RECORD = "other-record"
#: changed since it was observed (its DELETE's preconditions failed) and no longer to be deleted
CHANGED = "changed"
DECLARED_TWICE = "declared-twice"  # another source of the run declares it too, and keeps it (see .run_sources)

TERMINATING_REASON = Reason(TERMINATING, "terminating: deleted, waiting for its finalizers")


def is_terminating(obj):
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


def prune_decision(obj, oid, stack, desired_ids, desired_checksums):
    """Why live ``obj`` must *not* be pruned (a :class:`Reason`), or ``None`` if it is a candidate.

    A candidate is the stack's (label and identity-bound mark), not desired by identity, whose
    checksum is not that of any desired manifest (both tests must agree), has no
    ownerReferences (controller children inherit labels) and is not ignore-annotated.
    """
    if not owned_by(obj, stack, oid):
        return Reason(NOT_OWNED, "not owned by this stack (label or owner mark does not match its identity)")
    if oid in desired_ids:
        return Reason(STILL_DESIRED, "still desired")
    if annotation(obj, CHECKSUM_ANNOTATION) in desired_checksums:
        return Reason(CHECKSUM_DESIRED, "its checksum matches a desired manifest")
    meta = obj.get("metadata") or {}
    if meta.get("ownerReferences"):
        return Reason(HAS_OWNER, "has ownerReferences (managed by a controller)")
    if is_ignored(obj):
        return Reason(IGNORED, "ignore annotation set")
    if prune_disabled(obj):
        return Reason(PRUNE_DISABLED, "prune disabled (stacksync.io/prune: disabled): left in place")
    return None


def contents_reason(found):
    """The reason a Namespace / CRD is kept, from what :mod:`.prune` found it holds (None: nothing)."""
    if isinstance(found, str):
        return Reason(CONTENTS_UNKNOWN, "kept: " + found)
    if not found:
        return None
    text = "still contains objects not pruned by this stack: " + ", ".join(str(b) for b in found[:5])
    if len(found) > 5:
        text += " and %d more" % (len(found) - 5)
    return Reason(HOLDS_OTHERS, text)


class PrunePlan:
    """What a prune would do. Lists of ``(ObjectId, info, live object)``; ``kept`` items carry a
    :class:`Reason` fourth, ``releases`` the stack they are handed to."""

    def __init__(self):
        self.rules = None  # (stack, desired ids, desired checksums): to decide again on a re-read object
        self.facts = (None, None, None)  # (declared elsewhere, contents, kept) it was made with
        self.candidates = []  # to delete
        self.kept = []  # the stack's objects left alone, with why
        self.terminating = []  # deleted earlier, waiting for finalizers: not deleted again
        self.releases = []  # still declared by another stack's record: handed to it (its name, a plain str)
        self.release_namespaces = {}  # ObjectId -> record namespace of the stack it is handed to (when known)
        self.holders = []  # candidates that are Namespaces / CRDs: their contents decide
        self.owned = 0  # the stack's live objects (the prune budget's base)
        # to mark and marked not due (.grace.split), approved deletions that no longer apply (.approval.narrow), server time
        self.marks, self.waiting, self.notes, self.now = [], [], [], None

    @property
    def ids(self):
        return set(oid for oid, _i, _o in self.candidates)


@gc_paused
def prune_plan(ours, stack, desired_ids, desired_checksums, declared_elsewhere=None, contents=None, kept=None):
    """The prune plan of a stack: pure.

    :param ours: ``{ObjectId: (info, live object)}`` of the objects carrying the stack's label.
    :param declared_elsewhere: ``{identity digest: [stack]}`` from the other stacks' records (None: not read).
    :param contents: ``{ObjectId: [blocker ObjectId] | problem string}`` for the Namespaces / CRDs among
        the candidates (None: not read yet; they stay candidates and are listed in ``holders``).
    :param kept: ``{ObjectId: Reason}``: candidates the facts say cannot be proven to be the stack's to
        delete (the records that would tell cannot all be read, or may be another stack's of the same name).
    """
    plan = PrunePlan()
    plan.rules = (stack, desired_ids, desired_checksums)
    plan.facts = (declared_elsewhere, contents, kept)
    for oid, (info, obj) in ours.items():
        if owned_by(obj, stack, oid):
            plan.owned += 1
        reason = prune_decision(obj, oid, stack, desired_ids, desired_checksums)
        if reason is None and is_terminating(obj):
            plan.terminating.append((oid, info, obj, TERMINATING_REASON))
            continue
        if reason is None and not info.can("delete"):
            reason = Reason(NOT_DELETABLE, "the API does not allow deleting %s" % info.plural)
        if reason is not None:
            if reason.code != STILL_DESIRED:
                plan.kept.append((oid, info, obj, reason))
            continue
        others = (declared_elsewhere or {}).get(identity_digest(oid))
        if others:
            other = sorted(others, key=lambda c: (str(c), getattr(c, "record_namespace", "")))[0]
            plan.releases.append((oid, info, obj, str(other)))
            plan.release_namespaces[oid] = getattr(other, "record_namespace", None)
            continue
        if oid in (kept or {}):
            plan.kept.append((oid, info, obj, kept[oid]))
            continue
        if oid.group_kind in (NAMESPACE_GK, CRD_GK):
            plan.holders.append(oid)
            found = (contents or {}).get(oid)
            reason = contents_reason(found) if contents is not None else None
            if reason is not None:
                plan.kept.append((oid, info, obj, reason))
                continue
        plan.candidates.append((oid, info, obj))
    # in identity order; sorting what is left is cheaper than sorting every live object first
    for entries in (plan.candidates, plan.kept, plan.terminating, plan.releases):
        entries.sort(key=_first)
    plan.holders.sort()
    return plan


def _first(entry):
    return entry[0]


#: default prune budget: half the stack's objects, and never fewer than this many
DEFAULT_MIN_PRUNE = 10


def prune_limit(max_prune, total):
    """How many objects one run may delete from a stack of ``total`` live objects.

    ``max_prune``: ``None`` (default: half the stack, at least :data:`DEFAULT_MIN_PRUNE`), a count
    (``"25"``, ``25``) or a percentage of ``total`` (``"30%"``, rounded up). Raises ValueError for
    anything else.
    """
    if max_prune is None or max_prune == "":
        return max(DEFAULT_MIN_PRUNE, (total + 1) // 2)
    text = str(max_prune).strip()
    try:
        if text.endswith("%"):
            percent = float(text[:-1])
            if not 0 <= percent <= 100:
                raise ValueError
            return int(-(-percent * total // 100))
        count = int(text)
        if count < 0:
            raise ValueError
        return count
    except ValueError:
        raise ValueError("%s must be a number of objects (25) or a percentage of the stack (30%%), got %r"
                         % (option("max_prune"), max_prune)) from None


def prune_budget_problem(candidates, total, max_prune):
    """Why deleting ``candidates`` (``[ObjectId]``) from a stack of ``total`` objects exceeds the prune
    budget (a message listing them), or None."""
    limit = prune_limit(max_prune, total)
    if len(candidates) <= limit:
        return None
    shown = ", ".join(str(oid) for oid in candidates[:20])
    if len(candidates) > 20:
        shown += " and %d more" % (len(candidates) - 20)
    return ("refusing to prune %d of the stack's %d objects: more than %s allows (%s = %d); nothing was "
            "deleted. If this is intended, run again with a larger %s (a count, or a percentage such as "
            "100%%). Would delete: %s" % (len(candidates), total, option("max_prune"),
                                          "default: half, at least %d" % DEFAULT_MIN_PRUNE if max_prune in (None, "")
                                          else max_prune, limit, option("max_prune"), shown))


def _walked(manifest, live, field_manager, patterns, take_over):
    """``(in sync, drift)`` of ``live`` against the stamped ``manifest`` (its checksum matches): field ownership
    (:mod:`.drift`; ``drift`` None without managedFields, where the values are compared)."""
    found = drift_entries(live)
    if not found:
        return in_sync(manifest, live, CHECKSUM_ANNOTATION), None
    drift = drift_of(manifest, live, field_manager, patterns, take_over=take_over, found=found)
    return not drift, drift


def in_sync_by_ownership(d, live, field_manager, patterns, verified=None):
    """Whether applying desired ``d`` would change ``live``: the checksum says whether git changed,
    field ownership (:mod:`.drift`) whether the cluster did. ``d.drift`` gets what drifted. Objects
    without managedFields (very old servers) fall back to comparing values. ``verified``
    (:class:`.insync.Verified`): an object an earlier run found in sync and no one changed since is in sync."""
    checksum = annotation(d.manifest, CHECKSUM_ANNOTATION)
    if annotation(live, CHECKSUM_ANNOTATION) != checksum:
        return False
    take_over = d.policy != "merge"
    if verified is not None and verified.seen(live, checksum, take_over):
        return True
    synced, drift = _walked(d.manifest, live, field_manager, patterns, take_over)
    if drift is not None:
        d.drift = drift
    if synced and verified is not None:
        verified.note(live, checksum, take_over)
    return synced


def remember_written(d, obj, field_manager, patterns, verified):
    """Note in ``verified`` the object ``obj`` the server answered an apply of desired ``d`` with, if it is in sync
    (the next run finds it unchanged without walking it); ``d`` is left as it is."""
    checksum = annotation(d.manifest, CHECKSUM_ANNOTATION)
    if annotation(obj, CHECKSUM_ANNOTATION) != checksum:
        return
    take_over = d.policy != "merge"
    if _walked(d.manifest, obj, field_manager, patterns, take_over)[0]:
        verified.note(obj, checksum, take_over)


@gc_paused
def apply_plan(desired, ours, field_manager, patterns, verified=None):
    """``(to_apply, unchanged, ignored)`` of the desired objects (``[Desired]``) against ``ours``
    (``{ObjectId: (info, live)}``): to write, already in sync, opted out (``ignored``: the ignore
    annotation, or ``if-not-present`` for an object that exists). ``verified``: see :func:`in_sync_by_ownership`
    (it then holds what this plan found in sync)."""
    if verified is not None:
        verified.start()
    to_apply, unchanged, ignored = [], [], []
    for d in desired:
        live = ours.get(d.oid)
        live = live[1] if live is not None else None
        if d.ignored or (live is not None and (d.policy == "if-not-present" or is_ignored(live))):
            ignored.append(d)
        elif live is not None and in_sync_by_ownership(d, live, field_manager, patterns, verified):
            unchanged.append(d)
        else:
            to_apply.append(d)
    return to_apply, unchanged, ignored


class Plan:
    """What a run would do: the snapshot it was made on, the applies, the prune plan (None: no prune), and the
    desired objects left to another source of the run that declares them too (``yielded``: ``[(Desired, message)]``)."""

    def __init__(self, snap, to_apply, unchanged, ignored, prune, yielded=()):
        self.snap = snap
        self.to_apply = to_apply
        self.unchanged = unchanged
        self.ignored = ignored
        self.prune = prune
        self.yielded = list(yielded)
        self.has_facts = False  # the prune plan has its facts (see StackManager.with_facts)

    @property
    def deletes(self):
        return bool(self.prune is not None and (self.prune.candidates or self.prune.releases or self.prune.marks))

    def staying_kinds(self, stack):
        """Group/kinds of the stack's own live objects the prune plan leaves in place."""
        going = self.prune.ids if self.prune is not None else set()
        return set(oid.group_kind for oid, (_i, obj) in self.snap.ours.items()
                   if oid not in going and owned_by(obj, stack, oid))


def report_plan(plan, changeset, applying):
    """Entries for what the plan leaves alone: unchanged, opted out, kept, terminating."""
    for d in plan.unchanged:
        changeset.add(d.oid, d.api_version, C.UNCHANGED, C.PHASE_APPLY)
    for d in plan.ignored:
        changeset.add(d.oid, d.api_version, C.SKIPPED, C.PHASE_APPLY, IGNORED, "ignore annotation set")
    for d, message in plan.yielded:
        changeset.add(d.oid, d.api_version, C.SKIPPED, C.PHASE_APPLY, DECLARED_TWICE, message)
    if not applying:  # phase=prune: what is not in sync is reported, not written
        for d in plan.to_apply:
            changeset.add(d.oid, d.api_version, C.SKIPPED, C.PHASE_APPLY, NOT_APPLIED, "not applied (phase=prune)")
    if plan.prune is not None:
        for oid, info, obj, reason in plan.prune.kept:
            changeset.add(oid, live_api_version(obj, info), C.SKIPPED, C.PHASE_PRUNE, reason.code,
                          str(reason))
        for oid, info, obj, reason in plan.prune.terminating:
            changeset.add(oid, live_api_version(obj, info), C.TERMINATING, C.PHASE_PRUNE,
                          reason.code, str(reason))
