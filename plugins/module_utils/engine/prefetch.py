# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read ahead: the stack's discovery, record and label-selected lists, while the manifests are rendered and prepared.

A no-op of 10,000 objects waits ~0.3-1 s for the server to list them (see docs/performance.md); the
engine only needs those lists once it has prepared the manifests. :class:`Prefetch` starts, in a
thread of its own, what the run's observation reads first -- discovery (from the disk cache, or the
server), the record, then one list per kind the record names, with the engine's selector and page
size -- and offers each answer to the client (:meth:`.client.KubeClient.offer`): the observation's
own calls take them instead of asking again, once. It decides nothing:

* the answers are the same requests the observation would send, a little earlier; a sync that writes
  plans again under its Lease, and those reads go to the server (an offer is taken once);
* in a ``stacksync.k8s.sources`` task of several stacks, a list is the run's part of the task's list of the kind
  (:mod:`.shared_lists`): the same objects, one request for all the task's stacks;
* a kind the run needs and the record does not name (a new kind, another version) is listed then, as
  before; a kind the record names and the run does not list is read for nothing (one request);
* a request that failed fails the call that takes it with the same error (a discovery that failed is
  not asked again: a server that does not answer fails the run once, not twice); anything else that
  goes wrong here only means nothing is offered.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import threading
from concurrent.futures import Future, ThreadPoolExecutor

from ansible_collections.stacksync.k8s.plugins.module_utils.base.constants import RECORD_LABEL, STACK_LABEL
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.observe import LIST_PAGE_SIZE
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.record import StackRecord
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.client import ApiError
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.discovery import Discovery


def answered(value=None, error=None):
    """A finished future holding ``value`` (or raising ``error``)."""
    future = Future()
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(value)
    return future


def recorded_kinds(record, stack):
    """The group/kinds the record object ``record`` (or None) names, if it is ``stack``'s record."""
    if record is None:
        return set()
    owner = ((record.get("metadata") or {}).get("labels") or {}).get(RECORD_LABEL)
    if owner != stack or (record.get("data") or {}).get("stack") != stack:
        return set()  # not this stack's: the engine refuses it when it reads it
    parsed = StackRecord(None, "", stack, None)
    parsed.data = record.get("data") or {}
    return parsed.group_kinds


class Prefetch:
    """The reads ahead of one run of stack ``stack`` on ``client`` (started at once; :meth:`ready`, :meth:`close`)."""

    def __init__(self, client, stack, record_namespace="kube-system", discovery_cache_dir=None, concurrency=16,
                 shared=None, connection=None):
        self.client = client
        self.stack = stack
        # the task's lists of every kind for all its stacks (.shared_lists), reached with ``connection``
        self.shared = shared if shared is not None and shared.serves(stack) else None
        self.connection = connection
        self.record = StackRecord(client, record_namespace, stack, None)
        self.concurrency = max(int(concurrency), 1)
        self.discovery = Discovery(client, cache_dir=discovery_cache_dir, executor_map=self.map)
        self.listed = []  # ResourceInfo of the kinds listed ahead
        self._pool = None
        self._pool_lock = threading.Lock()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="stacksync-prefetch")
        self._thread.daemon = True
        self._thread.start()

    def _executor(self):
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=self.concurrency)
            return self._pool

    def map(self, fn, items):
        """``map`` over a pool of ``concurrency`` threads (the discovery's parallel reads use it too)."""
        items = list(items)
        if len(items) <= 1 or self.concurrency == 1:
            return [fn(i) for i in items]
        return list(self._executor().map(fn, items))

    def _run(self):
        try:
            try:
                index = self.discovery.index
            except ApiError as e:
                self.discovery.failed_with(e)
                return
            try:
                record = self.client.get_now(self.record.path)
            except ApiError as e:
                self.client.offer(("get", self.record.path), answered(error=e))
                return
            self.client.offer(("get", self.record.path), answered(record))
            selector = "%s=%s" % (STACK_LABEL, self.stack)
            for group_kind in sorted(recorded_kinds(record, self.stack)):
                info = index.lookup(*group_kind)
                if info is None or not info.can("list"):
                    continue
                path = info.collection_path(None)
                if self.shared is not None:  # this stack's part of the task's list of the kind
                    future = self._executor().submit(self.shared.items, self.client, self.connection, self.stack,
                                                     path, LIST_PAGE_SIZE)
                else:
                    future = self._executor().submit(self.client.list_now, path, selector, LIST_PAGE_SIZE)
                self.client.offer(("list", path, selector, LIST_PAGE_SIZE), future)
                self.listed.append(info)
        except Exception:  # pylint: disable=broad-except
            pass  # nothing (more) offered: the run reads it itself
        finally:
            self._ready.set()

    def ready(self, timeout=None):
        """Wait until discovery is loaded and every read is sent (the engine may use the discovery from then on)."""
        return self._ready.wait(timeout)

    def close(self):
        """Stop the reads not yet sent (those under way end on their own)."""
        with self._pool_lock:
            if self._pool is not None:
                self._pool.shutdown(wait=False)
                self._pool = None
