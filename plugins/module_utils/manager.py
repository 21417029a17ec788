# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The sync engine: ``StackManager(client, stack, ...).sync(resources) -> ChangeSet``.

One verb per step, in this order (fluxcd/pkg ssa's ResourceManager is the model):

1. **prepare** -- validate every manifest, resolve identity and scope through discovery (or a CRD
   in the same stack), reject unknown kinds and duplicates, compute checksums and stamp the stack
   label, checksum and owner mark. Nothing is written if this fails.
2. **observe** -- read the record and list, per group/kind in (recorded | desired), the objects
   carrying the stack label (one paginated list per kind, all namespaces). These lists serve both
   the no-op fast path and pruning.
3. **plan** -- per desired object: ``unchanged`` (live has the desired checksum and no field we
   apply drifted) or to apply; prune candidates (:func:`.plan.prune_decision`).
4. If the plan writes nothing, return: a no-op costs discovery + record + lists, zero writes, and
   takes no lock. Otherwise take the stack's Lease, observe and plan again under it, **widen** the
   record's group/kinds, **apply** stage by stage (parallel within a stage; CRDs Established and
   discovery refreshed before custom resources), **wait** if asked, **prune** in reverse stage
   order only if every apply succeeded, and **narrow** the record.

Check mode runs 1-3 and server-side dry-runs the applies; it writes nothing and takes no lock.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import contextlib
import time
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.stacksync.k8s.plugins.module_utils import plan as planner
from ansible_collections.stacksync.k8s.plugins.module_utils.client import MERGE_PATCH, ApiError
from ansible_collections.stacksync.k8s.plugins.module_utils.constants import (
    CHECKSUM_ANNOTATION,
    DEFAULT_FIELD_MANAGER,
    OWNER_ANNOTATION,
    RECORD_LABEL,
    STACK_LABEL,
)
from ansible_collections.stacksync.k8s.plugins.module_utils.diff import in_sync, object_diff
from ansible_collections.stacksync.k8s.plugins.module_utils.discovery import Discovery, ResourceInfo, UnknownKind
from ansible_collections.stacksync.k8s.plugins.module_utils.identity import group_kind_str, identity_digest, split_api_version
from ansible_collections.stacksync.k8s.plugins.module_utils.objects import (
    ManifestError,
    checksum,
    describe,
    is_ignored,
    is_secret,
    label,
    live_identity,
    normalize_secret,
    origin,
    owned_by,
    owner_mark,
    redact_secret_message,
    resolve_identity,
    secret_shape_problem,
    size_problem,
    source_of,
    stack_checksum,
    stamp,
    strip_source,
    valid_label_value,
    validate_manifest,
    wants_recreate,
)
from ansible_collections.stacksync.k8s.plugins.module_utils.record import (
    LeaseLock,
    LockError,
    RecordError,
    StackKey,
    StackRecord,
    is_state_object,
    now_rfc3339,
)
from ansible_collections.stacksync.k8s.plugins.module_utils.wait import NotReady, compile_conditions, is_ready, not_ready_reason

ALL_VERBS = ("create", "delete", "get", "list", "patch", "update", "watch")
#: page size of the label-selected lists of one stack's objects (kubectl pages by 500; these lists
#: are read whole anyway, so bigger pages only save round trips)
LIST_PAGE_SIZE = 1000
#: first delay (seconds) when polling for CRDs to be Established; doubles up to ``poll_interval``
FIRST_POLL_DELAY = 0.05


class StackError(Exception):
    """The run failed; ``changeset`` holds what was done before the failure (may be None)."""

    def __init__(self, message, changeset=None):
        super(StackError, self).__init__(message)
        self.changeset = changeset


class Desired:
    """One desired object after preparation."""

    __slots__ = ("checksum", "from_crd", "ignored", "index", "info", "manifest", "oid", "recreate", "source")

    def __init__(self, oid, info, manifest, index, from_crd=False, source=None):
        self.oid = oid
        self.info = info
        self.manifest = manifest
        self.checksum = None
        self.ignored = is_ignored(manifest)
        self.recreate = wants_recreate(manifest)
        self.index = index
        self.from_crd = from_crd
        self.source = source  # the lookup's "path#document", for messages (the annotation is stripped)


def _named(d):
    """``Kind ns/name``, with the file it came from when the lookup said so."""
    return "%s (from %s)" % (d.oid, d.source) if d.source else str(d.oid)


def _message(d, text):
    """An API error message about desired object ``d``: a Secret's values never appear in it."""
    return redact_secret_message(text, d.manifest) if is_secret(d.oid) else text


def ref_gk(ref):
    """(group, kind) of a result entry made by :func:`_ref`."""
    return split_api_version(ref["apiVersion"])[0], ref["kind"]


def _ref(oid, api_version, **extra):
    out = {"apiVersion": api_version, "kind": oid.kind, "namespace": oid.namespace or None, "name": oid.name}
    out.update(extra)
    return out


class ChangeSet:
    """What a run did (or would do, in check mode)."""

    def __init__(self):
        self.applied = []
        self.pruned = []
        self.skipped = []
        self.terminating = []  # pruned earlier, still there: finalizers pending (not a change)
        self.released = []  # no longer ours but still declared by another stack: handed over, not deleted
        self.warnings = []
        self.errors = []
        self.diff = []
        self.checksum = None
        self.check_mode = False

    def warn(self, message):
        if message not in self.warnings:
            self.warnings.append(message)

    @property
    def counts(self):
        counts = dict(created=0, configured=0, unchanged=0, pruned=len(self.pruned), skipped=len(self.skipped),
                      terminating=len(self.terminating), released=len(self.released))
        for item in self.applied:
            counts[item["action"]] = counts.get(item["action"], 0) + 1
        return counts

    @property
    def changed(self):
        return bool(self.pruned) or bool(self.released) or any(i["action"] != "unchanged" for i in self.applied)

    def result(self):
        """The module's return values. Skipped objects go under ``skipped_objects``: Ansible reads a
        true ``skipped`` key as "this task was skipped". Warnings are emitted with ``module.warn()``."""
        return dict(changed=self.changed, applied=self.applied, pruned=self.pruned, skipped_objects=self.skipped,
                    terminating=self.terminating, released=self.released, checksum=self.checksum, counts=self.counts)


class Snapshot:
    """What observe() read: our live objects by identity, other stacks' claims, unverifiable kinds."""

    def __init__(self):
        self.ours = {}  # ObjectId -> (info, live object) carrying our stack label
        self.others = {}  # ObjectId -> other stack name (only for desired identities)
        self.unverified = set()  # (group, kind) we could not list completely
        self.partial_namespaces = {}  # (group, kind) -> namespaces we could list instead


class StackManager:
    """Converge one stack. See the module documentation for the meaning of every option."""

    def __init__(self, client, stack, namespace="default", field_manager=DEFAULT_FIELD_MANAGER,
                 force_conflicts=True, prune=True, propagation_policy="Background", allow_empty=False,
                 fail_on_shared=False, recreate_on_immutable=False, record_namespace="kube-system", commit=None,
                 phase="all", concurrency=16, full_prune_scan=False, check_mode=False, diff=False, wait=False,
                 wait_timeout=300, wait_conditions=None, discovery=None, discovery_cache_dir=None,
                 lock_timeout=300, lease_duration=60, crd_timeout=60, poll_interval=1.0, max_prune=None, log=None):
        try:
            planner.prune_limit(max_prune, 0)
        except ValueError as e:
            raise StackError(str(e)) from None
        if not isinstance(stack, str) or not stack or not valid_label_value(stack):
            raise StackError("stack name %r is not a valid label value (1-63 characters: letters, digits, '-', '_', "
                             "'.', beginning and ending with a letter or digit)" % (stack,))
        self.client = client
        self.stack = stack
        self.namespace = namespace or "default"
        self.field_manager = field_manager
        self.force = force_conflicts
        self.prune_enabled = prune
        self.propagation_policy = propagation_policy
        self.allow_empty = allow_empty
        self.fail_on_shared = fail_on_shared
        self.recreate_on_immutable = recreate_on_immutable
        self.record_namespace = record_namespace
        self.commit = commit
        self.phase = phase
        self.concurrency = max(int(concurrency), 1)
        self.full_prune_scan = full_prune_scan
        self.check_mode = check_mode
        self.want_diff = diff
        self.wait = wait
        self.wait_timeout = wait_timeout
        self.wait_rules = compile_conditions(wait_conditions)
        self.lock_timeout = lock_timeout
        self.lease_duration = lease_duration
        self.crd_timeout = crd_timeout
        self.poll_interval = poll_interval
        self.max_prune = max_prune
        self.log = log or (lambda msg: None)
        self._pool = None
        self._lock = None  # the LeaseLock while a run writes
        self.discovery = discovery or Discovery(client, cache_dir=discovery_cache_dir, executor_map=self._map)
        self.record = StackRecord(client, record_namespace, stack, field_manager)
        self.key_store = StackKey(client, record_namespace, stack, field_manager)
        self._key = None
        self._crds_ready = False
        self._new_namespaces = set()
        self._dry_run_notes = []

    # -- helpers ------------------------------------------------------------------------------
    def _map(self, fn, items):
        items = list(items)
        if len(items) <= 1 or self.concurrency == 1:
            return [fn(i) for i in items]
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self.concurrency)
        return list(self._pool.map(fn, items))

    def close(self):
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    # -- 1. prepare ---------------------------------------------------------------------------
    def prepare(self, resources, changeset):
        """Validate and resolve ``resources``; returns ``[Desired]`` (raises StackError, writes nothing)."""
        if resources is None:
            resources = []
        if not isinstance(resources, list):
            raise StackError("resources must be a list of manifests")
        manifests = []
        errors = []
        for i, raw in enumerate(resources):
            if raw is None:
                continue  # empty YAML document
            try:
                validate_manifest(raw, i)
            except ManifestError as e:
                errors.append(str(e))
                continue
            # the source annotation never reaches the cluster or the checksum, but names the file in errors
            manifests.append((i, source_of(raw), strip_source(raw)))
        if errors:
            raise StackError("invalid manifests: " + "; ".join(errors[:20]))

        # kinds defined by CRDs in this same stack (served once the CRD is Established)
        crd_kinds = {}
        for _index, _source, m in manifests:
            if m.get("kind") == "CustomResourceDefinition" and split_api_version(m["apiVersion"])[0] == "apiextensions.k8s.io":
                spec = m.get("spec") or {}
                names = spec.get("names") or {}
                for ver in spec.get("versions") or []:
                    if ver.get("served", True) and names.get("kind") and names.get("plural"):
                        crd_kinds[(spec.get("group"), names["kind"], ver.get("name"))] = ResourceInfo(
                            spec.get("group"), ver.get("name"), names["kind"], names["plural"],
                            spec.get("scope", "Namespaced") == "Namespaced", ALL_VERBS)

        desired = []
        seen = {}
        for i, src, m in manifests:
            group, version = split_api_version(m["apiVersion"])
            kind = m["kind"]
            from_crd = False
            info = self.discovery.index.lookup(group, kind, version)
            if info is None and (group, kind, version) in crd_kinds:
                info, from_crd = crd_kinds[(group, kind, version)], True
            if info is None:
                try:
                    info = self.discovery.resolve(group, kind, version)
                except UnknownKind as e:
                    errors.append("%s: %s" % (describe(m, i, src), e))
                    continue
            if not info.can("patch"):
                errors.append("%s: the API does not allow server-side apply (patch) on %s" % (describe(m, i, src),
                                                                                              info.plural))
                continue
            what = describe(m, i, src)  # before resolve_identity fills in the default namespace
            oid, warning = resolve_identity(m, info, self.namespace)
            if warning:
                changeset.warn("%s (%s)" % (warning, origin(i, src)))
            if oid in seen:
                errors.append("duplicate object %s (%s and %s)" % (oid, origin(*seen[oid]), origin(i, src)))
                continue
            seen[oid] = (i, src)
            if is_state_object(oid, self.record_namespace) or label(m, RECORD_LABEL) is not None:
                errors.append("%s: this is (or could be) the state of a stack -- its record, key or Lease in "
                              "record_namespace %r, named stacksync-*, or labelled %s -- and manifests may not "
                              "declare it" % (what, self.record_namespace, RECORD_LABEL))
                continue
            if is_secret(oid):
                shape = secret_shape_problem(m)
                if shape:
                    errors.append("%s: %s" % (what, shape))
                    continue
                normalize_secret(m)
            too_large = size_problem(m, oid)
            if too_large:
                errors.append("%s: %s" % (what, too_large))
                continue
            desired.append(Desired(oid, info, m, i, from_crd, src))
        if errors:
            raise StackError("cannot sync stack %r: %s" % (self.stack, "; ".join(errors[:20])))
        return desired

    def _load_key(self, desired, create):
        if not any(is_secret(d.oid) for d in desired):
            return None
        if self._key is None:
            self._key = self.key_store.load()
            if self._key is None and create:
                self._key = self.key_store.create()
        return self._key

    def _stamp(self, desired, key):
        """Compute checksums and stamp our metadata (Secrets keyed; without a key they can't match)."""
        for d in desired:
            if is_secret(d.oid):
                d.checksum = checksum(d.manifest, d.oid, key or b"no key yet: never matches live")
            else:
                d.checksum = checksum(d.manifest, d.oid)
            stamp(d.manifest, self.stack, d.oid, d.checksum)

    # -- 2. observe ---------------------------------------------------------------------------
    def _list_infos(self, desired):
        """Resource (version) to list per group/kind: recorded | desired, or everything listable."""
        infos = {}
        for d in desired:
            if not d.from_crd:
                infos.setdefault(d.oid.group_kind, d.info)
        if self.full_prune_scan:
            for info in self.discovery.index.listable():
                infos.setdefault(info.group_kind, info)
        for gk in self.record.group_kinds:
            if gk not in infos:
                info = self.discovery.index.lookup(gk[0], gk[1])
                if info is None and self.discovery.from_cache:
                    info = self.discovery.fresh()[0].lookup(gk[0], gk[1])  # a cache may predate the kind
                if info is not None:
                    infos[gk] = info
        return infos

    def _list(self, info, selector, namespaces=None):
        if namespaces is None or not info.namespaced:
            return self.client.list(info.collection_path(None), label_selector=selector, limit=LIST_PAGE_SIZE)
        items = []
        for ns in namespaces:
            items.extend(self.client.list(info.collection_path(ns), label_selector=selector, limit=LIST_PAGE_SIZE))
        return items

    def observe(self, desired, changeset):
        snap = Snapshot()
        self.record.load()
        infos = self._list_infos(desired)
        desired_ns = sorted(set(d.oid.namespace for d in desired if d.oid.namespace))
        selector = "%s=%s" % (STACK_LABEL, self.stack)

        def fetch(info):
            try:
                if not info.can("list"):
                    return info, None, "the API does not allow listing %s" % info.plural
                return info, self._list(info, selector), None
            except ApiError as e:
                if e.is_not_found:
                    return info, [], None  # kind no longer served: nothing of it left
                if e.is_forbidden and info.namespaced and desired_ns:
                    try:
                        return info, self._list(info, selector, desired_ns), "partial"
                    except ApiError as e2:
                        return info, None, str(e2)
                return info, None, str(e)

        for failed in sorted(self.discovery.index.failed):
            changeset.warn("API %s is unavailable (its aggregated API server did not answer discovery): its kinds "
                           "cannot be applied, checked or pruned, and no Namespace is pruned while it is" % failed)
        for info, items, problem in self._map(fetch, sorted(infos.values())):
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
            for obj in items:
                snap.ours[live_identity(obj, info)] = (info, obj)

        # desired objects we did not find: are they claimed by another stack?
        missing = {}
        for d in desired:
            if d.oid not in snap.ours and not d.from_crd and d.oid.group_kind not in snap.unverified:
                missing.setdefault(d.oid.group_kind, (d.info, set()))[1].add(d.oid)
        if missing:
            other_selector = "%s,%s!=%s" % (STACK_LABEL, STACK_LABEL, self.stack)

            def fetch_others(entry):
                info, oids = entry
                try:
                    found = []
                    for obj in self._list(info, other_selector):
                        oid = live_identity(obj, info)
                        if oid in oids:
                            found.append((oid, label(obj, STACK_LABEL)))
                    return found
                except ApiError:
                    return []  # only used for a warning / fail_on_shared; the apply still happens

            for found in self._map(fetch_others, list(missing.values())):
                for oid, other in found:
                    snap.others[oid] = other
        return snap

    # -- 3. plan ------------------------------------------------------------------------------
    def plan(self, desired, snap, changeset, pruning):
        """``(to_apply, prune_candidates)``; fills unchanged / skipped entries of ``changeset``."""
        to_apply = []
        for d in desired:
            live = snap.ours.get(d.oid, (None, None))[1]
            if d.ignored or (live is not None and is_ignored(live)):
                changeset.skipped.append(_ref(d.oid, d.manifest["apiVersion"], reason="ignore annotation set"))
                continue
            if live is not None and in_sync(d.manifest, live, CHECKSUM_ANNOTATION):
                changeset.applied.append(_ref(d.oid, d.manifest["apiVersion"], action="unchanged"))
                continue
            to_apply.append(d)
        candidates = []
        if pruning:
            desired_ids = set(d.oid for d in desired)
            desired_sums = set(d.checksum for d in desired)
            for oid, (info, obj) in sorted(snap.ours.items()):
                reason = planner.prune_decision(obj, oid, self.stack, desired_ids, desired_sums)
                if reason is None and planner.is_terminating(obj):
                    changeset.terminating.append(_ref(oid, obj.get("apiVersion") or info.api_version,
                                                      reason=planner.TERMINATING))
                    continue
                if reason is None:
                    if not info.can("delete"):
                        reason = "the API does not allow deleting %s" % info.plural
                    else:
                        candidates.append((oid, info, obj))
                        continue
                if reason == "still desired":
                    continue
                changeset.skipped.append(_ref(oid, obj.get("apiVersion") or info.api_version, reason=reason))
        return to_apply, candidates

    def _shared(self, desired, snap, changeset):
        shared = [(d, snap.others[d.oid]) for d in desired if d.oid in snap.others and not d.ignored]
        if shared and self.fail_on_shared:
            raise StackError("objects belong to other stacks (fail_on_shared is set): " + "; ".join(
                "%s (stack %r)" % (_named(d), other) for d, other in shared[:20]))
        for d, other in shared:
            changeset.warn("%s belonged to stack %r; stack %r takes it over" % (_named(d), other, self.stack))

    def _record_fields(self, desired, snap, remaining_gks, pruned_ok):
        """What the record should say at the end of the run."""
        gks = set(d.oid.group_kind for d in desired) | set(remaining_gks) | set(snap.unverified)
        if not pruned_ok:
            gks |= self.record.group_kinds
        fields = dict(group_kinds=gks, checksum=stack_checksum([d.checksum for d in desired]),
                      objectCount=len(desired), objects=",".join(sorted(identity_digest(d.oid) for d in desired)))
        if self.commit:
            fields["commit"] = self.commit
        return fields

    def _record_would_change(self, fields):
        if self.record.data is None:
            return True
        data = self.record.data
        if fields["group_kinds"] != self.record.group_kinds:
            return True
        return any(key in fields and str(fields[key]) != data.get(key)
                   for key in ("checksum", "objectCount", "commit", "objects"))

    # -- 4. write -----------------------------------------------------------------------------
    def _apply_one(self, d, live, dry_run):
        """Apply one object; returns (action, object, error_message_or_None)."""
        path = d.info.object_path(d.oid.namespace, d.oid.name)
        try:
            status, obj = self.client.apply(path, d.manifest, self.field_manager, force=self.force, dry_run=dry_run,
                                            with_status=True)
        except ApiError as e:
            fields = e.immutable_fields()
            if fields and (self.recreate_on_immutable or d.recreate):
                if dry_run:
                    return "configured", None, None
                return self._recreate(d, path, fields)
            if fields:
                return None, None, ("%s: cannot change immutable field(s) %s (set recreate_on_immutable or the "
                                    "stacksync.io/recreate-on-immutable annotation to delete and recreate it): %s"
                                    % (d.oid, ", ".join(fields), _message(d, e.message)))
            if dry_run and e.is_not_found and (d.from_crd or d.oid.namespace in self._new_namespaces):
                # check mode: its CRD or namespace would be created by this run, so the dry run cannot see it
                return ("created" if live is None else "configured"), None, None
            if dry_run and e.is_not_found and d.oid.namespace and ('namespaces "%s" not found' % d.oid.namespace) in e.message:
                # check mode: the namespace may come from another source of the same sync; report, don't fail
                self._dry_run_notes.append("%s: namespace %s does not exist (yet); the dry run could not check this "
                                           "object" % (_named(d), d.oid.namespace))
                return "created", None, None
            return None, None, "%s: apply failed: %s" % (d.oid, _message(d, e.describe()))
        if live is None and status == 201:
            return "created", obj, None
        return "configured", obj, None

    def _recreate(self, d, path, fields):
        try:
            self.client.delete(path, propagation_policy="Foreground")
        except ApiError as e:
            if not e.is_not_found:
                return None, None, "%s: immutable field(s) %s changed and delete failed: %s" % (
                    d.oid, ", ".join(fields), _message(d, e.describe()))
        deadline = time.time() + self.wait_timeout
        while self.client.get_or_none(path) is not None:
            if time.time() > deadline:
                return None, None, "%s: timed out waiting for the old object to go away before recreating it" % (d.oid,)
            time.sleep(self.poll_interval)
        try:
            obj = self.client.apply(path, d.manifest, self.field_manager, force=self.force)
        except ApiError as e:
            return None, None, "%s: recreate failed: %s" % (d.oid, _message(d, e.describe()))
        return "configured", obj, None

    def _apply_all(self, to_apply, snap, changeset, dry_run):
        """Apply stage by stage; returns the list of (Desired, live object) written."""
        written = []
        for stage, items in planner.by_stage(to_apply, key=lambda d: d.oid):
            if stage > 0:
                self._after_prerequisites(to_apply, changeset, dry_run)
            if not dry_run:
                self._ensure_lock()

            def one(d):
                live = snap.ours.get(d.oid, (None, None))[1]
                before = live
                if self.want_diff and before is None and not d.from_crd:
                    before = self.client.get_or_none(d.info.object_path(d.oid.namespace, d.oid.name))
                action, obj, error = self._apply_one(d, live, dry_run)
                return d, before, action, obj, error

            results = self._map(one, items)
            for note in self._dry_run_notes:
                changeset.warn(note)
            del self._dry_run_notes[:]
            for d, before, action, obj, error in results:
                if d.oid.group_kind == planner.NAMESPACE_GK and action == "created":
                    self._new_namespaces.add(d.oid.name)
                if error:
                    changeset.errors.append(error)
                    continue
                changeset.applied.append(_ref(d.oid, d.manifest["apiVersion"], action=action))
                if self.want_diff:
                    entry = object_diff(before, obj if obj is not None else d.manifest, is_secret(d.oid))
                    entry["before_header"] = entry["after_header"] = str(d.oid)
                    changeset.diff.append(entry)
                if obj is not None:
                    written.append((d, obj))
        return written

    def _backoff(self):
        """Delays between polls: from FIRST_POLL_DELAY, doubling up to ``poll_interval`` (then constant)."""
        delay = min(FIRST_POLL_DELAY, self.poll_interval)
        while True:
            yield delay
            delay = min(delay * 2, self.poll_interval)

    def _after_prerequisites(self, to_apply, changeset, dry_run):
        """Before stage > 0: CRDs we applied must be Established and their kinds discovered."""
        if dry_run or self._crds_ready:
            return
        self._crds_ready = True
        crds = [d for d in to_apply if d.oid.group_kind == planner.CRD_GK]
        needs_crd = [d for d in to_apply if d.from_crd]
        if not crds and not needs_crd:
            return
        deadline = time.time() + self.crd_timeout
        delays = self._backoff()
        pending = list(crds)
        while pending:
            def established(d):
                obj = self.client.get_or_none(d.info.object_path("", d.oid.name))
                try:
                    return obj is not None and is_ready(d.oid, obj)
                except NotReady as e:  # e.g. NamesAccepted=False: waiting will not help
                    raise StackError("%s: %s" % (_named(d), e)) from None
            pending = [d for d, ok in zip(pending, self._map(established, pending)) if not ok]
            if not pending:
                break
            if time.time() > deadline:
                raise StackError("CRDs not Established after %ss: %s" % (self.crd_timeout, ", ".join(d.oid.name for d in pending)))
            time.sleep(next(delays))
        # aggregated discovery can lag behind Established: poll until every kind we need is served
        while True:
            index = self.discovery.refresh()
            missing = [d for d in needs_crd if index.lookup(d.oid.group, d.oid.kind, d.info.version) is None]
            if not missing:
                break
            if time.time() > deadline:
                raise StackError("kinds not served after their CRDs were applied: " + ", ".join(
                    sorted(set(group_kind_str(*d.oid.group_kind) for d in missing))))
            time.sleep(next(delays))
        for d in needs_crd:
            d.info = index.lookup(d.oid.group, d.oid.kind, d.info.version)
            d.from_crd = False

    def _wait(self, written, changeset):
        deadline = time.time() + self.wait_timeout
        pending = list(written)
        while True:
            def check(item):
                d, obj = item
                try:
                    return is_ready(d.oid, obj, self.wait_rules), None
                except NotReady as e:
                    return False, "%s: %s" % (d.oid, e)
            results = self._map(check, pending)
            failed = [msg for ok, msg in results if msg]
            if failed:
                changeset.errors.extend(failed)
                return
            pending = [item for item, (ok, _m) in zip(pending, results) if not ok]
            if not pending:
                return
            if time.time() > deadline:
                changeset.errors.append("timed out after %ss waiting for: %s" % (
                    self.wait_timeout, "; ".join("%s: %s" % (d.oid, not_ready_reason(d.oid, o, self.wait_rules))
                                                 for d, o in pending[:20])))
                return
            time.sleep(self.poll_interval)

            def refresh(item):
                d, _obj = item
                return d, self.client.get_or_none(d.info.object_path(d.oid.namespace, d.oid.name))  # None: gone
            pending = self._map(refresh, pending)

    # -- prune --------------------------------------------------------------------------------
    def _delete(self, oid, info, obj, dry_run):
        """Returns ``None`` if deleted (or already gone), else the reason it was not."""
        if dry_run:
            return None
        path = info.object_path(oid.namespace, oid.name)
        meta = obj.get("metadata") or {}
        try:
            # the uid precondition makes sure we delete the object we examined, not a replacement
            self.client.delete(path, propagation_policy=self.propagation_policy,
                               preconditions={"uid": meta.get("uid")} if meta.get("uid") else None)
            return None
        except ApiError as e:
            if e.is_not_found:
                return None
            return "delete refused: %s" % e.describe()

    def _namespace_blockers(self, namespace, prune_ids, prune_uids):
        """What keeps ``namespace`` from being pruned: ``[ObjectId]`` (some, not necessarily all: the
        scan stops at the first certain one), or a string saying why its contents cannot be known.

        Every listable namespaced kind of *fresh* discovery is read, likely holders first. Objects
        with owners are judged once everything is read (their owners may be anywhere in it).
        """
        index, _changed = self.discovery.fresh()
        if index.failed:
            return "discovery of %s failed, so what the namespace holds cannot be known" % ", ".join(sorted(index.failed))
        listed = []

        def fetch(info):
            try:
                found = []
                for page in self.client.pages(info.collection_path(namespace)):
                    objects = [(live_identity(o, info), o) for o in page]
                    certain = planner.namespace_blockers(namespace, objects, prune_ids, prune_uids, complete=False)
                    if certain:
                        return certain, found
                    found.extend(objects)
                return [], found
            except ApiError as e:
                if e.is_not_found or e.status == 405:
                    return [], []
                return None, "cannot list %s in it: %s" % (info.plural, e.describe())

        for infos in planner.namespace_scan_rounds(index.listable()):
            for certain, found in self._map(fetch, infos):
                if certain is None:
                    return found
                if certain:
                    return certain
                listed.extend(found)
        return planner.namespace_blockers(namespace, listed, prune_ids, prune_uids)

    def _crd_blockers(self, name, prune_ids):
        """Custom resources of CRD ``name`` that its deletion would take with it (``[ObjectId]``), or a
        string saying why they cannot be known. Read through the CRD itself, not discovery."""
        crd = self.client.get_or_none("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/" + name)
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
            return "cannot list its objects: %s" % e.describe()
        return [oid for oid in (live_identity(o, info) for o in items) if oid not in prune_ids]

    def _contents_blockers(self, oid, prune_ids, prune_uids):
        """For a Namespace or CRD we would delete: what else would its deletion take with it?"""
        if oid.group_kind == planner.NAMESPACE_GK:
            return self._namespace_blockers(oid.name, prune_ids, prune_uids)
        if oid.group_kind == planner.CRD_GK:
            return self._crd_blockers(oid.name, prune_ids)
        return []

    def _release(self, oid, info, obj, other, dry_run):
        """Hand an object we no longer declare to ``other``, a stack that still does: its label and mark
        become theirs, our checksum goes (their next run applies it). None, or why it failed."""
        if dry_run:
            return None
        meta = obj.get("metadata") or {}
        body = {"metadata": {"resourceVersion": meta.get("resourceVersion"),
                             "labels": {STACK_LABEL: other},
                             "annotations": {OWNER_ANNOTATION: owner_mark(other, oid), CHECKSUM_ANNOTATION: None}}}
        try:
            self.client.request("PATCH", info.object_path(oid.namespace, oid.name),
                                params={"fieldManager": self.field_manager}, body=body, content_type=MERGE_PATCH)
            return None
        except ApiError as e:
            return "release refused: %s" % e.describe()

    def _hand_over(self, candidates, changeset, dry_run):
        """Candidates that another stack's record still declares are released, not deleted; returns the rest."""
        declared = self.record.declared_elsewhere() if candidates else {}
        rest = []
        for oid, info, obj in candidates:
            others = declared.get(identity_digest(oid))
            if not others:
                rest.append((oid, info, obj))
                continue
            other = sorted(others)[0]
            problem = self._release(oid, info, obj, other, dry_run)
            ref = _ref(oid, obj.get("apiVersion") or info.api_version, stack=other)
            if problem:
                ref["reason"] = problem
                changeset.skipped.append(ref)
                changeset.warn("%s: %s; it stays and the next run retries" % (oid, problem))
                continue
            changeset.released.append(ref)
            changeset.warn("%s is no longer in stack %r but stack %r still declares it: released to %r, not deleted"
                           % (oid, self.stack, other, other))
        return rest

    def _prune(self, candidates, changeset, dry_run):
        """Delete candidates in reverse stage order; returns (group/kinds left behind, pruned ids)."""
        remaining = set()
        pruned_ids = set()
        candidates = self._hand_over(candidates, changeset, dry_run)
        prune_ids = set(oid for oid, _i, _o in candidates)
        prune_uids = set((obj.get("metadata") or {}).get("uid") for _oid, _i, obj in candidates)
        for _stage, items in reversed(planner.by_stage(candidates, key=lambda c: c[0])):
            if not dry_run:
                self._ensure_lock()
            holders = [c for c in items if c[0].group_kind in (planner.NAMESPACE_GK, planner.CRD_GK)]
            plain = [c for c in items if c not in holders]
            batch = list(plain)
            for oid, info, obj in holders:
                blockers = self._contents_blockers(oid, prune_ids, prune_uids)
                if isinstance(blockers, str):
                    reason = "kept: " + blockers
                elif blockers:
                    reason = "still contains objects not pruned by this stack: " + ", ".join(str(b) for b in blockers[:5])
                    if len(blockers) > 5:
                        reason += " and %d more" % (len(blockers) - 5)
                else:
                    batch.append((oid, info, obj))
                    continue
                remaining.add(oid.group_kind)
                changeset.skipped.append(_ref(oid, obj.get("apiVersion") or info.api_version, reason=reason))
            results = self._map(lambda c: (c, self._delete(c[0], c[1], c[2], dry_run)), batch)
            for (oid, info, obj), refused in results:
                ref = _ref(oid, obj.get("apiVersion") or info.api_version)
                if refused:
                    remaining.add(oid.group_kind)
                    ref["reason"] = refused
                    changeset.skipped.append(ref)
                    changeset.warn("%s: %s; it stays recorded and the next run retries" % (oid, refused))
                    continue
                changeset.pruned.append(ref)
                pruned_ids.add(oid)
                if self.want_diff:
                    entry = object_diff(obj, None, is_secret(oid))
                    entry["before_header"] = entry["after_header"] = str(oid)
                    changeset.diff.append(entry)
        return remaining, pruned_ids

    # -- public verbs -------------------------------------------------------------------------
    def sync(self, resources):
        """Converge the stack to ``resources`` (state=present). Returns a ChangeSet; raises StackError."""
        cs = ChangeSet()
        cs.check_mode = self.check_mode
        try:
            return self._sync(resources, cs)
        except (ApiError, LockError, RecordError) as e:
            self.discovery.invalidate()
            raise StackError(str(e), cs) from None
        except StackError as e:
            self.discovery.invalidate()  # a stale cached kind may be why it failed
            e.changeset = e.changeset or cs
            raise
        finally:
            self.close()

    def _sync(self, resources, cs):
        desired = self.prepare(resources, cs)
        pruning = self.prune_enabled and self.phase in ("all", "prune")
        if pruning and not desired and not self.allow_empty:
            raise StackError("refusing to prune stack %r to an empty set of resources (set allow_empty: true if "
                             "this is intended)" % self.stack)
        applying = self.phase in ("all", "apply")
        first_key = self._load_key(desired, create=False)
        self._stamp(desired, first_key)

        attempt = self._attempt(desired, cs, pruning, applying, dry_run=True)
        if attempt is None:  # nothing to write
            return cs
        if self.check_mode:
            return attempt
        with self._locked():
            cs2 = ChangeSet()
            cs2.warnings = list(cs.warnings)
            key = self._load_key(desired, create=applying)
            if key != first_key:
                # the key was created just now: only keyed (Secret) checksums depend on it
                self._stamp([d for d in desired if is_secret(d.oid)], key)
            return self._attempt(desired, cs2, pruning, applying, dry_run=False)

    @contextlib.contextmanager
    def _locked(self):
        """Hold the stack's Lease; every write stage checks it is still held (:meth:`_ensure_lock`)."""
        with LeaseLock(self.client, self.record_namespace, self.stack, duration=self.lease_duration,
                       timeout=self.lock_timeout) as lock:
            self._lock = lock
            try:
                yield lock
            finally:
                self._lock = None

    def _observe_and_plan(self, desired, cs, pruning):
        """observe + plan; when something would be deleted, on discovery read afresh (never the cache)."""
        first_warnings = len(cs.warnings)
        snap = self.observe(desired, cs)
        to_apply, candidates = self.plan(desired, snap, cs, pruning)
        if pruning and candidates:
            index, changed = self.discovery.fresh()
            if changed:
                # the cached index was stale: what it said about scopes and kinds cannot be trusted
                for d in desired:
                    info = index.lookup(d.oid.group, d.oid.kind, d.info.version)
                    if not d.from_crd and (info is None or info.namespaced != d.info.namespaced):
                        raise StackError("the cluster's API changed while the run started (%s); nothing was "
                                         "written, run again" % group_kind_str(*d.oid.group_kind), cs)
                cs.applied, cs.skipped, cs.terminating = [], [], []
                del cs.warnings[first_warnings:]
                snap = self.observe(desired, cs)
                to_apply, candidates = self.plan(desired, snap, cs, pruning)
        return snap, to_apply, candidates

    def _check_budget(self, desired, snap, candidates):
        """Fail before any write if the run would delete more than ``max_prune`` allows."""
        if not candidates or (not desired and self.allow_empty):
            return  # an empty set with allow_empty, and state=absent, delete the stack on purpose
        total = sum(1 for oid, (_i, obj) in snap.ours.items() if owned_by(obj, self.stack, oid))
        problem = planner.prune_budget_problem([c[0] for c in candidates], total, self.max_prune)
        if problem:
            raise StackError("stack %r: %s" % (self.stack, problem))

    def _ensure_lock(self):
        """Stop before a write if the run no longer holds the stack's Lease."""
        if self._lock is not None:
            self._lock.ensure()

    def _attempt(self, desired, cs, pruning, applying, dry_run):
        """Observe + plan, then (dry_run: check mode / no-op detection) or write."""
        snap, to_apply, candidates = self._observe_and_plan(desired, cs, pruning)
        if pruning:
            self._check_budget(desired, snap, candidates)
        if not applying:
            # phase=prune: nothing is applied; what is not in sync is reported, not written
            for d in to_apply:
                cs.skipped.append(_ref(d.oid, d.manifest["apiVersion"], reason="not applied (phase=prune)"))
            to_apply = []
        self._shared(desired if applying else [], snap, cs)
        cs.checksum = stack_checksum([d.checksum for d in desired])
        end_fields = self._record_fields(desired, snap, set(), pruned_ok=pruning)
        noop = not to_apply and not candidates and (not self._writes_record() or not self._record_would_change(end_fields))
        if dry_run and not self.check_mode:
            return None if noop else cs
        if dry_run:  # check mode: dry-run applies, report prunes
            self._apply_all(to_apply, snap, cs, dry_run=True)
            if pruning and not cs.errors:
                self._prune(candidates, cs, dry_run=True)
            elif cs.errors:
                cs.warn("nothing would be pruned: %d apply(s) would fail" % len(cs.errors))
            self._finish(cs)
            return cs

        # real run, under the lock
        if applying:
            widened = self.record.group_kinds | set(d.oid.group_kind for d in desired)
            if self.record.data is None or widened != self.record.group_kinds:
                self._ensure_lock()
                self.record.save(group_kinds=widened)
        written = self._apply_all(to_apply, snap, cs, dry_run=False)
        if self.wait and written and not cs.errors:
            self._wait(written, cs)
        pruned_ok = False
        remaining = set()
        if pruning:
            if cs.errors:
                cs.warn("nothing was pruned because %d apply(s) failed" % len(cs.errors))
            else:
                remaining, pruned_ids = self._prune(candidates, cs, dry_run=False)
                pruned_ok = True
                remaining |= set(oid.group_kind for oid, (_i, obj) in snap.ours.items()
                                 if oid not in pruned_ids and owned_by(obj, self.stack, oid))
        if self._writes_record() and not cs.errors:
            fields = self._record_fields(desired, snap, remaining, pruned_ok)
            if cs.changed or self._record_would_change(fields):
                fields["lastSyncTime"] = now_rfc3339()
                self._ensure_lock()
                self.record.save(**fields)
        self._finish(cs)
        return cs

    def _writes_record(self):
        return self.phase in ("all", "prune")

    def _finish(self, cs):
        if cs.errors:
            raise StackError("stack %r: %d object(s) failed: %s" % (self.stack, len(cs.errors), "; ".join(cs.errors[:10])), cs)

    def inspect(self, resources=None):
        """Read-only report for ``stack_info``: live objects with their status against ``resources``.

        Statuses: ``in_sync`` (desired checksum, nothing drifted), ``drifted`` (desired checksum but
        a field we apply was changed), ``out_of_date`` (older checksum), ``missing`` (desired, not on
        the cluster), ``would_prune``, ``kept`` (the stack's but protected; see ``reason``), or
        ``present`` when no desired set was given.
        """
        cs = ChangeSet()
        try:
            desired = self.prepare(resources, cs) if resources is not None else []
            self._stamp(desired, self._load_key(desired, create=False))
            snap = self.observe(desired, cs)
            by_id = dict((d.oid, d) for d in desired)
            desired_ids = set(by_id)
            desired_sums = set(d.checksum for d in desired)
            objects = []
            for oid, (info, obj) in sorted(snap.ours.items()):
                meta = obj.get("metadata") or {}
                entry = _ref(oid, obj.get("apiVersion") or info.api_version)
                entry["checksum"] = (meta.get("annotations") or {}).get(CHECKSUM_ANNOTATION)
                d = by_id.get(oid)
                if resources is None:
                    reason = planner.prune_decision(obj, oid, self.stack, set(), set())
                    entry["status"] = "present" if reason is None or not owned_by(obj, self.stack, oid) else "kept"
                    if reason and owned_by(obj, self.stack, oid):
                        entry["reason"] = reason
                elif d is not None:
                    if entry["checksum"] != d.checksum:
                        entry["status"] = "out_of_date"
                    else:
                        entry["status"] = "in_sync" if in_sync(d.manifest, obj, CHECKSUM_ANNOTATION) else "drifted"
                else:
                    reason = planner.prune_decision(obj, oid, self.stack, desired_ids, desired_sums)
                    if reason is None:
                        entry["status"] = "would_prune"
                    else:
                        entry["status"] = "kept"
                        entry["reason"] = reason
                objects.append(entry)
            for d in desired:
                if d.oid not in snap.ours:
                    entry = _ref(d.oid, d.manifest["apiVersion"], status="missing", checksum=d.checksum)
                    objects.append(entry)
            record = dict(self.record.data or {})
            return dict(objects=objects, record=record, commit=record.get("commit"),
                        last_sync_time=record.get("lastSyncTime"),
                        group_kinds=sorted(group_kind_str(*gk) for gk in self.record.group_kinds),
                        unverified_kinds=sorted(group_kind_str(*gk) for gk in snap.unverified),
                        checksum=stack_checksum([d.checksum for d in desired]) if resources is not None else None,
                        warnings=cs.warnings)
        except (ApiError, RecordError) as e:
            raise StackError(str(e), cs) from None
        finally:
            self.close()

    def delete_all(self):
        """state=absent: delete every object of the stack (reverse order), then its record and key."""
        cs = ChangeSet()
        cs.check_mode = self.check_mode
        try:
            snap, _to_apply, candidates = self._observe_and_plan([], cs, pruning=True)
            if not candidates and self.record.data is None:
                return cs
            if self.check_mode:
                self._prune(candidates, cs, dry_run=True)
                return cs
            with self._locked():
                cs = ChangeSet()
                snap, _to_apply, candidates = self._observe_and_plan([], cs, pruning=True)
                remaining, _pruned = self._prune(candidates, cs, dry_run=False)
                remaining |= set(ref_gk(t) for t in cs.terminating)
                self._ensure_lock()
                if not remaining and not snap.unverified:
                    self.record.delete()
                    self.key_store.delete()
                else:
                    self.record.save(group_kinds=remaining | snap.unverified)
            return cs
        except (ApiError, LockError, RecordError) as e:
            raise StackError(str(e), cs) from None
        finally:
            self.close()
