# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The stack's state on the cluster: record ConfigMap, HMAC key Secret, Lease lock.

All three live in ``record_namespace`` (default ``kube-system``), are named after the stack and
carry the label ``stacksync.io/record-of: <stack>`` -- *not* the stack label, so they are never
part of the stack's own objects or prune set.

* Record (ConfigMap ``stacksync-<stack>``): ``stack`` (the stack's name, checked on every read),
  ``checksum`` (aggregate of per-object checksums), ``commit``, ``groupKinds`` (``Kind.group``
  list, like ApplySet's ``contains-group-kinds``), ``lastSyncTime``, ``objectCount`` and
  ``objects`` (a short digest of each declared identity: another stack never prunes what this one
  still declares). Widened to union(old, new) *before* applying and narrowed
  after pruning, so a run that dies halfway never leaves a kind nobody lists.
* Key (Secret ``stacksync-<stack>-key``): the per-stack HMAC key for Secret checksums.
* Lock (Lease ``stacksync-<stack>``): held while a run writes; expires if the holder dies (:mod:`.lock`).

A stack is its name *and* its record namespace: two stacks of one name whose records live in different
namespaces label their objects alike, so each object also names the record namespace of the stack that
applied it last (annotation ``stacksync.io/record-namespace``, :func:`bound_elsewhere`). The records of
every stack are read cluster-wide (:func:`read_records`), or -- where the credentials may not -- in each
record namespace known to the run, saying which rights are missing.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import datetime
import hashlib
import os
import re

from ansible_collections.stacksync.k8s.plugins.module_utils.base.constants import RECORD_LABEL, RECORD_NAMESPACE_ANNOTATION
from ansible_collections.stacksync.k8s.plugins.module_utils.base.identity import group_kind_str, identity_digest, parse_group_kind
from ansible_collections.stacksync.k8s.plugins.module_utils.base.vocabulary import option
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.objects import stack_checksum
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.client import ApiError, quote_name

CM_BASE = "/api/v1/namespaces/%s/configmaps"
SECRET_BASE = "/api/v1/namespaces/%s/secrets"
#: every namespace's ConfigMaps (the records of all stacks, selected by label)
ALL_CMS = "/api/v1/configmaps"
#: the stack's Lease (:mod:`.lock`) and the collection where it is created
LEASE_BASE = "/apis/coordination.k8s.io/v1/namespaces/%s/leases"
#: kinds of a stack's state objects (record, key, lock), as ``(group, kind)``
STATE_KINDS = (("", "ConfigMap"), ("", "Secret"), ("coordination.k8s.io", "Lease"))


#: DNS names a stack name may stand for as it is: what ``stacksync-<stack>`` then is.
PLAIN_NAME_RE = re.compile(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?")


def object_name(stack, suffix=""):
    """DNS-safe name of a stack's record, key and Lease; distinct stack names never share one.

    A stack name that is already a lowercase DNS name is used as it is (``stacksync-<stack>``).
    Any other (capitals, ``_``) gets a name that no plain stack name can produce: its cleaned
    form followed by the full SHA-256 of the name, longer than ``stacksync-`` plus the longest
    label value, so ``Foo`` and a stack literally named ``foo-<hash>`` never meet.
    """
    if PLAIN_NAME_RE.fullmatch(stack):
        return "stacksync-" + stack + suffix
    clean = re.sub(r"[^a-z0-9-]+", "-", stack.lower()).strip("-")[:40]
    base = "stacksync-%s%s" % (clean + "-" if clean else "", hashlib.sha256(stack.encode("utf-8")).hexdigest())
    return base + suffix


def could_be_state(oid):
    """True if ``oid`` has the kind and name of a stack's record, key or Lease (in any namespace)."""
    return oid.group_kind in STATE_KINDS and oid.name.startswith("stacksync-")


def is_state_object(oid, record_namespaces):
    """True if ``oid`` names (or could name) any stack's record, key or Lease in one of ``record_namespaces``
    (a namespace or several).

    Manifests may not declare these: an overwritten record makes its stack forget what to prune,
    a foreign Lease locks it out. (Elsewhere, :mod:`.observe` refuses those that exist and are labelled
    as a stack's state.)
    """
    namespaces = (record_namespaces,) if isinstance(record_namespaces, str) else tuple(record_namespaces)
    return oid.namespace in namespaces and could_be_state(oid)


def bound_elsewhere(obj, record_namespace):
    """The record namespace live ``obj`` names if it is not ``record_namespace`` (None: ours, or unbound).

    The stack that applied an object last stamps its record namespace on it: an object labelled with our
    stack's name but bound to another record namespace is another stack's (of the same name)."""
    bound = ((obj.get("metadata") or {}).get("annotations") or {}).get(RECORD_NAMESPACE_ANNOTATION)
    return bound if bound and bound != record_namespace else None


def is_unbound(obj):
    """True for a live object stamped before objects named their record namespace."""
    return not ((obj.get("metadata") or {}).get("annotations") or {}).get(RECORD_NAMESPACE_ANNOTATION)


def now_rfc3339():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


#: what a run's error says when the server refused the credentials one of the stack's state objects: where they live,
#: the option that moves them (twice) and the rights they need (record: get, apply, delete; key: get, create,
#: delete; Lease: get, create, update, delete)
FORBIDDEN_STATE_HINT = (" (namespace %s, set by %s, holds the stack's record ConfigMap, key Secret and Lease: the "
                        "credentials need get, create, update, patch and delete on configmaps, secrets and "
                        "leases.coordination.k8s.io there; or set %s to a namespace where they have them)")


def forbidden_state_hint(error, record_namespace):
    """:data:`FORBIDDEN_STATE_HINT` for ``error`` when it is the server refusing (403) the credentials a request on
    the stack's record, key or Lease in ``record_namespace`` (an :class:`ApiError`, or an error carrying one as its
    ``api_error``), with the option named as the caller names it; "" for any other error."""
    api = error if isinstance(error, ApiError) else getattr(error, "api_error", None)
    if not isinstance(api, ApiError) or not api.is_forbidden or not record_namespace:
        return ""
    namespace = quote_name(record_namespace)
    path = (api.path or "").split("?")[0]
    ours = (path.startswith((CM_BASE % namespace) + "/stacksync-") or path == SECRET_BASE % namespace
            or path.startswith((SECRET_BASE % namespace) + "/stacksync-") or path == LEASE_BASE % namespace
            or path.startswith((LEASE_BASE % namespace) + "/stacksync-"))
    if not ours:
        return ""
    return FORBIDDEN_STATE_HINT % (record_namespace, option("record_namespace"), option("record_namespace"))


class RecordError(Exception):
    """The stack's state objects are not what this stack wrote (another stack's, or forged)."""


def _check_owner(obj, stack, what):
    """Raise :class:`RecordError` unless state object ``obj`` says it belongs to ``stack``."""
    if obj is None:
        return
    meta = obj.get("metadata") or {}
    owner = (meta.get("labels") or {}).get(RECORD_LABEL)
    recorded = (obj.get("data") or {}).get("stack") if what == "record" else owner
    if owner != stack or recorded != stack:
        says = recorded if recorded != stack else owner
        raise RecordError("the %s %s/%s does not belong to stack %r (it says %r); refusing to use it: delete it if "
                          "it was written by hand" % (what, meta.get("namespace"), meta.get("name"), stack, says))


class StackRecord:
    """Read and write the record ConfigMap."""

    def __init__(self, client, namespace, stack, field_manager):
        self.client = client
        self.namespace = namespace
        self.stack = stack
        self.field_manager = field_manager
        self.name = object_name(stack)
        self.data = None  # None: no record yet
        self.related_namespaces = set()  # other record namespaces of a stack of this name (seen on its objects)

    @property
    def path(self):
        return (CM_BASE % quote_name(self.namespace)) + "/" + quote_name(self.name)

    def load(self):
        obj = self.client.get_or_none(self.path)
        _check_owner(obj, self.stack, "record")
        self.data = (obj.get("data") or {}) if obj is not None else None
        return self.data

    @property
    def group_kinds(self):
        """Recorded group/kinds as a set of ``(group, kind)``."""
        text = (self.data or {}).get("groupKinds") or ""
        return set(parse_group_kind(x) for x in text.split(",") if x)

    def save(self, **fields):
        """Apply the record with ``fields`` merged over what is there (``group_kinds`` a set)."""
        data = dict(self.data or {})
        data["stack"] = self.stack
        gks = fields.pop("group_kinds", None)
        if gks is not None:
            data["groupKinds"] = ",".join(sorted(group_kind_str(g, k) for g, k in gks))
        for k, v in fields.items():
            if v is None:
                data.pop(k, None)
            else:
                data[k] = str(v)
        if data == self.data:
            return False
        body = {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": self.name, "namespace": self.namespace, "labels": {RECORD_LABEL: self.stack}},
                "data": data}
        obj = self.client.apply(self.path, body, self.field_manager, force=True)
        self.data = obj.get("data") or {}
        return True

    def delete(self):
        try:
            self.client.delete(self.path)
        except ApiError as e:
            if not e.is_not_found:
                raise
        self.data = None


class Claim(str):
    """A stack that declares an object: its name, with the namespace of its record (:attr:`record_namespace`)."""

    def __new__(cls, stack, record_namespace):
        out = str.__new__(cls, stack)
        out.record_namespace = record_namespace
        return out


class Records:
    """The stack records a run could read: ``items`` ``[(namespace, stack, data)]``; ``missing``: the
    rights it lacked to read those of a namespace that matters (empty: it read them all)."""

    def __init__(self):
        self.items = []
        self.missing = []
        self.cluster_wide = False
        self.unbelieved = []  # records outside the run's record namespaces: [(namespace, stack, data)]

    def believe(self, namespaces):
        """Keep only the records in ``namespaces`` (the run's record namespaces); the others go to ``unbelieved``.
        A record is a ConfigMap anyone who may write ConfigMaps in its namespace can make: one in a tenant's
        namespace must not make another stack keep (release) what it would prune."""
        namespaces = set(namespaces)
        self.unbelieved.extend(i for i in self.items if i[0] not in namespaces)
        self.items = [i for i in self.items if i[0] in namespaces]
        return self

    def add(self, objects):
        for obj in objects:
            meta = obj.get("metadata") or {}
            data = obj.get("data") or {}
            stack = (meta.get("labels") or {}).get(RECORD_LABEL)
            if stack and data.get("stack") == stack:  # a record whose fields disagree is nobody's
                self.items.append((meta.get("namespace") or "", stack, data))

    def claims(self, stack, record_namespace, unbelieved=False):
        """``{identity digest: [Claim]}`` of what the records of the *other* stacks declare (a stack of the
        same name with its record in another namespace is another stack); ``unbelieved``: the records outside
        the run's record namespaces (:meth:`believe`) instead."""
        out = {}
        for namespace, other, data in sorted(self.unbelieved if unbelieved else self.items, key=lambda i: (i[1], i[0])):
            if other == stack and namespace == record_namespace:
                continue
            for digest in (data.get("objects") or "").split(","):
                if digest:
                    out.setdefault(digest, []).append(Claim(other, namespace))
        return out

    def namesakes(self, stack, record_namespace):
        """Namespaces holding a record of another stack named ``stack`` (unbelieved ones too: they only keep
        objects that cannot be told apart, never make anything pruned or released)."""
        return sorted(set(ns for ns, other, _d in self.items + self.unbelieved
                          if other == stack and ns != record_namespace))


def read_records(client, namespaces, map_fn=None):
    """:class:`Records` of every stack: listed cluster-wide by label; where that is forbidden, in each of
    ``namespaces`` (the record namespaces that matter: the run's own, those of the other stacks of its
    sync, those its objects name), each one it may not list named in ``missing``."""
    out = Records()
    try:
        out.add(client.list(ALL_CMS, label_selector=RECORD_LABEL))
        out.cluster_wide = True
        return out
    except ApiError as e:
        if not e.is_forbidden:
            raise

    def fetch(namespace):
        try:
            return namespace, client.list(CM_BASE % quote_name(namespace), label_selector=RECORD_LABEL)
        except ApiError as e:
            if e.is_forbidden:
                return namespace, None
            raise

    for namespace, objects in (map_fn or map)(fetch, sorted(set(namespaces))):
        if objects is None:
            out.missing.append("list configmaps in namespace %s" % namespace)
        else:
            out.add(objects)
    return out


class StackKey:
    """The per-stack HMAC key for Secret checksums (Secret ``stacksync-<stack>-key``)."""

    def __init__(self, client, namespace, stack, field_manager):
        self.client = client
        self.namespace = namespace
        self.stack = stack
        self.field_manager = field_manager
        self.name = object_name(stack, "-key")

    @property
    def path(self):
        return (SECRET_BASE % quote_name(self.namespace)) + "/" + quote_name(self.name)

    def load(self):
        obj = self.client.get_or_none(self.path)
        if obj is None:
            return None
        _check_owner(obj, self.stack, "key Secret")
        value = (obj.get("data") or {}).get("key")
        return base64.b64decode(value) if value else None

    def create(self):
        """Create the key (or read the one a concurrent run created first)."""
        key = os.urandom(32)
        body = {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                "metadata": {"name": self.name, "namespace": self.namespace, "labels": {RECORD_LABEL: self.stack}},
                "data": {"key": base64.b64encode(key).decode("ascii")}}
        try:
            self.client.create(SECRET_BASE % quote_name(self.namespace), body)
            return key
        except ApiError as e:
            if e.is_conflict:
                return self.load()
            raise

    def delete(self):
        try:
            self.client.delete(self.path)
        except ApiError as e:
            if not e.is_not_found:
                raise


def record_fields(desired, recorded_gks, unverified, remaining, pruned_ok, commit=None, source=None):
    """What the record should say at the end of a run (pure).

    The group/kinds are narrowed to what is desired, what is left behind (``remaining``) and what
    could not be checked -- but only after a prune that ran (``pruned_ok``); otherwise the recorded
    ones are kept, so a kind is never forgotten while objects of it may remain. ``source``: the stack's
    owning source (a run without one leaves the recorded one as it is).
    """
    gks = set(d.oid.group_kind for d in desired) | set(remaining) | set(unverified)
    if not pruned_ok:
        gks |= set(recorded_gks)
    fields = dict(group_kinds=gks, checksum=stack_checksum([d.checksum for d in desired]), objectCount=len(desired),
                  objects=",".join(sorted(identity_digest(d.oid) for d in desired)))
    if commit:
        fields["commit"] = commit
    if source:
        fields["source"] = source
    return fields


def record_would_change(data, recorded_gks, fields):
    """True if saving ``fields`` would change the record ``data`` (None: no record yet)."""
    if data is None or fields["group_kinds"] != set(recorded_gks):
        return True
    return any(key in fields and str(fields[key]) != data.get(key)
               for key in ("checksum", "objectCount", "commit", "objects", "source"))
