# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Identify and checksum: the desired manifests made ready to apply. No writes.

Every manifest is validated, its kind resolved through discovery (or a CRD of the same stack), its
identity and scope fixed (namespaced or not comes from discovery, never the manifest), duplicates
and the stacks' own state refused, Secrets checked and normalised; then each gets its checksum and
the stack's label, checksum and owner mark. Any error fails the whole run before a request writes.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.stacksync.k8s.plugins.module_utils.base.constants import RECORD_LABEL, RECORD_NAMESPACE_ANNOTATION
from ansible_collections.stacksync.k8s.plugins.module_utils.base.identity import split_api_version
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.confinement import confinement_problems
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.gcpause import gc_paused
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.objects import (
    checksum_of,
    checksum_payload,
    is_ignored,
    is_secret,
    label,
    normalize_secret,
    resolve_identity,
    sent_size_bound,
    ssa_policy,
    stamp,
    strip_source,
    wants_recreate,
)
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.record import is_state_object
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.validation import (
    ManifestError,
    describe,
    origin,
    secret_shape_problem,
    size_problem,
    source_of,
    validate_manifest,
)
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.discovery import ResourceInfo, UnknownKind

ALL_VERBS = ("create", "delete", "get", "list", "patch", "update", "watch")
#: a Secret checksum before the stack has a key: never equal to a live one
NO_KEY = b"no key yet: never matches live"


class PrepareError(Exception):
    """The desired set cannot be applied; the message lists every problem (up to 20)."""


class Desired:
    """One desired object after preparation."""

    __slots__ = (
        "checksum",
        "drift",
        "from_crd",
        "ignored",
        "index",
        "info",
        "manifest",
        "oid",
        "payload",
        "policy",
        "record_namespace",
        "recreate",
        "source",
    )

    def __init__(self, oid, info, manifest, index, from_crd=False, source=None, payload=None, record_namespace=None,
                 checksum=None):
        self.oid = oid
        self.info = info
        self.manifest = manifest
        self.checksum = checksum  # a Secret's is keyed: stamp_all makes it; the others' prepare (or an earlier one)
        self.payload = payload  # checksum_payload of the prepared manifest, until stamp_all hashes it
        annotated = bool((manifest.get("metadata") or {}).get("annotations"))  # most manifests have none
        self.policy = ssa_policy(manifest) if annotated else None  # the stacksync.io/ssa annotation
        self.ignored = is_ignored(manifest) if annotated else False
        self.recreate = wants_recreate(manifest) if annotated else False
        self.index = index
        self.from_crd = from_crd
        self.source = source  # the lookup's "path#document", for messages (the annotation is stripped)
        self.drift = None  # what of the live object an apply changes (see drift.drift), when known
        self.record_namespace = record_namespace  # stamped on the object: which stack of its name it is

    @property
    def api_version(self):
        return self.manifest["apiVersion"]

    def named(self):
        """``Kind ns/name``, with the file it came from when the lookup said so."""
        return "%s (from %s)" % (self.oid, self.source) if self.source else str(self.oid)


class Rendered(list):
    """Manifests the render gave (``plugin_utils/render.py``): each checked by :func:`.validation.manifest_problem`
    already, as :func:`prepare` checks the others; the action that rendered them marks them so.

    ``checksums``: what a prepare of the same manifests (the same render, kept) found of each, by index
    (``str(index)``: ``[group, kind, namespace, name, length of its checksum_payload, its checksum]``; Secrets, whose
    checksums are keyed, never): :func:`prepare` takes the checksum of an object whose identity is the one remembered
    instead of encoding and hashing it again, and adds what it computed (``added`` then tells the action to keep it,
    beside the render: :func:`keep`)."""

    def __init__(self, manifests=(), checksums=None, keep=None):
        super(Rendered, self).__init__(manifests)
        self.checksums = checksums if isinstance(checksums, dict) else {}
        self.added = False
        self._keep = keep

    def keep(self):
        """Hand the checksums to the action's ``keep(checksums)`` if this run added any (once)."""
        if self.added and self._keep is not None:
            self._keep(self.checksums)
        self.added = False


def _validated(resources):
    """``[(index, source, manifest)]`` of the valid manifests; raises PrepareError listing the invalid ones.
    :class:`Rendered` manifests were checked by the render."""
    if resources is None:
        resources = []
    if not isinstance(resources, list):
        raise PrepareError("resources must be a list of manifests")
    checked = isinstance(resources, Rendered)
    manifests, errors = [], []
    for i, raw in enumerate(resources):
        if raw is None:
            continue  # empty YAML document
        try:
            if not checked:
                validate_manifest(raw, i)
        except ManifestError as e:
            errors.append(str(e))
            continue
        # the source annotation never reaches the cluster or the checksum, but names the file in errors
        manifests.append((i, source_of(raw), strip_source(raw)))
    if errors:
        raise PrepareError("invalid manifests: " + "; ".join(errors[:20]))
    return manifests


def crd_kinds(manifests):
    """Kinds served by the CRDs among ``manifests`` once Established: ``{(group, kind, version): info}``."""
    out = {}
    for _index, _source, m in manifests:
        if m.get("kind") != "CustomResourceDefinition" or split_api_version(m["apiVersion"])[0] != "apiextensions.k8s.io":
            continue
        spec = m.get("spec") or {}
        names = spec.get("names") or {}
        for ver in spec.get("versions") or []:
            if ver.get("served", True) and names.get("kind") and names.get("plural"):
                out[(spec.get("group"), names["kind"], ver.get("name"))] = ResourceInfo(
                    spec.get("group"), ver.get("name"), names["kind"], names["plural"],
                    spec.get("scope", "Namespaced") == "Namespaced", ALL_VERBS)
    return out


def _resolve(discovery, crds, m, i, src):
    """``(info, from_crd)`` of manifest ``m`` (``resources[i]``, from ``src``); raises UnknownKind / PrepareError."""
    group, version = split_api_version(m["apiVersion"])
    info = discovery.index.lookup(group, m["kind"], version)
    from_crd = False
    if info is None and (group, m["kind"], version) in crds:
        info, from_crd = crds[(group, m["kind"], version)], True
    if info is None:
        info = discovery.resolve(group, m["kind"], version)
    if not info.can("patch"):
        raise PrepareError("%s: the API does not allow server-side apply (patch) on %s" % (describe(m, i, src), info.plural))
    return info, from_crd


def record_namespaces(opts):
    """The record namespaces a run knows of: its own first, then those of the other stacks of its sync."""
    out = [opts.record_namespace]
    out.extend(ns for ns in (opts.record_namespaces or ()) if ns and ns not in out)
    return out


def _problem(m, oid, known, remembered=None):
    """``(why a resolved manifest cannot be applied or None, its checksum_payload, its checksum)``: a Secret's payload
    (normalised on the way; stamp_all hashes it with the stack's key), the checksum of the others (the payload then
    None); ``remembered``: what a prepare of the same manifest found (:class:`Rendered`), taken if the identity is
    the same. ``known``: the record namespaces the run knows of (any stack's state in them is refused)."""
    if is_state_object(oid, known) or label(m, RECORD_LABEL) is not None:
        return ("this is (or could be) the state of a stack -- its record, key or Lease in a record namespace (%s), "
                "named stacksync-*, or labelled %s -- and manifests may not declare it"
                % (", ".join(known), RECORD_LABEL)), None, None
    if is_secret(oid):
        shape = secret_shape_problem(m)
        if shape:
            return shape, None, None
        normalize_secret(m)
        payload = checksum_payload(m, oid)
        return size_problem(m, oid, sent_size_bound(m, payload)), payload, None
    if remembered is not None and list(oid) == remembered[:4]:
        return size_problem(m, oid, sent_size_bound(m, remembered[4])), None, remembered[5]
    payload = checksum_payload(m, oid)  # its length bounds the request's (no second encoding)
    return size_problem(m, oid, sent_size_bound(m, payload)), payload, checksum_of(payload)


def _remembered(checksums, index):
    """The entry of ``checksums`` (:class:`Rendered`) for the manifest at ``index``, if it is one."""
    entry = checksums.get(str(index))
    if (isinstance(entry, list) and len(entry) == 6 and isinstance(entry[0], str) and isinstance(entry[1], str)
            and isinstance(entry[2], str) and isinstance(entry[3], str) and isinstance(entry[4], int)
            and isinstance(entry[5], str)):
        return entry
    return None


def _described(m, namespace, i, src):
    """:func:`describe` of ``m`` with ``metadata.namespace`` as it was written (``namespace``)."""
    meta = dict(m["metadata"])
    meta["namespace"] = namespace
    return describe(dict(m, metadata=meta), i, src)


@gc_paused
def prepare(resources, discovery, opts, warn):
    """Validate and resolve ``resources`` for the run with options ``opts``: ``[Desired]``.

    Raises PrepareError (nothing is written); ``warn(message)`` receives warnings.
    """
    manifests = _validated(resources)
    checksums = resources.checksums if isinstance(resources, Rendered) else None
    crds = crd_kinds(manifests)
    known = record_namespaces(opts)
    desired, errors, seen = [], [], {}
    for i, src, m in manifests:
        try:
            info, from_crd = _resolve(discovery, crds, m, i, src)
        except UnknownKind as e:
            errors.append("%s: %s" % (describe(m, i, src), e))
            continue
        except PrepareError as e:
            errors.append(str(e))
            continue
        given_namespace = m["metadata"].get("namespace")  # for messages: as written, before the default fills it in
        oid, warning = resolve_identity(m, info, opts.namespace)
        if warning:
            warn("%s (%s)" % (warning, origin(i, src)))
        if oid in seen:
            errors.append("duplicate object %s (%s and %s)" % (oid, origin(*seen[oid]), origin(i, src)))
            continue
        seen[oid] = (i, src)
        problem, payload, digest = _problem(m, oid, known, _remembered(checksums, i) if checksums else None)
        if problem:
            errors.append("%s: %s" % (_described(m, given_namespace, i, src), problem))
            continue
        if checksums is not None and payload is not None and digest is not None:
            checksums[str(i)] = [*oid, len(payload), digest]
            resources.added = True
        desired.append(Desired(oid, info, m, i, from_crd, src, None if digest else payload, known[0], digest))
    errors.extend(confinement_problems(desired, getattr(opts, "policy", None)))  # resolved identities, before any write
    if errors:
        raise PrepareError("cannot sync stack %r: %s" % (opts.stack, "; ".join(errors[:20])))
    return desired


@gc_paused
def stamp_all(desired, stack, key):
    """Compute checksums and stamp our metadata (Secrets keyed; without a key they never match live), with
    the record namespace that tells the stack from others of its name (left out of the checksum, like the label)."""
    for d in desired:
        if d.checksum is None or is_secret(d.oid):  # the others' (no key) made by prepare already
            payload = d.payload if d.payload is not None else checksum_payload(d.manifest, d.oid)
            d.payload = None  # the stamps are not in it, but a Secret may be stamped again (a new key): made again then
            d.checksum = checksum_of(payload, (key or NO_KEY) if is_secret(d.oid) else None)
        stamp(d.manifest, stack, d.oid, d.checksum)
        if d.record_namespace:
            d.manifest["metadata"]["annotations"][RECORD_NAMESPACE_ANNOTATION] = d.record_namespace
