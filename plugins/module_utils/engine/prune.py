# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Prune: gather the facts the prune plan needs, then carry the plan out.

Facts (read only when something would be deleted, always on fresh discovery): which identities the
other stacks' records declare (in every record namespace: :func:`.record.read_records`), which
candidates cannot be proven to be the stack's to delete, and what each Namespace / CRD among the
candidates still holds.

Execution: releases first, then deletes in reverse stage order (custom resources before their CRDs,
Namespaces last). Fenced: each DELETE carries the uid *and* resourceVersion the plan was made on, so
an object changed since (taken over by another stack, edited) is not deleted -- it is read again and
decided again by the plan's own rules (:func:`.plan.prune_plan`); and each attempt is sent only while
the run holds its lock by a Lease write the server accepted a moment before (``ensure_lock(prove=...)``:
at the start of each batch, and no longer ago than the lock's ``proof_age`` for each attempt).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.stacksync.k8s.plugins.module_utils.base.constants import (
    CHECKSUM_ANNOTATION,
    OWNER_ANNOTATION,
    RECORD_NAMESPACE_ANNOTATION,
    STACK_LABEL,
)
from ansible_collections.stacksync.k8s.plugins.module_utils.base.identity import identity_digest
from ansible_collections.stacksync.k8s.plugins.module_utils.base.progress import Steps
from ansible_collections.stacksync.k8s.plugins.module_utils.base.vocabulary import option
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import changeset as C
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import plan as P
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.contents import namespace_blockers, namespace_scan_rounds
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.context import Verb
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.diff import object_diff
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.grace import GRACE, due
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.lock import LockError
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.objects import is_secret, live_api_version, live_identity, owner_mark
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.observe import LIST_PAGE_SIZE
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.plan_file import fingerprint
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.prepare import record_namespaces
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.record import bound_elsewhere, is_unbound, read_records
from ansible_collections.stacksync.k8s.plugins.module_utils.health.wait import wait_gone
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.client import MERGE_PATCH, ApiError
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.discovery import ResourceInfo

CRDS_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
#: times one object is read again and its DELETE retried after its preconditions failed
FENCE_ATTEMPTS = 3
# outcomes of one fenced delete
PRUNED, REFUSED, KEPT, TERMINATING, RELEASE, LOST = "pruned", "refused", "kept", "terminating", "release", "lost"


def _established(crd):
    return any(c.get("type") == "Established" and c.get("status") == "True"
               for c in (crd.get("status") or {}).get("conditions") or [])


def unbelieved_reason(claim):
    """Why an object that a record outside the run's record namespaces declares is neither pruned nor handed over."""
    return P.Reason(P.RECORD_ELSEWHERE, (
        "not pruned: a record of stack %r in namespace %s declares it, and %s is not a record namespace of this run "
        "(%s, %s): not handed over to that stack either (anyone who may write ConfigMaps there can make such a "
        "record); list %s in %s if that stack is synced by another job, else delete that record"
        % (str(claim), claim.record_namespace, claim.record_namespace, option("record_namespace"),
           option("record_namespaces"), claim.record_namespace, option("record_namespaces"))))


def held_by_finalizers(obj):
    """Whether a deleted object (as the run observed it) has finalizers: it may stay, terminating, after its DELETE."""
    return bool(((obj or {}).get("metadata") or {}).get("finalizers"))


class Pruner(Verb):
    """Reads the prune facts and carries out a :class:`.plan.PrunePlan` for one run (its :class:`.context.RunContext`:
    the run's prune grace period is None for state absent, see StackManager.delete_all)."""

    # -- facts ----------------------------------------------------------------------------------
    def facts(self, first):
        """``(declared_elsewhere, contents, kept)`` for a first plan (made without them)."""
        later = [(oid, obj) for oid, _i, obj, _a in first.marks + first.waiting]  # prune_grace: may be released too
        if not first.candidates and not first.releases and not later:
            return {}, {}, {}
        declared, kept = self.claims([(oid, obj) for oid, _i, obj in first.candidates] + later)
        going = [(oid, obj) for oid, _i, obj in first.candidates if identity_digest(oid) not in declared and oid not in kept]
        prune_ids = set(oid for oid, _o in going)
        prune_uids = set((obj.get("metadata") or {}).get("uid") for _oid, obj in going)
        contents = {}
        for oid in first.holders:
            if oid in prune_ids:
                contents[oid] = self.contents(oid, prune_ids, prune_uids)
        return declared, contents, kept

    def claims(self, candidates):
        """``(declared elsewhere, kept)`` for ``[(ObjectId, live object)]``, from the records of every stack:
        what the other stacks declare, and the candidates that cannot be proven to be this stack's to
        delete (:data:`.plan.RECORDS_UNREADABLE`, :data:`.plan.RECORD_UNKNOWN`)."""
        stack, own = self.opts.stack, self.opts.record_namespace
        known = set(record_namespaces(self.opts))
        records = read_records(self.client, known | self.record.related_namespaces, self.map).believe(known)
        declared = records.claims(stack, own)
        unbelieved = records.claims(stack, own, unbelieved=True)
        namesakes = records.namesakes(stack, own)
        kept = {}
        for oid, obj in candidates:
            if identity_digest(oid) in declared:
                continue
            elsewhere = unbelieved.get(identity_digest(oid))
            if elsewhere:
                kept[oid] = unbelieved_reason(elsewhere[0])
                continue
            if records.missing:
                kept[oid] = P.Reason(P.RECORDS_UNREADABLE, (
                    "not pruned: cannot prove that no other stack declares it, as the records of other stacks "
                    "cannot all be read; the credentials lack: %s" % "; ".join(records.missing)))
            elif namesakes and is_unbound(obj):
                kept[oid] = P.Reason(P.RECORD_UNKNOWN, (
                    "not pruned: it was applied before objects named their stack's record namespace, and a stack "
                    "also named %r keeps its record in namespace %s: it may be that stack's. Delete it by hand, or "
                    "annotate it %s=<the record namespace of its stack>"
                    % (stack, ", ".join(namesakes), RECORD_NAMESPACE_ANNOTATION)))
        return declared, kept

    def contents(self, oid, prune_ids, prune_uids):
        """What a Namespace or CRD we would delete would take with it: ``[ObjectId]`` or a problem string."""
        if oid.group_kind == P.NAMESPACE_GK:
            return self.namespace_contents(oid.name, prune_ids, prune_uids)
        return self.crd_contents(oid.name, prune_ids)

    def namespace_contents(self, namespace, prune_ids, prune_uids):
        """What keeps ``namespace`` (some, not necessarily all: the scan stops at the first certain
        one), or a string saying why its contents cannot be known. Every listable namespaced kind of
        *fresh* discovery is read, likely holders first; owned objects are judged once all is read."""
        index, _changed = self.discovery.server_index()
        if index.failed:
            return "discovery of %s failed, so what the namespace holds cannot be known" % ", ".join(sorted(index.failed))

        def fetch(info):
            try:
                found = []
                for page in self.client.pages(info.collection_path(namespace)):
                    objects = [(live_identity(o, info), o) for o in page]
                    certain = namespace_blockers(namespace, objects, prune_ids, prune_uids, complete=False)
                    if certain:
                        return certain, found
                    found.extend(objects)
                return [], found
            except ApiError as e:
                if e.is_not_found or e.status == 405:
                    return [], []
                return None, "cannot list %s in it: %s" % (info.plural, e.describe())

        listed = []
        for infos in namespace_scan_rounds(index.listable()):
            for certain, found in self.map(fetch, infos):
                if certain is None or certain:
                    return found if certain is None else certain
                listed.extend(found)
        return namespace_blockers(namespace, listed, prune_ids, prune_uids)

    def crd_contents(self, name, prune_ids):
        """Objects of CRD ``name`` not pruned with it, read through the CRD itself (not discovery)."""
        crd = self.client.get_or_none(CRDS_PATH + name)
        if crd is None:
            return []
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        served = [v.get("name") for v in spec.get("versions") or [] if v.get("served")]
        if not served or not names.get("plural") or not spec.get("group"):
            return "it serves no version its objects could be listed in"
        info = ResourceInfo(spec["group"], served[0], names.get("kind"), names["plural"],
                            spec.get("scope", "Namespaced") == "Namespaced", ("list",))
        try:
            items = self.client.list(info.collection_path(None), limit=LIST_PAGE_SIZE)
        except ApiError as e:
            if e.is_not_found and not _established(crd):
                return []  # never served: nothing of its kind can be stored
            return "cannot list its objects: %s" % e.describe()
        return [oid for oid in (live_identity(o, info) for o in items) if oid not in prune_ids]

    # -- execution ------------------------------------------------------------------------------
    def execute(self, plan, changeset, dry_run):
        """Release and delete what ``plan`` says; returns ``(group/kinds left behind, pruned ids)``."""
        remaining = set(oid.group_kind for oid, _i, _o, _r in plan.kept if oid.group_kind in (P.NAMESPACE_GK, P.CRD_GK))
        if plan.releases and not dry_run:
            self.ensure_lock(prove=True)
        for oid, info, obj, other in plan.releases:
            self._release(oid, info, obj, (other, plan.release_namespaces.get(oid)), changeset, dry_run)
        pruned = set()
        step = Steps(self.progress, "dry-run pruned" if dry_run else "pruned", len(plan.candidates))

        def delete(c):
            try:
                outcome = self._delete(plan, c, dry_run)
            except LockError as e:  # the lock is lost: this one (and the rest) not sent; the others reported
                return c, (LOST, e)
            step()
            return c, outcome

        for _stage, items in reversed(P.by_stage(plan.candidates, key=lambda c: c[0])):
            if not dry_run:
                self.ensure_lock(prove=0)  # each batch starts with a Lease write the server accepts
            lost = None
            for candidate, (outcome, detail) in self.map(delete, items):
                if outcome == LOST:
                    lost = lost or detail
                elif outcome == PRUNED:
                    self._pruned(candidate[0], candidate[1], detail, changeset)
                    pruned.add(candidate[0])
                    if held_by_finalizers(detail):  # it may stay, terminating: its kind stays recorded (later runs
                        remaining.add(candidate[0].group_kind)  # list it and report it terminating; then it narrows)
                else:
                    self._not_pruned(candidate, outcome, detail, changeset, remaining)
            if lost is not None:
                raise lost  # after reporting what this batch deleted before the lock was found lost
        return remaining, pruned

    def _not_pruned(self, candidate, outcome, detail, changeset, remaining):
        """Report a candidate the prune did not delete: released, refused, or kept by the plan's rules."""
        oid, info, obj = candidate
        if outcome == RELEASE:
            self._release(oid, info, detail[1], detail[0], changeset, False)
            return
        remaining.add(oid.group_kind)
        if outcome == REFUSED:
            changeset.add(oid, live_api_version(obj, info), C.SKIPPED, C.PHASE_PRUNE, P.DELETE_REFUSED, detail)
            changeset.warn("%s: %s; it stays recorded and the next run retries" % (oid, detail))
        else:
            changeset.add(oid, live_api_version(obj, info), C.TERMINATING if outcome == TERMINATING else C.SKIPPED,
                          C.PHASE_PRUNE, detail.code, str(detail))

    def _pruned(self, oid, info, obj, changeset):
        changeset.add(oid, live_api_version(obj, info), C.PRUNED, C.PHASE_PRUNE)
        if self.opts.diff:
            entry = object_diff(obj, None, is_secret(oid), self.opts.diff_full)
            entry["before_header"] = entry["after_header"] = str(oid)
            changeset.diff.append(entry)

    def wait_gone(self, plan, pruned, changeset):
        """With ``wait``: wait for the pruned objects to be gone; the ones still there at the timeout are
        reported (``terminating``, with a warning), without failing the run."""
        paths = [(info.object_path(oid.namespace, oid.name), oid) for oid, info, _o in plan.candidates if oid in pruned]
        left = set(wait_gone(self.client, paths, self.opts.wait_timeout, self.opts.poll_interval, progress=self.progress))
        for e in changeset.entries:
            if e.oid in left and e.action == C.PRUNED:
                e.extra["terminating"] = True
        if left:
            changeset.warn("still terminating after %ss (finalizers): %s" % (
                self.opts.wait_timeout, ", ".join(str(oid) for oid in sorted(left)[:20])))

    def _fence(self):
        """Before each attempt of a DELETE: the lock is ours, proven by a recent Lease write (or LockError)."""
        self.ensure_lock(prove=True)

    def _delete(self, plan, candidate, dry_run):
        """``(outcome, detail)`` of deleting one candidate: ``PRUNED`` (with the object deleted; also when it
        was gone already), ``REFUSED`` (a message), or -- when it changed since it was observed -- what the
        plan's rules say of it now: ``KEPT`` / ``TERMINATING`` (a Reason), ``RELEASE`` (``(stack, object)``)."""
        oid, info, obj = candidate
        if dry_run:
            return PRUNED, obj
        path = info.object_path(oid.namespace, oid.name)
        for _attempt in range(FENCE_ATTEMPTS):
            meta = obj.get("metadata") or {}
            # uid: the object we examined, not a replacement; resourceVersion: as we examined it, not since changed
            preconditions = dict((k, meta[k]) for k in ("uid", "resourceVersion") if meta.get(k))
            try:
                self.client.delete(path, propagation_policy=self.opts.propagation_policy,
                                   preconditions=preconditions or None, before_attempt=self._fence)
                return PRUNED, obj
            except ApiError as e:
                if e.is_not_found:
                    return PRUNED, obj
                if not e.is_conflict:
                    return REFUSED, "delete refused: %s" % e.describe()
            outcome, obj = self._again(plan, oid, info)
            if outcome is not None:
                return outcome
        return REFUSED, "delete refused: it changed each of the %d times it was read again" % FENCE_ATTEMPTS

    def _again(self, plan, oid, info):
        """Read ``oid`` again (its DELETE's preconditions failed: it changed since it was observed) and decide
        with the plan's rules on fresh facts: ``(outcome, None)``, or ``(None, fresh object)`` to delete it."""
        fresh = self.client.get_or_none(info.object_path(oid.namespace, oid.name))
        if fresh is None:
            return (PRUNED, {"metadata": {}}), None  # gone meanwhile
        other = bound_elsewhere(fresh, self.opts.record_namespace)
        if other:
            return (KEPT, P.Reason(P.OTHER_RECORD, "changed since the run observed it: a stack also named %r with its "
                                   "record in namespace %s applied it since; not deleted" % (self.opts.stack, other))), None
        stack, desired_ids, checksums = plan.rules
        declared, kept = self.claims([(oid, fresh)])
        contents = {}
        if oid.group_kind in (P.NAMESPACE_GK, P.CRD_GK):
            uids = set((o.get("metadata") or {}).get("uid") for _oid, _i, o in plan.candidates)
            contents[oid] = self.contents(oid, plan.ids, uids | {(fresh.get("metadata") or {}).get("uid")})
        again = P.prune_plan({oid: (info, fresh)}, stack, desired_ids, checksums, declared, contents, kept)
        if again.candidates:
            return self._still_due(oid, fresh)
        if again.releases:
            return (RELEASE, ((again.releases[0][3], again.release_namespaces.get(oid)), fresh)), None
        if again.terminating:
            return (TERMINATING, again.terminating[0][3]), None
        reason = again.kept[0][3] if again.kept else P.Reason(P.CHANGED, "no longer to be deleted")
        return (KEPT, P.Reason(reason.code, "changed since the run observed it; not deleted: %s" % reason)), None

    def _still_due(self, oid, fresh):
        """A changed object still to be deleted: its prune grace (its mark may be gone) and an approved plan (its
        fingerprint must be the plan's) decide again; ``(outcome, None)`` or ``(None, fresh)`` to delete it."""
        approved = self.opts.approval
        if not due(fresh, self.grace, getattr(self.client, "server_time", None)):
            return (KEPT, P.Reason(GRACE, "changed since the run observed it (its prune mark): not deleted")), None
        row = approved.rows["prune"].get(oid) if approved is not None else None
        if approved is not None and (row is None or row[2] != fingerprint(fresh)):
            return (KEPT, P.Reason(P.CHANGED, "changed since the approved plan: not deleted")), None
        return None, fresh

    def _release(self, oid, info, obj, to, changeset, dry_run):
        """Hand an object we no longer declare to ``to`` = ``(stack, its record namespace or None: ours)``, a
        stack that still does: its label, mark and record namespace become theirs, our checksum goes (their next
        run applies it)."""
        other, bound = to[0], to[1] or self.opts.record_namespace
        problem = None
        if not dry_run:
            meta = obj.get("metadata") or {}
            body = {"metadata": {"resourceVersion": meta.get("resourceVersion"), "labels": {STACK_LABEL: other},
                                 "annotations": {OWNER_ANNOTATION: owner_mark(other, oid), CHECKSUM_ANNOTATION: None,
                                                 RECORD_NAMESPACE_ANNOTATION: bound}}}
            try:
                self.client.request("PATCH", info.object_path(oid.namespace, oid.name),
                                    params={"fieldManager": self.opts.field_manager}, body=body, content_type=MERGE_PATCH)
            except ApiError as e:
                problem = "release refused: %s" % e.describe()
        if problem:
            changeset.add(oid, live_api_version(obj, info), C.SKIPPED, C.PHASE_PRUNE, P.RELEASE_REFUSED, problem, stack=other)
            changeset.warn("%s: %s; it stays and the next run retries" % (oid, problem))
            return
        changeset.add(oid, live_api_version(obj, info), C.RELEASED, C.PHASE_PRUNE, stack=other)
        changeset.warn("%s is no longer in stack %r but stack %r (record in namespace %s) still declares it: released "
                       "to it, not deleted (if stack %r is no longer synced, delete it with state absent: it then deletes "
                       "what it was released)" % (oid, self.opts.stack, other, bound, other))
