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
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import datetime
import hashlib
import os
import re

from ansible_collections.stacksync.k8s.plugins.module_utils.client import ApiError, quote_name
from ansible_collections.stacksync.k8s.plugins.module_utils.constants import RECORD_LABEL
from ansible_collections.stacksync.k8s.plugins.module_utils.identity import group_kind_str, identity_digest, parse_group_kind
from ansible_collections.stacksync.k8s.plugins.module_utils.objects import stack_checksum

CM_BASE = "/api/v1/namespaces/%s/configmaps"
SECRET_BASE = "/api/v1/namespaces/%s/secrets"


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


def is_state_object(oid, record_namespace):
    """True if ``oid`` names (or could name) any stack's record, key or Lease in ``record_namespace``.

    Manifests may not declare these: an overwritten record makes its stack forget what to prune,
    a foreign Lease locks it out.
    """
    if oid.namespace != record_namespace or not oid.name.startswith("stacksync-"):
        return False
    return (oid.group, oid.kind) in (("", "ConfigMap"), ("", "Secret"), ("coordination.k8s.io", "Lease"))


def now_rfc3339():
    return datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%M:%SZ")


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

    def declared_elsewhere(self):
        """``{identity digest: [stack]}`` of what the *other* stacks' records in this namespace declare."""
        out = {}
        for obj in self.client.list(CM_BASE % quote_name(self.namespace), label_selector=RECORD_LABEL):
            data = obj.get("data") or {}
            other = ((obj.get("metadata") or {}).get("labels") or {}).get(RECORD_LABEL)
            if not other or other == self.stack or data.get("stack") != other:
                continue
            for digest in (data.get("objects") or "").split(","):
                if digest:
                    out.setdefault(digest, []).append(other)
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
