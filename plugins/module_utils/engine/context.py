# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the verbs of one run share: :class:`RunContext`, handed to each verb (:class:`Verb`) whole.

The client, discovery, the run's options, the stack (its name and its record), the run's worker threads (``map``),
its progress lines, its prune grace period, the stack's Lease while the run holds it (``ensure_lock``) and the
ChangeSet of the attempt under way. The manager (:class:`.manager.StackManager`) makes one per run and sequences the
verbs (:class:`.observe.Observer`, :class:`.apply.Applier`, :class:`.prune.Pruner`, :class:`.marks.Marker`,
:class:`.dryrun.DryRuns`) on it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.stacksync.k8s.plugins.module_utils.base.progress import NO_PROGRESS
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.pool import RunPool
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.record import StackRecord
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.discovery import Discovery


class RunContext:
    """One run of ``opts.stack`` with ``client``. ``discovery`` (default: a new one, cached as the options say),
    ``progress(verb, done, total)`` (see :mod:`.progress`) and ``map_fn`` (default: the run's thread pool of
    ``opts.concurrency`` workers) may be given."""

    def __init__(self, client, opts, discovery=None, progress=None, map_fn=None):
        self.client = client
        self.opts = opts
        self.stack = opts.stack
        self.progress = progress or NO_PROGRESS
        self.pool = RunPool(opts.concurrency) if map_fn is None else None
        self.map = map_fn or self.pool.map
        self.discovery = discovery or Discovery(client, cache_dir=opts.discovery_cache_dir, executor_map=self.map)
        self.record = StackRecord(client, opts.record_namespace, opts.stack, opts.field_manager)
        self.grace = opts.grace  # the prune grace period of this run (none for state absent)
        self.lock = None  # the stack's LeaseLock while the run writes
        self.changeset = None  # the ChangeSet of the attempt under way
        self.verified = None  # what this run and earlier ones found in sync (.insync.Verified), once read

    def ensure_lock(self, prove=False):
        """Stop before a write if the run no longer holds the stack's Lease (``prove``: see LeaseLock.ensure)."""
        if self.lock is not None:
            self.lock.ensure(prove)

    def close(self):
        if self.pool is not None:
            self.pool.close()


class Verb:
    """A step of a run: reads what it needs from its :class:`RunContext` (``run``)."""

    def __init__(self, run):
        self.run = run

    client = property(lambda self: self.run.client)
    opts = property(lambda self: self.run.opts)
    stack = property(lambda self: self.run.stack)
    discovery = property(lambda self: self.run.discovery)
    record = property(lambda self: self.run.record)
    map = property(lambda self: self.run.map)
    progress = property(lambda self: self.run.progress)
    grace = property(lambda self: self.run.grace)

    def ensure_lock(self, prove=False):
        self.run.ensure_lock(prove)
