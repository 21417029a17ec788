# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Is a manifest something the API server would accept? Pure, no I/O.

Checked before any request, so a bad manifest fails the whole run with a message naming its file
and document instead of a half-applied stack: shape, names and label values (validated as
kube-apiserver validates them, full matches), the Secret ``data`` shape, and the size limits of the
API server and etcd.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import functools
import json
import re

from ansible_collections.stacksync.k8s.plugins.module_utils.base.constants import SOURCE_ANNOTATION
from ansible_collections.stacksync.k8s.plugins.module_utils.base.identity import group_of

LABEL_VALUE_RE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


LABEL_NAME_RE = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")


DNS_SUBDOMAIN_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


DNS_LABEL_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


KIND_RE = re.compile(r"[A-Za-z][A-Za-z0-9]*")


#: Kinds whose names the API server validates only as path segments (no '/', '%', '.', '..'):
#: RBAC objects carry names such as ``system:aggregate-to-admin``.
PATH_SEGMENT_NAME_KINDS = frozenset([
    ("rbac.authorization.k8s.io", "Role"), ("rbac.authorization.k8s.io", "ClusterRole"),
    ("rbac.authorization.k8s.io", "RoleBinding"), ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
])


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


#: label keys and values checked, remembered: thousands of manifests carry the same few
CHECKED_CACHE = 1 << 14


def valid_label_value(value):
    return isinstance(value, str) and _valid_label_value(value)


@functools.lru_cache(maxsize=CHECKED_CACHE)
def _valid_label_value(value):
    return len(value) <= 63 and bool(LABEL_VALUE_RE.fullmatch(value))


def valid_label_key(key):
    return isinstance(key, str) and _valid_label_key(key)


@functools.lru_cache(maxsize=CHECKED_CACHE)
def _valid_label_key(key):
    if not key:
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
    # Services too: kube-apiserver v1.36 takes '1web' (RelaxedServiceNameValidation), refuses 'web.x'
    if group == "" and kind in ("Namespace", "Service"):
        if len(name) > 63 or not DNS_LABEL_RE.fullmatch(name):
            return "a DNS-1123 label: at most 63 lowercase letters, digits or '-', starting and ending with a letter or digit"
        return None
    if not DNS_SUBDOMAIN_RE.fullmatch(name):
        return "a DNS-1123 subdomain: lowercase letters, digits, '-' and '.', starting and ending with a letter or digit"
    return None


def type_name(value):
    """The YAML / JSON name of a value's type, for messages (``mapping``, ``integer``, ``null``, ...)."""
    if value is None:
        return "null"
    return {dict: "mapping", list: "list", str: "string", bool: "boolean", int: "integer",
            float: "number"}.get(type(value), type(value).__name__)


def is_list_kind(manifest):
    """``kind: List`` (or any ``*List``) holding ``items``: the lookup flattens it, the module refuses it."""
    kind = manifest.get("kind") if isinstance(manifest, dict) else None
    return isinstance(kind, str) and kind.endswith("List") and isinstance(manifest.get("items"), list)


#: A document with neither apiVersion nor kind: a YAML file that is no manifest (Helm values, CI configuration).
NOT_AN_OBJECT = ("not a Kubernetes object (no apiVersion and no kind): leave out what is not a manifest "
                 "(the manifests lookup's option exclude)")


@functools.lru_cache(maxsize=CHECKED_CACHE)
def _valid_type(api_version, kind):
    """A well-formed ``apiVersion`` and ``kind`` (both non-empty strings)."""
    return api_version.count("/") <= 1 and bool(KIND_RE.fullmatch(kind))


def _type_problem(manifest):
    """Why ``apiVersion`` / ``kind`` are missing or malformed, or None."""
    api_version, kind = manifest.get("apiVersion"), manifest.get("kind")
    # exact types on purpose: the common case in one test (a str subclass takes the slower path below)
    if (type(api_version) is str and type(kind) is str and api_version and kind and _valid_type(api_version, kind)  # pylint: disable=unidiomatic-typecheck
            and not is_list_kind(manifest)):
        return None  # the common case, decided once per apiVersion and kind
    if manifest.get("apiVersion") in (None, "") and manifest.get("kind") in (None, ""):
        return NOT_AN_OBJECT
    for field in ("apiVersion", "kind"):
        value = manifest.get(field)
        if value is None or value == "":
            return "missing %s" % field
        if not isinstance(value, str):
            return "%s must be a string, got %s" % (field, type_name(value))
    if manifest["apiVersion"].count("/") > 1:
        return "invalid apiVersion %r: must be a string like 'v1' or 'apps/v1'" % manifest["apiVersion"]
    if not KIND_RE.fullmatch(manifest["kind"]):
        return "invalid kind %r: must be a string of letters and digits, starting with a letter" % manifest["kind"]
    if is_list_kind(manifest):
        return "List objects are not supported; give the items as separate resources"
    return None


def _name_problem(manifest, meta):
    """Why ``metadata.name`` / ``metadata.namespace`` would be refused, or None."""
    if "generateName" in meta:
        return "metadata.generateName is not allowed: a synced object needs a stable metadata.name"
    name = meta.get("name")
    if name is None or name == "":
        return "missing metadata.name"
    if not isinstance(name, str):
        return "metadata.name must be a string, got %s %r (quote it)" % (type_name(name), name)
    name_problem = invalid_name(group_of(manifest["apiVersion"]), manifest["kind"], name)
    if name_problem:
        return "invalid metadata.name %r: %s" % (name, name_problem)
    ns = meta.get("namespace")
    if ns is None:
        return None
    if not isinstance(ns, str):
        return "metadata.namespace must be a string, got %s %r (quote it)" % (type_name(ns), ns)
    if ns and (len(ns) > 63 or not DNS_LABEL_RE.fullmatch(ns)):
        return ("invalid metadata.namespace %r: a DNS-1123 label: at most 63 lowercase letters, digits or '-', "
                "starting and ending with a letter or digit" % ns)
    return None


def _string_map_problem(meta, field):
    """Why ``metadata.labels`` / ``metadata.annotations`` would be refused (keys, value types, label values), or None."""
    value = meta.get(field)
    if value is None:
        return None
    if not isinstance(value, dict):
        return "metadata.%s must be a mapping, got %s" % (field, type_name(value))
    for key, item in value.items():
        if not valid_label_key(key):
            return "invalid %s key %r" % (field[:-1], key)
        if not isinstance(item, str):
            return "metadata.%s[%s] must be a string, got %s %r (quote it)" % (field, key, type_name(item), item)
        if field == "labels" and not valid_label_value(item):
            return ("invalid label value %r for %r (at most 63 characters: letters, digits, '-', '_', '.', "
                    "beginning and ending with a letter or digit)" % (item, key))
    return None


def manifest_problem(manifest):
    """Why ``manifest`` is not a well-formed object we can apply (None if it is): the one set of rules
    of the lookup and the module. The message names no location; callers add it."""
    if not isinstance(manifest, dict):
        return "the document is not a mapping (got %s)" % type_name(manifest)
    problem = _type_problem(manifest)
    if problem:
        return problem
    meta = manifest.get("metadata")
    if meta is None:
        return "missing metadata.name"
    if not isinstance(meta, dict):
        return "metadata must be a mapping, got %s" % type_name(meta)
    return (_name_problem(manifest, meta) or _string_map_problem(meta, "labels")
            or _string_map_problem(meta, "annotations"))


def validate_manifest(manifest, index=None):
    """Raise :class:`ManifestError` unless ``manifest`` is a well-formed object we can apply; the message
    starts with :func:`describe` (the manifest, and its file and document or ``resources[N]``)."""
    problem = manifest_problem(manifest)
    if problem:
        raise ManifestError("%s: %s" % (describe(manifest, index), problem))


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


def size_problem(manifest, oid, bound=None):
    """Why the API server would refuse ``manifest`` for its size (checked before any write), or None.

    ``manifest`` is the prepared object (namespace resolved, Secret ``stringData`` folded into
    ``data``), serialized as the client sends it. ``bound``: an upper bound of that size known already
    (:func:`.objects.sent_size_bound`); an object surely below the limits is not serialized again.
    """
    data = data_size(manifest, oid)
    if data is not None and data > MAX_DATA_BYTES:
        return ("%s data is too large: %d bytes, the API server allows at most %d bytes (\"Too long: may not be "
                "more than %d bytes\")" % (oid.kind, data, MAX_DATA_BYTES, MAX_DATA_BYTES))
    if bound is not None and bound + STAMP_ALLOWANCE <= MAX_OBJECT_BYTES:
        return None
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
