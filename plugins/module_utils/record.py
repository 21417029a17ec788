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
* Lock (Lease ``stacksync-<stack>``): held while a run writes; expires if the holder dies.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import contextlib
import datetime
import hashlib
import os
import re
import socket
import threading
import time
import uuid

from ansible_collections.stacksync.k8s.plugins.module_utils.client import ApiError, quote_name
from ansible_collections.stacksync.k8s.plugins.module_utils.constants import RECORD_LABEL
from ansible_collections.stacksync.k8s.plugins.module_utils.identity import group_kind_str, parse_group_kind

CM_BASE = "/api/v1/namespaces/%s/configmaps"
SECRET_BASE = "/api/v1/namespaces/%s/secrets"
LEASE_BASE = "/apis/coordination.k8s.io/v1/namespaces/%s/leases"


#: DNS names a stack name may stand for as it is: what ``stacksync-<stack>`` then is.
PLAIN_NAME_RE = re.compile(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?")
#: longest stack name (a label value); a derived name is longer than any plain one.
MAX_STACK_LENGTH = 63


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


def _micro(ts):
    return datetime.datetime.utcfromtimestamp(ts).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _parse_micro(text):
    if not text:
        return 0.0
    text = text.rstrip("Z")
    fmt = "%Y-%m-%dT%H:%M:%S.%f" if "." in text else "%Y-%m-%dT%H:%M:%S"
    try:
        dt = datetime.datetime.strptime(text, fmt)
    except ValueError:
        return 0.0
    return (dt - datetime.datetime(1970, 1, 1)).total_seconds()


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
        self.resource_version = None

    @property
    def path(self):
        return (CM_BASE % quote_name(self.namespace)) + "/" + quote_name(self.name)

    def load(self):
        obj = self.client.get_or_none(self.path)
        _check_owner(obj, self.stack, "record")
        self.data = (obj.get("data") or {}) if obj is not None else None
        self.resource_version = (obj.get("metadata") or {}).get("resourceVersion") if obj is not None else None
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
        self.resource_version = (obj.get("metadata") or {}).get("resourceVersion")
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


class LockError(Exception):
    pass


class LeaseLock:
    """A ``coordination.k8s.io/v1`` Lease held for the run, renewed in the background.

    A run that dies stops renewing; after ``duration`` seconds the lease counts as expired and the
    next run takes it over. A second run waits up to ``timeout`` seconds, then fails naming the
    holder.
    """

    def __init__(self, client, namespace, stack, duration=60, timeout=300, poll=2.0, clock=time.time,
                 sleep=time.sleep):
        self.client = client
        self.namespace = namespace
        self.stack = stack
        self.name = object_name(stack)
        self.duration = int(duration)
        self.timeout = timeout
        self.poll = poll
        self.clock = clock
        self.sleep = sleep
        self.identity = "%s-%d-%s" % (socket.gethostname()[:40], os.getpid(), uuid.uuid4().hex[:8])
        self.took_over = False
        self.lost = None  # why the lock was lost (a message), or None
        self._renewed = 0.0  # clock() when the lease was last written by us
        self._obj = None
        self._stop = threading.Event()
        self._thread = None

    @property
    def path(self):
        return (LEASE_BASE % quote_name(self.namespace)) + "/" + quote_name(self.name)

    def _spec(self, acquire_time=None, transitions=0):
        now = _micro(self.clock())
        return {"holderIdentity": self.identity, "leaseDurationSeconds": self.duration,
                "acquireTime": acquire_time or now, "renewTime": now, "leaseTransitions": transitions}

    def _expired(self, spec):
        if not spec.get("holderIdentity"):
            return True
        renew = _parse_micro(spec.get("renewTime") or spec.get("acquireTime"))
        return renew + int(spec.get("leaseDurationSeconds") or self.duration) < self.clock()

    def acquire(self):
        deadline = self.clock() + self.timeout
        holder = None
        while True:
            body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": self.name, "namespace": self.namespace, "labels": {RECORD_LABEL: self.stack}},
                    "spec": self._spec()}
            try:
                self._obj = self.client.create(LEASE_BASE % quote_name(self.namespace), body)
                break
            except ApiError as e:
                if not e.is_conflict:
                    raise LockError("cannot create Lease %s/%s: %s" % (self.namespace, self.name, e)) from None
            current = self.client.get_or_none(self.path)
            if current is None:
                continue
            spec = current.get("spec") or {}
            holder = spec.get("holderIdentity")
            if holder == self.identity:  # our create went through but its answer was lost (retried: 409)
                self._obj = current
                break
            if self._expired(spec):
                current["spec"] = self._spec(transitions=int(spec.get("leaseTransitions") or 0) + 1)
                try:
                    self._obj = self.client.replace(self.path, current)
                    self.took_over = bool(holder)
                    break
                except ApiError as e:
                    if not e.is_conflict:
                        raise LockError("cannot take over Lease %s/%s: %s" % (self.namespace, self.name, e)) from None
                    continue
            if self.clock() >= deadline:
                raise LockError("stack %r is locked by another run (Lease %s/%s held by %s); waited %ss" % (
                    self.stack, self.namespace, self.name, holder, self.timeout))
            self.sleep(self.poll)
        self._renewed = self.clock()
        self._stop.clear()
        self._thread = threading.Thread(target=self._renew_loop, name="stacksync-lease")
        self._thread.daemon = True
        self._thread.start()
        return self

    def _renew_loop(self):
        """Renew every third of the lease; a renewal refused because the Lease changed or is gone
        means someone else holds it now (lost at once); other failures are retried until the lease
        would have expired."""
        interval = max(self.duration / 3.0, 0.5)
        while not self._stop.wait(interval):
            if not self.renew():
                return

    def renew(self):
        """Renew the lease once; returns False once it is lost (see :attr:`lost`)."""
        try:
            obj = dict(self._obj)
            spec = dict(obj.get("spec") or {})
            spec["renewTime"] = _micro(self.clock())
            obj["spec"] = spec
            started = self.clock()
            self._obj = self.client.replace(self.path, obj)
            self._renewed = started
            return True
        except ApiError as e:
            if e.is_conflict or e.is_not_found or self.clock() >= self._renewed + self.duration:
                self.lost = "renewing Lease %s/%s failed: %s" % (self.namespace, self.name, e)
                return False
            return True

    def ensure(self):
        """Raise :class:`LockError` unless the lock is still ours: not lost, and renewed within its duration
        (a margin of a tenth of it, as another run may take an expired lease over at once)."""
        if self._obj is None:
            raise LockError("stack %r: the Lease is not held" % self.stack)
        if not self.lost and self.clock() >= self._renewed + self.duration * 0.9:
            self.lost = "Lease %s/%s not renewed for %.0fs (its duration is %ss)" % (
                self.namespace, self.name, self.clock() - self._renewed, self.duration)
        if self.lost:
            raise LockError("stack %r: lost the lock (%s); stopping before the next write: another run may hold "
                            "it now" % (self.stack, self.lost))

    def release(self):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
        if self._obj is None:
            return
        meta = self._obj.get("metadata") or {}
        with contextlib.suppress(ApiError):  # taken over or already gone: nothing of ours to release
            preconditions = {"uid": meta.get("uid"), "resourceVersion": meta.get("resourceVersion")}
            self.client.delete(self.path, preconditions=preconditions)
        self._obj = None

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc):
        self.release()
        return False
