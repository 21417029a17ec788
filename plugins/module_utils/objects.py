# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Manifests as stacksync sees them: validation, canonical form, checksums, ownership mark.

Pure functions, no I/O.

* The **checksum** (annotation ``stacksync.io/checksum``) is taken over the canonical JSON of the
  desired manifest *with its identity* (group, kind, resolved namespace, name) and without our own
  ``stacksync.io/*`` metadata, ``status`` and server-set metadata, so it only changes when what git
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
import hashlib
import hmac
import json
import re

from ansible_collections.stacksync.k8s.plugins.module_utils.constants import (
    CHECKSUM_ANNOTATION,
    DOMAIN,
    IGNORE_ANNOTATION,
    OWNER_ANNOTATION,
    RECREATE_ANNOTATION,
    SOURCE_ANNOTATION,
    STACK_LABEL,
)
from ansible_collections.stacksync.k8s.plugins.module_utils.identity import ObjectId, group_of

#: metadata the server sets; never part of the desired state.
SERVER_METADATA = ("uid", "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp",
                   "deletionGracePeriodSeconds", "managedFields", "selfLink")
LABEL_VALUE_RE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
LABEL_NAME_RE = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
DNS_SUBDOMAIN_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
DNS_LABEL_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS_1035_LABEL_RE = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
#: Kinds whose names the API server validates only as path segments (no '/', '%', '.', '..'):
#: RBAC objects carry names such as ``system:aggregate-to-admin``.
PATH_SEGMENT_NAME_KINDS = frozenset([
    ("rbac.authorization.k8s.io", "Role"), ("rbac.authorization.k8s.io", "ClusterRole"),
    ("rbac.authorization.k8s.io", "RoleBinding"), ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
])
MARK_LENGTH = 20
#: kube-apiserver refuses a request body larger than this (413 "Request entity too large: limit is 3145728").
MAX_REQUEST_BYTES = 3 * 1024 * 1024
#: etcd's default ``--max-request-bytes``: an object whose stored form is larger cannot be written
#: ("etcdserver: request is too large"; the API server's own etcd client stops at 2 MiB anyway).
MAX_OBJECT_BYTES = 1536 * 1024
#: ConfigMap data + binaryData, Secret data: at most 1 MiB of values (keys not counted), as the API
#: server validates it ("Too long: may not be more than 1048576 bytes").
MAX_DATA_BYTES = 1024 * 1024
#: room for what :func:`stamp` adds after the size check (stack label, checksum, owner mark).
STAMP_ALLOWANCE = 512


class ManifestError(ValueError):
    """A manifest is invalid; the message names it."""


def is_true(value):
    return str(value).strip().lower() in ("true", "yes", "1")


def valid_label_value(value):
    return isinstance(value, str) and len(value) <= 63 and bool(LABEL_VALUE_RE.fullmatch(value))


def valid_label_key(key):
    if not isinstance(key, str) or not key:
        return False
    prefix, _sep, name = key.rpartition("/")
    if prefix and (len(prefix) > 253 or not DNS_SUBDOMAIN_RE.fullmatch(prefix)):
        return False
    return len(name) <= 63 and bool(LABEL_NAME_RE.fullmatch(name))


def source_of(manifest):
    """The lookup's ``stacksync.io/source`` annotation (``path#document``) of a manifest, or None."""
    meta = manifest.get("metadata") if isinstance(manifest, dict) else None
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    src = annotations.get(SOURCE_ANNOTATION) if isinstance(annotations, dict) else None
    return src if isinstance(src, str) and src else None


def origin(index=None, source=None):
    """Where a manifest came from: ``from <path>#<doc>`` or ``resources[N]`` (or None)."""
    if source:
        return "from %s" % source
    if index is not None:
        return "resources[%d]" % index
    return None


def describe(manifest, index=None, source=None):
    """Short human name of a manifest for error messages: ``Kind ns/name (from path#doc)``, or with
    ``resources[N]`` when the manifest did not come through the lookup. ``source`` overrides the
    annotation (the module strips it before validating identity and scope)."""
    if not isinstance(manifest, dict):
        where = origin(index, source or source_of(manifest))
        return "document (%s)" % where if where else "document"
    meta = manifest.get("metadata") if isinstance(manifest.get("metadata"), dict) else {}
    name = "%s %s%s" % (manifest.get("kind") or "?", (str(meta.get("namespace")) + "/") if meta.get("namespace") else "",
                        meta.get("name") or "?")
    where = origin(index, source or source_of(manifest))
    if where:
        name += " (%s)" % where
    return name


def invalid_name(group, kind, name):
    """Why the API server would refuse ``name`` for this kind (as kube-apiserver validates it), or None."""
    if len(name) > 253 or "/" in name or "%" in name or name in (".", ".."):
        return "at most 253 characters, without '/' or '%', not '.' or '..'"
    if (group, kind) in PATH_SEGMENT_NAME_KINDS:
        return None
    if group == "" and kind == "Namespace":
        if len(name) > 63 or not DNS_LABEL_RE.fullmatch(name):
            return "a DNS-1123 label: at most 63 lowercase letters, digits or '-', starting and ending with a letter or digit"
        return None
    if group == "" and kind == "Service":
        if len(name) > 63 or not DNS_1035_LABEL_RE.fullmatch(name):
            return "a DNS-1035 label: at most 63 lowercase letters, digits or '-', starting with a letter"
        return None
    if not DNS_SUBDOMAIN_RE.fullmatch(name):
        return "a DNS-1123 subdomain: lowercase letters, digits, '-' and '.', starting and ending with a letter or digit"
    return None


def validate_manifest(manifest, index=None):
    """Raise :class:`ManifestError` unless ``manifest`` is a well-formed object we can apply."""
    what = describe(manifest, index)
    if not isinstance(manifest, dict):
        raise ManifestError("%s is not a mapping" % what)
    api_version = manifest.get("apiVersion")
    if not isinstance(api_version, str) or not api_version or api_version.count("/") > 1:
        raise ManifestError("%s: apiVersion must be a string like 'v1' or 'apps/v1'" % what)
    kind = manifest.get("kind")
    if not isinstance(kind, str) or not re.fullmatch(r"[A-Za-z][A-Za-z0-9]*", kind):
        raise ManifestError("%s: kind must be a string" % what)
    if kind.endswith("List") and isinstance(manifest.get("items"), list):
        raise ManifestError("%s: List objects are not supported; give the items as separate resources" % what)
    meta = manifest.get("metadata")
    if not isinstance(meta, dict):
        raise ManifestError("%s: metadata must be a mapping" % what)
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        if meta.get("generateName"):
            raise ManifestError("%s: generateName is not supported (objects need a stable name to be synced)" % what)
        raise ManifestError("%s: metadata.name is required" % what)
    name_problem = invalid_name(group_of(api_version), kind, name)
    if name_problem:
        raise ManifestError("%s: invalid metadata.name %r: %s" % (what, name, name_problem))
    ns = meta.get("namespace")
    if ns is not None and (not isinstance(ns, str) or (ns and not DNS_LABEL_RE.fullmatch(ns)) or len(ns) > 63):
        raise ManifestError("%s: invalid metadata.namespace %r" % (what, ns))
    for field in ("labels", "annotations"):
        value = meta.get(field)
        if value is None:
            continue
        if not isinstance(value, dict):
            raise ManifestError("%s: metadata.%s must be a mapping" % (what, field))
        for k, v in value.items():
            if not valid_label_key(k):
                raise ManifestError("%s: invalid %s key %r" % (what, field[:-1], k))
            if not isinstance(v, str):
                raise ManifestError("%s: metadata.%s[%r] must be a string, got %s" % (what, field, k, type(v).__name__))
            if field == "labels" and not valid_label_value(v):
                raise ManifestError("%s: invalid label value %r for %r (at most 63 characters: letters, digits, "
                                    "'-', '_', '.', beginning and ending with a letter or digit)" % (what, v, k))


def _base64_length(value):
    """Decoded length of base64 ``value`` without decoding it (the server rejects invalid base64 anyway)."""
    value = value.strip()
    return max(len(value) * 3 // 4 - (len(value) - len(value.rstrip("="))), 0)


def data_size(manifest, oid):
    """Bytes of ConfigMap ``data`` + ``binaryData`` / Secret ``data`` values as the API server counts
    them (UTF-8 text, decoded base64), or None for other kinds. Secrets must be normalized first."""
    if oid.group != "" or oid.kind not in ("ConfigMap", "Secret"):
        return None
    total = 0
    for field, encoded in (("data", oid.kind == "Secret"), ("binaryData", True)):
        values = manifest.get(field)
        if not isinstance(values, dict):
            continue
        for value in values.values():
            text = value if isinstance(value, str) else json.dumps(value)
            total += _base64_length(text) if encoded else len(text.encode("utf-8"))
    return total


def size_problem(manifest, oid):
    """Why the API server would refuse ``manifest`` for its size (checked before any write), or None.

    ``manifest`` is the prepared object (namespace resolved, Secret ``stringData`` folded into
    ``data``), serialized as the client sends it.
    """
    data = data_size(manifest, oid)
    if data is not None and data > MAX_DATA_BYTES:
        return ("%s data is too large: %d bytes, the API server allows at most %d bytes (\"Too long: may not be "
                "more than %d bytes\")" % (oid.kind, data, MAX_DATA_BYTES, MAX_DATA_BYTES))
    # the request body as the client sends it (ASCII JSON: non-ASCII characters escaped)
    sent = len(json.dumps(manifest, separators=(",", ":"))) + STAMP_ALLOWANCE
    if sent > MAX_REQUEST_BYTES:
        return ("object is too large: about %d bytes of JSON in the request, more than the API server's request "
                "size limit of %d bytes" % (sent, MAX_REQUEST_BYTES))
    if sent > MAX_OBJECT_BYTES:
        # what the server stores (UTF-8, no escapes)
        stored = len(json.dumps(manifest, separators=(",", ":"), ensure_ascii=False).encode("utf-8")) + STAMP_ALLOWANCE
        if stored > MAX_OBJECT_BYTES:
            return ("object is too large: about %d bytes, more than the %d bytes etcd stores in one request by default "
                    "(the API server would answer 'etcdserver: request is too large')" % (stored, MAX_OBJECT_BYTES))
    return None


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


def secret_shape_problem(manifest):
    """Why a Secret's ``data`` / ``stringData`` cannot be sent (never naming a value), or None.

    The API server would refuse them with a message that quotes the value ("expected map, got
    &{...}"), so they are refused here, before any request.
    """
    for field, scalars in (("data", (str,)), ("stringData", (str, int, float, bool))):
        values = manifest.get(field)
        if values is None:
            continue
        if not isinstance(values, dict):
            return "%s must be a mapping of keys to %s, got a %s" % (
                field, "base64 strings" if field == "data" else "strings", type(values).__name__)
        for key, value in values.items():
            if not isinstance(key, str):
                return "%s keys must be strings, got a %s" % (field, type(key).__name__)
            if value is not None and not isinstance(value, scalars):
                return "%s[%r] must be a %s, got a %s" % (field, key, "base64 string" if field == "data" else "string",
                                                          type(value).__name__)
            if field == "data" and value and not _is_base64(value):
                return "data[%r] is not valid base64 (put plain text under stringData)" % (key,)
    return None


def _is_base64(text):
    """Valid base64 as the API server decodes it (standard alphabet, padded; line breaks ignored)."""
    try:
        base64.b64decode(text.replace("\n", "").replace("\r", ""), validate=True)
        return True
    except (ValueError, TypeError):
        return False


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


def canonical(manifest):
    """The part of a manifest its checksum covers (a new dict; the input is not changed)."""
    out = dict((k, v) for k, v in manifest.items() if k != "status")
    meta = dict(out.get("metadata") or {})
    for key in (*SERVER_METADATA, "namespace"):
        meta.pop(key, None)
    for field in ("labels", "annotations"):
        values = dict((k, v) for k, v in (meta.get(field) or {}).items() if not k.startswith(DOMAIN + "/"))
        if values:
            meta[field] = values
        else:
            meta.pop(field, None)
    out["metadata"] = meta
    return out


def checksum(manifest, oid, key=None):
    """``sha256:<hex>`` of the canonical form + identity; ``hmac-sha256:<hex>`` when ``key`` is given."""
    payload = json.dumps({"identity": list(oid), "object": canonical(manifest)}, sort_keys=True,
                         separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    if key is not None:
        return "hmac-sha256:" + hmac.new(key, payload, hashlib.sha256).hexdigest()
    return "sha256:" + hashlib.sha256(payload).hexdigest()


def stack_checksum(checksums):
    """Aggregate checksum of a whole stack (order-independent)."""
    return "sha256:" + hashlib.sha256("\n".join(sorted(checksums)).encode("utf-8")).hexdigest()


def owner_mark(stack, oid):
    """Short SHA-256 of the stack name and the object's identity (not a secret, a binding)."""
    text = "\n".join([stack, oid.group, oid.kind, oid.namespace, oid.name])
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:MARK_LENGTH]


def stamp(manifest, stack, oid, digest):
    """Add the stack label, checksum and owner mark to ``manifest`` (in place) and return it."""
    meta = manifest.setdefault("metadata", {})
    labels = dict(meta.get("labels") or {})
    labels[STACK_LABEL] = stack
    meta["labels"] = labels
    annotations = dict(meta.get("annotations") or {})
    annotations[CHECKSUM_ANNOTATION] = digest
    annotations[OWNER_ANNOTATION] = owner_mark(stack, oid)
    meta["annotations"] = annotations
    return manifest


def live_identity(obj, info):
    """Identity of a live object read through resource ``info``."""
    meta = obj.get("metadata") or {}
    return ObjectId(info.group, info.kind, (meta.get("namespace") or "") if info.namespaced else "", meta.get("name"))


def owned_by(obj, stack, oid):
    """True if live ``obj`` (identity ``oid``) is ``stack``'s: label matches *and* mark matches identity."""
    return label(obj, STACK_LABEL) == stack and annotation(obj, OWNER_ANNOTATION) == owner_mark(stack, oid)
