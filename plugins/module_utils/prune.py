# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Prune: gather the facts the prune plan needs, then carry the plan out.

Facts (read only when something would be deleted, always on fresh discovery): which identities the
other stacks' records declare, and what each Namespace / CRD among the candidates still holds.
Execution: releases first, then deletes in reverse stage order (custom resources before their
CRDs, Namespaces last), each with a uid precondition, each stage only while the lock is held.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.stacksync.k8s.plugins.module_utils import changeset as C
from ansible_collections.stacksync.k8s.plugins.module_utils import plan as P
from ansible_collections.stacksync.k8s.plugins.module_utils.client import MERGE_PATCH, ApiError
from ansible_collections.stacksync.k8s.plugins.module_utils.constants import CHECKSUM_ANNOTATION, OWNER_ANNOTATION, STACK_LABEL
from ansible_collections.stacksync.k8s.plugins.module_utils.contents import namespace_blockers, namespace_scan_rounds
from ansible_collections.stacksync.k8s.plugins.module_utils.diff import object_diff
from ansible_collections.stacksync.k8s.plugins.module_utils.discovery import ResourceInfo
from ansible_collections.stacksync.k8s.plugins.module_utils.identity import identity_digest
from ansible_collections.stacksync.k8s.plugins.module_utils.objects import is_secret, live_api_version, live_identity, owner_mark
from ansible_collections.stacksync.k8s.plugins.module_utils.observe import LIST_PAGE_SIZE
from ansible_collections.stacksync.k8s.plugins.module_utils.progress import NO_PROGRESS, Steps
from ansible_collections.stacksync.k8s.plugins.module_utils.wait import wait_gone

CRDS_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"


def _established(crd):
    return any(c.get("type") == "Established" and c.get("status") == "True"
               for c in (crd.get("status") or {}).get("conditions") or [])


class Pruner:
    """Reads the prune facts and carries out a :class:`.plan.PrunePlan` for one run."""

    def __init__(self, client, discovery, record, opts, map_fn, ensure_lock, progress=NO_PROGRESS):
        self.client = client
        self.progress = progress
        self.discovery = discovery
        self.record = record
        self.opts = opts
        self.map = map_fn
        self.ensure_lock = ensure_lock

    # -- facts ----------------------------------------------------------------------------------
    def facts(self, first):
        """``(declared_elsewhere, contents)`` for a first plan (made without them)."""
        if not first.candidates and not first.releases:
            return {}, {}
        declared = self.record.declared_elsewhere()
        going = [(oid, obj) for oid, _i, obj in first.candidates if identity_digest(oid) not in declared]
        prune_ids = set(oid for oid, _o in going)
        prune_uids = set((obj.get("metadata") or {}).get("uid") for _oid, obj in going)
        contents = {}
        for oid in first.holders:
            if oid in prune_ids:
                contents[oid] = self.contents(oid, prune_ids, prune_uids)
        return declared, contents

    def contents(self, oid, prune_ids, prune_uids):
        """What a Namespace or CRD we would delete would take with it: ``[ObjectId]`` or a problem string."""
        if oid.group_kind == P.NAMESPACE_GK:
            return self.namespace_contents(oid.name, prune_ids, prune_uids)
        return self.crd_contents(oid.name, prune_ids)

    def namespace_contents(self, namespace, prune_ids, prune_uids):
        """What keeps ``namespace`` (some, not necessarily all: the scan stops at the first certain
        one), or a string saying why its contents cannot be known. Every listable namespaced kind of
        *fresh* discovery is read, likely holders first; owned objects are judged once all is read."""
        index, _changed = self.discovery.fresh()
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
        for oid, info, obj, other in plan.releases:
            self._release(oid, info, obj, other, changeset, dry_run)
        pruned = set()
        step = Steps(self.progress, "dry-run pruned" if dry_run else "pruned", len(plan.candidates))

        def delete(c):
            refused = self._delete(c, dry_run)
            step()
            return c, refused

        for _stage, items in reversed(P.by_stage(plan.candidates, key=lambda c: c[0])):
            if not dry_run:
                self.ensure_lock()
            for (oid, info, obj), refused in self.map(delete, items):
                if refused:
                    remaining.add(oid.group_kind)
                    changeset.add(oid, live_api_version(obj, info), C.SKIPPED, C.PHASE_PRUNE, P.DELETE_REFUSED, refused)
                    changeset.warn("%s: %s; it stays recorded and the next run retries" % (oid, refused))
                    continue
                changeset.add(oid, live_api_version(obj, info), C.PRUNED, C.PHASE_PRUNE)
                pruned.add(oid)
                if self.opts.diff:
                    entry = object_diff(obj, None, is_secret(oid), self.opts.diff_full)
                    entry["before_header"] = entry["after_header"] = str(oid)
                    changeset.diff.append(entry)
        return remaining, pruned

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

    def _delete(self, candidate, dry_run):
        """``None`` if deleted (or already gone), else the reason it was not."""
        oid, info, obj = candidate
        if dry_run:
            return None
        uid = (obj.get("metadata") or {}).get("uid")
        try:
            # the uid precondition makes sure we delete the object we examined, not a replacement
            self.client.delete(info.object_path(oid.namespace, oid.name), propagation_policy=self.opts.propagation_policy,
                               preconditions={"uid": uid} if uid else None)
            return None
        except ApiError as e:
            return None if e.is_not_found else "delete refused: %s" % e.describe()

    def _release(self, oid, info, obj, other, changeset, dry_run):
        """Hand an object we no longer declare to ``other``, a stack that still does: its label and mark
        become theirs, our checksum goes (their next run applies it)."""
        problem = None
        if not dry_run:
            meta = obj.get("metadata") or {}
            body = {"metadata": {"resourceVersion": meta.get("resourceVersion"), "labels": {STACK_LABEL: other},
                                 "annotations": {OWNER_ANNOTATION: owner_mark(other, oid), CHECKSUM_ANNOTATION: None}}}
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
        changeset.warn("%s is no longer in stack %r but stack %r still declares it: released to %r, not deleted"
                       % (oid, self.opts.stack, other, other))
