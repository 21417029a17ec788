# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The stack's lock: a ``coordination.k8s.io/v1`` Lease ``stacksync-<stack>`` in the record namespace.

Held while a run writes and renewed in the background; a run that dies stops renewing and the next
run takes an expired lease over. A run checks :meth:`LeaseLock.ensure` before each write stage: once
its lease was taken over, or not renewed in time, it stops. Before deleting it does more than read
its clock: ``ensure(prove=True)`` makes sure the server accepted a write of the Lease by this run
(an update with the resourceVersion of its last one, so it fails once anybody else wrote the Lease)
no longer ago than :attr:`LeaseLock.proof_age` -- writing one if need be. Every write of the Lease
(renewal or proof) is serialised, so the run never races itself.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import contextlib
import datetime
import os
import socket
import threading
import time
import uuid

from ansible_collections.stacksync.k8s.plugins.module_utils.base.constants import RECORD_LABEL
from ansible_collections.stacksync.k8s.plugins.module_utils.base.vocabulary import option
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.record import LEASE_BASE, object_name
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.client import ApiError, quote_name

#: a DELETE is sent at most this fraction of the lease duration after a Lease write the server accepted
PROOF_FRACTION = 0.1
#: the clock's verdict: a lease not renewed for this fraction of its duration counts as lost
OUTLIVED_FRACTION = 0.9


def _micro(ts):
    return datetime.datetime.fromtimestamp(ts, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


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


class LockError(Exception):
    """The stack's Lease cannot be held; ``api_error``: the server's answer that refused it (None: another reason)."""

    def __init__(self, message, api_error=None):
        super(LockError, self).__init__(message)
        self.api_error = api_error


def held_message(stack, namespace, name, holder, expires_in):
    """Who holds the stack's Lease and when it expires (``expires_in`` seconds from now, None if unknown)."""
    if expires_in is None:
        when = "when it expires is unknown"
    elif expires_in > 0:
        when = "it expires in %d s unless that run renews it" % max(1, round(expires_in))
    else:
        when = "it has expired"
    return ("stack %r is locked by another run (Lease %s/%s held by %s; %s: a run that was interrupted stops renewing "
            "it)" % (stack, namespace, name, holder, when))


def waiting_message(held, timeout):
    """The line said when a run starts waiting for the stack's Lease (``held``: :func:`held_message`)."""
    return "%s; waiting up to %s s for it" % (held, timeout)


class LeaseLock:
    """A ``coordination.k8s.io/v1`` Lease held for the run, renewed in the background.

    A run that dies stops renewing; after ``duration`` seconds the lease counts as expired and the
    next run takes it over. A second run waits up to ``timeout`` seconds, then fails naming the
    holder.
    """

    def __init__(self, client, namespace, stack, duration=60, timeout=300, poll=2.0, clock=time.time,
                 sleep=time.sleep, proof_age=None, on_wait=None):
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
        self.on_wait = on_wait  # on_wait(message): called once when the run starts waiting for another run's Lease
        self.waited = 0.0  # seconds the run waited for another run's Lease
        self.held_by = None  # held_message() of the Lease that the run waited for
        self.lost = None  # why the lock was lost (a message), or None
        self._renewed = 0.0  # clock() when a write of the lease the server accepted was sent
        self.proof_age = self.duration * PROOF_FRACTION if proof_age is None else float(proof_age)
        self.proofs = 0  # Lease writes made by ensure(prove=...) (not by the renewal thread)
        self._write = threading.Lock()  # one write of the Lease at a time: renewal and proofs never race
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

    def _expires_in(self, spec):
        renew = _parse_micro(spec.get("renewTime") or spec.get("acquireTime"))
        return renew + int(spec.get("leaseDurationSeconds") or self.duration) - self.clock() if renew else None

    def acquire(self):
        started = self.clock()
        deadline = started + self.timeout
        holder = None
        try:
            return self._acquire(deadline, holder)
        finally:
            self.waited = self.clock() - started if self.held_by else 0.0

    def _acquire(self, deadline, holder):
        while True:
            body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": self.name, "namespace": self.namespace, "labels": {RECORD_LABEL: self.stack}},
                    "spec": self._spec()}
            sent = self.clock()  # a proof counts from when its write was sent
            try:
                self._obj = self.client.create(LEASE_BASE % quote_name(self.namespace), body)
                break
            except ApiError as e:
                if not e.is_conflict:
                    raise LockError("cannot create Lease %s/%s: %s" % (self.namespace, self.name, e), e) from None
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
                sent = self.clock()
                try:
                    self._obj = self.client.replace(self.path, current)
                    self.took_over = bool(holder)
                    break
                except ApiError as e:
                    if not e.is_conflict:
                        raise LockError("cannot take over Lease %s/%s: %s" % (self.namespace, self.name, e), e) from None
                    continue
            held = held_message(self.stack, self.namespace, self.name, holder, self._expires_in(spec))
            if self.held_by is None:  # said once, as first found
                self.held_by = held
                if self.on_wait is not None:
                    self.on_wait(waiting_message(held, self.timeout))
            if self.clock() >= deadline:
                raise LockError("%s; waited %s s (%s)" % (held, self.timeout, option("wait_timeout")))
            self.sleep(self.poll)
        self._renewed = sent
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

    def _write_lease(self):
        """Write the Lease again (caller holds ``_write``): an update with the resourceVersion of our last
        write, so the server refuses it (409) once anybody else wrote it, and 404 once it was deleted."""
        obj = dict(self._obj)
        spec = dict(obj.get("spec") or {})
        spec["renewTime"] = _micro(self.clock())
        obj["spec"] = spec
        started = self.clock()
        self._obj = self.client.replace(self.path, obj)
        self._renewed = started

    def _outlived(self):
        """Mark the lock lost if the clock says it went unrenewed too long (a stalled or stopped process)."""
        idle = self.clock() - self._renewed
        if not self.lost and idle >= self.duration * OUTLIVED_FRACTION:
            self.lost = "Lease %s/%s not renewed for %.0fs (its duration is %ss)" % (
                self.namespace, self.name, idle, self.duration)
        return self.lost

    def renew(self):
        """Renew the lease once; returns False once it is lost (see :attr:`lost`)."""
        with self._write:
            if self.lost or self._outlived():
                return False
            try:
                self._write_lease()
                return True
            except ApiError as e:
                if e.is_conflict or e.is_not_found or self.clock() >= self._renewed + self.duration:
                    self.lost = "renewing Lease %s/%s failed: %s" % (self.namespace, self.name, e)
                    return False
                return True

    def ensure(self, prove=False):
        """Raise :class:`LockError` unless the lock is still ours: not lost, and renewed within its duration
        (a margin of a tenth of it, as another run may take an expired lease over at once).

        ``prove`` (before deleting): also make sure the server accepted a write of the Lease by this run
        at most :attr:`proof_age` seconds ago (``True``) or ``prove`` seconds ago (a number; ``0``: now),
        writing the Lease if not; a write refused because the Lease changed or is gone means another run
        holds it. The clock alone never proves the lock."""
        if self._obj is None:
            raise LockError("stack %r: the Lease is not held" % self.stack)
        with self._write:
            self._outlived()
            max_age = self.proof_age if prove is True else prove
            if not self.lost and prove is not False and prove is not None and self.clock() - self._renewed >= max_age:
                self._prove()
            if self.lost:
                raise LockError("stack %r: lost the lock (%s); stopping before the next write: another run may hold "
                                "it now" % (self.stack, self.lost))

    def _prove(self):
        """One Lease write for :meth:`ensure` (caller holds ``_write``)."""
        self.proofs += 1
        try:
            self._write_lease()
        except ApiError as e:
            if e.is_conflict or e.is_not_found:
                self.lost = "the Lease %s/%s was changed by someone else: %s" % (self.namespace, self.name, e)
                return
            raise LockError("stack %r: cannot prove that this run still holds its lock (writing Lease %s/%s failed: "
                            "%s); stopping before deleting anything" % (self.stack, self.namespace, self.name, e)) from None

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
