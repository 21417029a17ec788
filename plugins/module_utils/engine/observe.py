# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Observe: read the stack's record and its live objects.

One label-selected, paginated list per group/kind in (recorded | desired), all namespaces; these
lists serve both the no-op check and the prune plan. A kind that cannot be listed is *unverified*:
warned about, never guessed (its objects are neither checked nor pruned). An object labelled with the
stack's name but bound to another record namespace is another stack's (of the same name): not ours.
Before anything, desired objects that are some stack's state (a record, key or Lease, labelled
``stacksync.io/record-of``) outside the known record namespaces are refused.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.stacksync.k8s.plugins.module_utils.base.constants import RECORD_LABEL, STACK_LABEL
from ansible_collections.stacksync.k8s.plugins.module_utils.base.identity import group_kind_str
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.context import Verb
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.gcpause import gc_paused
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.objects import label, live_identity
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.prepare import record_namespaces
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.record import CM_BASE, RecordError, bound_elsewhere, could_be_state
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.client import ApiError, quote_name

#: page size of the label-selected lists of one stack's objects (kubectl pages by 500; these lists
#: are read whole anyway, so bigger pages only save round trips)
LIST_PAGE_SIZE = 1000


class Snapshot:
    """What :func:`observe` read: our live objects by identity, other stacks' claims, unverifiable kinds."""

    def __init__(self):
        self.ours = {}  # ObjectId -> (info, live object) carrying our stack label
        self.others = {}  # ObjectId -> other stack name (only looked up for desired identities)
        self.unverified = set()  # (group, kind) we could not list completely
        self.partial_namespaces = {}  # (group, kind) -> namespaces we could list instead
        self.unchecked = {}  # ObjectId -> why we could not tell whether another stack holds it (desired ones only)


class Observer(Verb):
    """Reads for one run (its :class:`.context.RunContext`; ``map`` runs calls in parallel)."""

    def list_infos(self, desired):
        """Resource (version) to list per group/kind: recorded | desired, or everything listable."""
        infos = {}
        for d in desired:
            if not d.from_crd:
                infos.setdefault(d.oid.group_kind, d.info)
        if self.opts.full_prune_scan:
            for info in self.discovery.index.listable():
                infos.setdefault(info.group_kind, info)
        for gk in self.record.group_kinds:
            if gk not in infos:
                info = self.discovery.index.lookup(gk[0], gk[1])
                if info is None and self.discovery.from_cache:
                    info = self.discovery.server_index()[0].lookup(gk[0], gk[1])  # a cache may predate the kind
                if info is not None:
                    infos[gk] = info
        return infos

    def list(self, info, selector, namespaces=None):
        if namespaces is None or not info.namespaced:
            return self.client.list(info.collection_path(None), label_selector=selector, limit=LIST_PAGE_SIZE)
        items = []
        for ns in namespaces:
            items.extend(self.client.list(info.collection_path(ns), label_selector=selector, limit=LIST_PAGE_SIZE))
        return items

    def _fetch(self, info, selector, desired_ns):
        """``(info, items or None, problem or None or "partial")`` for one kind."""
        try:
            if not info.can("list"):
                return info, None, "the API does not allow listing %s" % info.plural
            return info, self.list(info, selector), None
        except ApiError as e:
            if e.is_not_found:
                return info, [], None  # kind no longer served: nothing of it left
            if e.is_forbidden and info.namespaced and desired_ns:
                try:
                    return info, self.list(info, selector, desired_ns), "partial"
                except ApiError as e2:
                    return info, None, str(e2)
            return info, None, str(e)

    @gc_paused
    def observe(self, desired, changeset):
        """The :class:`Snapshot` of the stack (warnings go to ``changeset``)."""
        snap = Snapshot()
        self.refuse_state(desired)
        self.record.load()
        infos = self.list_infos(desired)
        desired_ns = sorted(set(d.oid.namespace for d in desired if d.oid.namespace))
        selector = "%s=%s" % (STACK_LABEL, self.opts.stack)
        for failed in sorted(self.discovery.index.failed):
            changeset.warn("API %s is unavailable (its aggregated API server did not answer discovery): its kinds "
                           "cannot be applied, checked or pruned, and no Namespace is pruned while it is" % failed)
        for info, items, problem in self.map(lambda i: self._fetch(i, selector, desired_ns), sorted(infos.values())):
            gk = info.group_kind
            if problem == "partial":
                snap.unverified.add(gk)
                snap.partial_namespaces[gk] = desired_ns
                changeset.warn("cannot list %s in all namespaces (only in %s): its objects elsewhere are not "
                               "checked or pruned" % (group_kind_str(*gk), ", ".join(desired_ns)))
            elif problem:
                snap.unverified.add(gk)
                changeset.warn("cannot list %s (%s): its objects are not checked or pruned" % (group_kind_str(*gk), problem))
                continue
            self._sort(info, items, snap)
        self._claims(desired, snap)
        return snap

    def _sort(self, info, items, snap):
        """Our live objects of one kind into ``snap.ours``; those a stack of the same name with its record in
        another namespace applied last are its (in ``snap.others``: only desired ones are looked up there)."""
        for obj in items:
            oid = live_identity(obj, info)
            other = bound_elsewhere(obj, self.opts.record_namespace)
            if other is None:
                snap.ours[oid] = (info, obj)
                continue
            self.record.related_namespaces.add(other)
            snap.others[oid] = "%s (record in namespace %s)" % (self.opts.stack, other)

    def _claims(self, desired, snap):
        """Desired objects we did not find: are they another stack's? (``snap.others``)"""
        missing = {}
        for d in desired:
            # a kind listed in the desired namespaces only (a tenant's credentials) is looked up there too
            if d.oid not in snap.ours and not d.from_crd:
                missing.setdefault(d.oid.group_kind, (d.info, set()))[1].add(d.oid)
        if not missing:
            return
        other_selector = "%s,%s!=%s" % (STACK_LABEL, STACK_LABEL, self.opts.stack)

        def fetch_others(entry):
            """``(found, unchecked)``: ``[(ObjectId, other stack)]`` and ``[(ObjectId, why)]``. Credentials that may
            not list a kind cluster-wide (a tenant's) list it in the desired objects' namespaces."""
            info, oids = entry
            try:
                try:
                    items = self.list(info, other_selector)
                except ApiError as e:
                    if not (e.is_forbidden and info.namespaced):
                        raise
                    items = self.list(info, other_selector, sorted(set(oid.namespace for oid in oids)))
            except ApiError as e:  # told to shared_objects: a stack that refuses shared objects fails on it
                return [], [(oid, str(e)) for oid in oids]
            found = []
            for obj in items:
                oid = live_identity(obj, info)
                if oid in oids:
                    found.append((oid, label(obj, STACK_LABEL)))
            return found, []

        for found, unchecked in self.map(fetch_others, list(missing.values())):
            for oid, other in found:
                snap.others[oid] = other
            snap.unchecked.update(unchecked)

    def refuse_state(self, desired):
        """Raise RecordError for a desired object that is (or could be) some stack's state outside the known
        record namespaces (prepare refused those by name): one that exists labelled as a stack's state, or any
        record, key or Lease name in a namespace that holds a stack's record. Never overwritten by a manifest."""
        known = record_namespaces(self.opts)
        suspects = [d for d in desired if could_be_state(d.oid) and d.oid.namespace not in known]
        if not suspects:
            return
        holds_records = dict(self.map(self._holds_records, sorted(set(d.oid.namespace for d in suspects))))

        def fetch(d):
            return d, self.client.get_or_none(d.info.object_path(d.oid.namespace, d.oid.name))

        found = []
        for d, live in self.map(fetch, suspects):
            owner = label(live, RECORD_LABEL) if live is not None else None
            if owner or holds_records[d.oid.namespace]:
                found.append("%s: this is %s and manifests may not declare it" % (d.named(), (
                    "the state of stack %r (labelled %s)" % (owner, RECORD_LABEL) if owner else
                    "(or could be) the state of a stack: %s" % holds_records[d.oid.namespace])))
        if found:
            raise RecordError("cannot sync stack %r: %s" % (self.opts.stack, "; ".join(found[:20])))

    def _holds_records(self, namespace):
        """``(namespace, why it is a record namespace or None)``: it holds a stack's record (or cannot be told)."""
        try:
            first = next(iter(self.client.pages(CM_BASE % quote_name(namespace), RECORD_LABEL, 1)), [])
        except ApiError as e:
            if not e.is_forbidden:
                raise
            return namespace, "whether namespace %s holds stack records cannot be told (%s)" % (namespace, e.describe())
        return namespace, "namespace %s holds stack records" % namespace if first else None
