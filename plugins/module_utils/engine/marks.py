# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Prune marks (``prune_grace``): written on what left git, removed from what came back. The I/O of :mod:`.grace`.

A mark is two merge patches under the mark's field manager (:func:`.grace.mark_manager`): the first sets the annotation to ``pending`` (guarded by
the resourceVersion the run observed, as a fenced delete is), and the server stamps its time on the manager's
``Update`` entry of managedFields; the second writes that time, rounded up to the second, into the annotation.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.stacksync.k8s.plugins.module_utils.base.constants import PRUNE_MARK_ANNOTATION
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import changeset as C
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import grace as G
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.context import Verb
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.objects import live_api_version
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.client import MERGE_PATCH, ApiError

CHANGED = "changed"  # as .plan.CHANGED: changed since it was observed, decided again by the next run


class Marker(Verb):
    """Writes and removes prune marks for one run (its :class:`.context.RunContext`; ``map`` runs calls in
    parallel)."""

    def _patch(self, info, oid, value, resource_version=None):
        meta = {"annotations": {PRUNE_MARK_ANNOTATION: value}}
        if resource_version:
            meta["resourceVersion"] = resource_version
        return self.client.request("PATCH", info.object_path(oid.namespace, oid.name),
                                   params={"fieldManager": G.mark_manager(self.opts.field_manager)}, body={"metadata": meta},
                                   content_type=MERGE_PATCH)

    def _mark(self, oid, info, obj, grace):
        """Mark one object; the time it may be pruned after (None: the mark stays pending, the next run stamps it)."""
        first = self._patch(info, oid, G.PENDING, (obj.get("metadata") or {}).get("resourceVersion"))
        at = G.write_time(first, G.mark_manager(self.opts.field_manager))
        if at is None:
            return None
        try:
            self._patch(info, oid, G.format_time(at), (first.get("metadata") or {}).get("resourceVersion"))
        except ApiError:
            return None  # changed in between: still pending, marked again (later) by the next run
        return at + grace

    def mark(self, marks, grace, changeset, dry_run):
        """Mark ``marks`` (``[(oid, info, obj, prune after if marked now)]``) and report them."""
        if not marks:
            return
        if not dry_run:
            self.ensure_lock(prove=True)

        def one(m):
            oid, info, obj, after = m
            if dry_run:
                return m, after, None
            try:
                return m, self._mark(oid, info, obj, grace), None
            except ApiError as e:
                return m, None, e

        for (oid, info, obj, _after), after, error in self.map(one, marks):
            version = live_api_version(obj, info)
            if error is None:
                changeset.add(oid, version, C.MARKED, C.PHASE_PRUNE,
                              prune_after=None if after is None else G.format_time(after))
            elif error.is_conflict or error.is_not_found:
                changeset.add(oid, version, C.SKIPPED, C.PHASE_PRUNE, CHANGED,
                              "changed since the run observed it: not marked for pruning; the next run decides again")
            else:
                changeset.add(oid, version, C.SKIPPED, C.PHASE_PRUNE, G.GRACE, "marking it for pruning was refused: %s"
                              % error.describe())
                changeset.warn("%s: marking it for pruning was refused (%s); the next run retries" % (oid, error.describe()))

    def unmark(self, items, changeset, dry_run):
        """Remove the prune mark of desired objects back in git (``[(Desired, info, live)]``); a removal that fails
        fails the run (a mark left behind would count from its old time if the object left git again)."""
        if not items:
            return
        if not dry_run:
            self.ensure_lock()

        def one(item):
            d, info, _live = item
            if dry_run:
                return d, None
            try:
                self._patch(info or d.info, d.oid, None)
                return d, None
            except ApiError as e:
                return d, e

        for d, error in self.map(one, items):
            if error is None or error.is_not_found:
                changeset.add(d.oid, d.api_version, C.UNMARKED, C.PHASE_APPLY)
            else:
                changeset.add(d.oid, d.api_version, C.FAILED, C.PHASE_APPLY, None,
                              "%s is back in git but its prune mark could not be removed: %s" % (d.named(), error.describe()))
