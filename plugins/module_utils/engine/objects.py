# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Manifests as stacksync sees them: validation, canonical form, checksums, ownership mark.

Pure functions, no I/O.

* The **checksum** (annotation ``stacksync.io/checksum``) is taken over the canonical JSON of the
  desired manifest *with its identity* (group, kind, resolved namespace, name) and without the
  stack's own stamps (:data:`.constants.STAMPED_KEYS`), ``status`` and server-set metadata, so it only changes when what git
  says about this object changes. Secrets use HMAC-SHA256 with a per-stack key (kept in a Secret in
  the record namespace), so the annotation cannot be used to confirm a guessed value.
* The **owner mark** (annotation ``stacksync.io/owner``) is a short SHA-256 of the stack name and
  the object's own identity. A live object is the stack's only if its label names the stack *and*
  its mark equals the mark computed from its own live identity, so a label or annotation copied
  onto another object (operators copying labels to children, fluxcd/flux#1787) never makes that
  object prunable.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import contextlib
import functools
import hashlib
import hmac
import json
import re

from ansible_collections.stacksync.k8s.plugins.module_utils.base.constants import (
    CHECKSUM_ANNOTATION,
    IGNORE_ANNOTATION,
    OWNER_ANNOTATION,
    PRUNE_ANNOTATION,
    RECREATE_ANNOTATION,
    SOURCE_ANNOTATION,
    SSA_ANNOTATION,
    STACK_LABEL,
    STAMPED_KEYS,
)
from ansible_collections.stacksync.k8s.plugins.module_utils.base.identity import ObjectId, group_of

#: metadata the server sets; never part of the desired state.
SERVER_METADATA = ("uid", "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp",
                   "deletionGracePeriodSeconds", "managedFields", "selfLink")
MARK_LENGTH = 20


def is_true(value):
    return str(value).strip().lower() in ("true", "yes", "1")


def strip_source(manifest):
    """A copy without the lookup's ``stacksync.io/source`` annotation (never reaches the cluster).

    Only what the engine changes in place is copied: the top level (namespace resolution, Secret
    ``stringData`` folding), ``metadata``, its ``labels`` and ``annotations`` (:func:`stamp`). The rest
    (``spec``, ``data``, ...) is shared with the input and must not be mutated: functions that change
    anything else (:func:`normalize_secret`) replace the value instead of changing it.
    """
    out = dict(manifest)
    meta = out.get("metadata")
    if isinstance(meta, dict):
        meta = dict(meta)
        out["metadata"] = meta
        for field in ("labels", "annotations"):
            if isinstance(meta.get(field), dict):
                meta[field] = dict(meta[field])
        if isinstance(meta.get("annotations"), dict):
            meta["annotations"].pop(SOURCE_ANNOTATION, None)
            if not meta["annotations"]:
                del meta["annotations"]
    return out


def annotation(obj, key):
    return ((obj.get("metadata") or {}).get("annotations") or {}).get(key)


def label(obj, key):
    return ((obj.get("metadata") or {}).get("labels") or {}).get(key)


def is_ignored(obj):
    return is_true(annotation(obj, IGNORE_ANNOTATION) or "")


def prune_disabled(obj):
    return str(annotation(obj, PRUNE_ANNOTATION) or "").strip().lower() == "disabled"


def ssa_policy(obj):
    """The ``stacksync.io/ssa`` policy: ``merge``, ``if-not-present`` or None (take over, the default).
    Flux's spellings (``Merge``, ``IfNotPresent``) are accepted."""
    value = str(annotation(obj, SSA_ANNOTATION) or "").strip().lower().replace("-", "")
    return {"merge": "merge", "ifnotpresent": "if-not-present"}.get(value)


def wants_recreate(obj):
    return is_true(annotation(obj, RECREATE_ANNOTATION) or "")


def is_secret(oid_or_obj):
    if isinstance(oid_or_obj, ObjectId):
        return oid_or_obj.group == "" and oid_or_obj.kind == "Secret"
    return group_of(oid_or_obj.get("apiVersion") or "v1") == "" and oid_or_obj.get("kind") == "Secret"


def normalize_secret(manifest):
    """Fold ``stringData`` into base64 ``data`` (what the server stores), in place.

    Applying ``data`` is equivalent, keeps the checksum independent of which form git uses, and lets
    the drift check compare against the live object (which never shows ``stringData``).
    """
    string_data = manifest.pop("stringData", None)
    if string_data:
        data = dict(manifest.get("data") or {})  # a new dict: ``data`` may be shared with the caller's input
        for k, v in string_data.items():
            data[k] = base64.b64encode(str(v).encode("utf-8")).decode("ascii")
        manifest["data"] = data
    return manifest


#: parts of API error messages that quote a submitted value: ``got <value>`` (typed-patch errors),
#: ``Invalid value: <value>:`` (validation errors)
_QUOTED_VALUE_RES = (
    re.compile(r"(\bgot )(.+?)(?=$|; |\n)"),
    re.compile(r"(Invalid value: )(\"(?:[^\"\\]|\\.)*\"|[^:]*)"),
)


def redact_secret_message(message, manifest):
    """An API error message about a Secret with the values it may quote removed.

    Every submitted ``data`` / ``stringData`` value (and the decoded text of ``data``) is replaced,
    and so is what follows ``got`` / ``Invalid value:`` (where the server prints a value in a form of
    its own, e.g. Go's ``&{...}``).
    """
    if not message:
        return message
    values = set()
    for field in ("data", "stringData"):
        section = manifest.get(field)
        if not isinstance(section, dict):
            continue
        for value in section.values():
            text = value if isinstance(value, str) else json.dumps(value)
            values.add(text)
            if field == "data" and isinstance(value, str):
                with contextlib.suppress(ValueError, UnicodeDecodeError):
                    values.add(base64.b64decode(value, validate=True).decode("utf-8"))
    for value in sorted((v for v in values if len(v) >= 3), key=len, reverse=True):
        message = message.replace(value, "<redacted>")
    for regex in _QUOTED_VALUE_RES:
        message = regex.sub(r"\1<redacted>", message)
    return message


def resolve_identity(manifest, info, default_namespace):
    """Identity of ``manifest`` given its discovery ``info``; returns ``(ObjectId, warning_or_None)``.

    Scope comes from discovery: namespaced objects without a namespace get ``default_namespace``;
    a cluster-scoped manifest that names a namespace is applied without one (with a warning).
    The manifest is updated in place to carry the resolved namespace.
    """
    meta = manifest["metadata"]
    warning = None
    if info.namespaced:
        ns = meta.get("namespace") or default_namespace
        meta["namespace"] = ns
    else:
        ns = ""
        if meta.get("namespace"):
            warning = "%s %s is cluster-scoped; its namespace %r is ignored" % (
                manifest.get("kind"), meta.get("name"), meta.get("namespace"))
        meta.pop("namespace", None)
    return ObjectId(info.group, info.kind, ns, meta["name"]), warning


_NOT_COVERED = frozenset((*SERVER_METADATA, "namespace"))
_SERVER_METADATA = frozenset(SERVER_METADATA)
_STAMPED = frozenset(STAMPED_KEYS)


def canonical(manifest):
    """The part of a manifest its checksum covers (a new dict; the input is not changed)."""
    out = dict(manifest)
    out.pop("status", None)
    meta = dict(out.get("metadata") or {})
    for key in _NOT_COVERED.intersection(meta):
        del meta[key]
    for field in ("labels", "annotations"):
        values = meta.get(field)
        if values and not _STAMPED.isdisjoint(values):
            values = dict((k, v) for k, v in values.items() if k not in _STAMPED)
        if values:
            meta[field] = values
        else:
            meta.pop(field, None)
    out["metadata"] = meta
    return out


def checksum_payload(manifest, oid):
    """What :func:`checksum` hashes: the canonical form + identity as JSON (a str)."""
    return json.dumps({"identity": list(oid), "object": canonical(manifest)}, sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False)


def checksum_of(payload, key=None):
    """:func:`checksum` of a :func:`checksum_payload`."""
    payload = payload.encode("utf-8")
    if key is not None:
        return "hmac-sha256:" + hmac.new(key, payload, hashlib.sha256).hexdigest()
    return "sha256:" + hashlib.sha256(payload).hexdigest()


def checksum(manifest, oid, key=None):
    """``sha256:<hex>`` of the canonical form + identity; ``hmac-sha256:<hex>`` when ``key`` is given."""
    return checksum_of(checksum_payload(manifest, oid), key)


#: a character of the payload (JSON without ASCII escapes) is at most this many bytes of ASCII JSON (a
#: character outside the BMP becomes a pair of ``\uXXXX`` escapes)
ASCII_JSON_FACTOR = 12


def sent_size_bound(manifest, payload):
    """An upper bound of the bytes of ``manifest`` as the client sends it (ASCII JSON, not stamped yet) from its
    :func:`checksum_payload` (or the payload's length), or None when the payload leaves out something the request
    carries: ``status``, the server's metadata, values under the stamped keys (the namespace is counted apart)."""
    meta = manifest.get("metadata") or {}
    if "status" in manifest or not _SERVER_METADATA.isdisjoint(meta):
        return None
    for field in ("labels", "annotations"):
        if not _STAMPED.isdisjoint(meta.get(field) or ()):
            return None
    length = payload if isinstance(payload, int) else len(payload)
    return ASCII_JSON_FACTOR * (length + len(str(meta.get("namespace") or ""))) + 64


def stack_checksum(checksums):
    """Aggregate checksum of a whole stack (order-independent)."""
    return "sha256:" + hashlib.sha256("\n".join(sorted(checksums)).encode("utf-8")).hexdigest()


#: owner marks remembered (a run computes each object's mark several times: stamp, plan, prune)
OWNER_MARK_CACHE = 1 << 15


@functools.lru_cache(maxsize=OWNER_MARK_CACHE)
def owner_mark(stack, oid):
    """Short SHA-256 of the stack name and the object's identity (not a secret, a binding)."""
    text = "\n".join([stack, oid.group, oid.kind, oid.namespace, oid.name])
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:MARK_LENGTH]


def stamp(manifest, stack, oid, digest):
    """Add the stack label, checksum and owner mark to ``manifest`` (in place) and return it. Its ``labels`` and
    ``annotations`` maps are changed in place too: :func:`strip_source` made them the manifest's own."""
    meta = manifest.setdefault("metadata", {})
    if not isinstance(meta.get("labels"), dict):
        meta["labels"] = {}
    meta["labels"][STACK_LABEL] = stack
    if not isinstance(meta.get("annotations"), dict):
        meta["annotations"] = {}
    meta["annotations"][CHECKSUM_ANNOTATION] = digest
    meta["annotations"][OWNER_ANNOTATION] = owner_mark(stack, oid)
    return manifest


def live_api_version(obj, info):
    """The ``apiVersion`` a live object was read in (lists may leave it out: then the resource's)."""
    return obj.get("apiVersion") or info.api_version


def live_identity(obj, info):
    """Identity of a live object read through resource ``info``."""
    meta = obj.get("metadata") or {}
    return ObjectId(info.group, info.kind, (meta.get("namespace") or "") if info.namespaced else "", meta.get("name"))


def owned_by(obj, stack, oid):
    """True if live ``obj`` (identity ``oid``) is ``stack``'s: label matches *and* mark matches identity."""
    return label(obj, STACK_LABEL) == stack and annotation(obj, OWNER_ANNOTATION) == owner_mark(stack, oid)
