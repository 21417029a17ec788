# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The sync engine: ``StackManager(client, stack, **options).sync(resources) -> ChangeSet``.

A thin sequencer of one verb per module (fluxcd/pkg ssa's ResourceManager is the model; see docs/architecture.md):
**prepare** (:mod:`.prepare`), **observe** (:mod:`.observe`), **plan** (:mod:`.plan`: the applies and the prune plan,
on fresh discovery with the facts :mod:`.prune` reads; shared by ``sync``, check mode, ``stack_info`` and ``state:
absent``), then **execute**: nothing if the plan writes nothing (no lock, no write); only the record if nothing else
changed (a new commit: under the Lease, unless another run recorded meanwhile); else under the stack's Lease plan
again, widen the record, **apply** (:mod:`.apply`), **wait** (:mod:`.wait`), **prune** (:mod:`.prune`), narrow the
record. ``wait`` covers every object the stack applies or finds unchanged, whether the run writes or not. Whether
it prunes is the prune gate's (:mod:`.gate`): asked before planning, on the plan (before any write) and after the
applies. Check mode executes with server-side dry runs (and does not wait).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import contextlib

from ansible_collections.stacksync.k8s.plugins.module_utils.base.identity import group_kind_str
from ansible_collections.stacksync.k8s.plugins.module_utils.base.progress import note, paused
from ansible_collections.stacksync.k8s.plugins.module_utils.base.vocabulary import option
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import diff as _diff
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import drift as _drift
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import fieldsv1 as _fieldsv1
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import gate, insync
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import owned as _owned
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import plan as P
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.apply import Applier, ApplyError, foreign_owned, shared_objects
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.changeset import ChangeSet
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.context import RunContext, Verb
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.grace import unmarks
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.lock import LeaseLock, LockError
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.marks import Marker
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.objects import is_secret, stack_checksum
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.observe import Observer
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.options import OptionError, StackOptions
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.prepare import PrepareError, prepare, stamp_all
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.prune import Pruner
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.prune_steps import PruneSteps, StackError, needs_facts
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.record import (
    RecordError,
    StackKey,
    forbidden_state_hint,
    now_rfc3339,
    record_fields,
    record_would_change,
)
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.report import stack_report
from ansible_collections.stacksync.k8s.plugins.module_utils.health.wait import awaited, wait_for
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.client import ApiError

#: errors of the steps that end a run with a StackError
RUN_ERRORS = (ApiError, LockError, RecordError, ApplyError)

_DECIDING = []  # the digest of the code that decides whether an object is in sync (computed once per process)


def deciding_code():
    """:func:`.insync.code_digest` of the modules that decide whether an object is in sync."""
    if not _DECIDING:
        _DECIDING.append(insync.code_digest([P, _drift, _owned, _fieldsv1, _diff, insync]))
    return _DECIDING[0]


class StackManager(PruneSteps, Verb):
    """Converge one stack. See the module documentation for the meaning of every option. The run's context
    (:class:`.context.RunContext`: client, discovery, options, the stack and its record, progress, the Lease held, the
    ChangeSet under way) is ``run``, handed to each verb whole."""

    def __init__(self, client, stack, discovery=None, opts=None, progress=None, **options):
        try:
            opts = opts or StackOptions(stack, **options)
        except OptionError as e:
            raise StackError(str(e)) from None
        super(StackManager, self).__init__(RunContext(client, opts, discovery, progress))
        self._key = None
        self.key_store = StackKey(client, opts.record_namespace, stack, opts.field_manager)
        self.observer, self.pruner, self.marker = Observer(self.run), Pruner(self.run), Marker(self.run)
        self.last_plan, self.pruning = None, False  # the plan of the last run, and whether it pruned (a check's plan)
        self._verified, self._verified_path = None, None  # what earlier runs found in sync (see .insync)
        self._lock_wait = None  # (warning, seconds) when the run waited for another run's Lease

    # -- helpers ------------------------------------------------------------------------------
    def close(self):
        self.run.close()

    @contextlib.contextmanager
    def _locked(self):
        """Hold the stack's Lease. Waiting for another run's is said at once (a progress note) and, once the Lease is
        held, as a warning; the seconds waited are the ChangeSet's ``lock_wait``, apart from the run's own time."""
        with LeaseLock(self.client, self.opts.record_namespace, self.stack, duration=self.opts.lease_duration,
                       timeout=self.opts.lock_timeout, on_wait=lambda text: note(self.progress, text)) as lock:
            if lock.waited:
                paused(self.progress, lock.waited)
                self._lock_wait = ("%s; waited %.0f s for it" % (lock.held_by, lock.waited), round(lock.waited, 2))
            self.run.lock = lock
            try:
                yield lock
            finally:
                self.run.lock = None

    @contextlib.contextmanager
    def _run(self, changeset):
        """Turn the steps' errors into a StackError carrying the run's changeset (``run.changeset``, which a
        locked attempt replaces); drop a discovery cache that may be stale."""
        self.run.changeset = changeset
        try:
            yield
        except RUN_ERRORS as e:
            self.discovery.invalidate()
            raise StackError(str(e) + forbidden_state_hint(e, self.opts.record_namespace), self.run.changeset) from None
        except StackError as e:
            self.discovery.invalidate()  # a stale cached kind may be why it failed
            e.changeset = e.changeset or self.run.changeset
            raise
        finally:
            self.close()

    def _new_attempt(self, changeset):
        """A new ChangeSet for the locked attempt, with the warnings of the first, and the wait for the lock."""
        out = ChangeSet()
        out.warnings = list(changeset.warnings)
        if self._lock_wait is not None:
            out.warn(self._lock_wait[0])
            out.lock_wait = self._lock_wait[1]
        return out

    def _load_key(self, desired, create):
        if not any(is_secret(d.oid) for d in desired):
            return None
        if self._key is None:
            self._key = self.key_store.load()
            if self._key is None and create:
                self._key = self.key_store.create()
        return self._key

    # -- the verbs ----------------------------------------------------------------------------
    def prepare(self, resources, changeset):
        """Validate and resolve ``resources``: ``[Desired]`` (raises StackError, writes nothing)."""
        try:
            return prepare(resources, self.discovery, self.opts, changeset.warn)
        except PrepareError as e:
            raise StackError(str(e)) from None

    def plan(self, desired, changeset, pruning, with_facts=True):
        """Observe and plan; when anything would be deleted, on fresh discovery and (``with_facts``) with the
        prune facts. A plan without them may delete less once they are read (:meth:`with_facts`)."""
        keep = len(changeset.warnings)
        plan = self._plan(desired, self.observer.observe(desired, changeset), pruning, changeset)
        if not needs_facts(plan):
            return plan
        index, changed = self.discovery.server_index()
        if changed:  # the cached index was stale: what it said about scopes and kinds cannot be trusted
            for d in desired:
                info = index.lookup(d.oid.group, d.oid.kind, d.info.version)
                if not d.from_crd and (info is None or info.namespaced != d.info.namespaced):
                    raise StackError("the cluster's API changed while the run started (%s); nothing was written, "
                                     "run again" % group_kind_str(*d.oid.group_kind), changeset)
            changeset.reset(keep)
            plan = self._plan(desired, self.observer.observe(desired, changeset), pruning, changeset)
        return self.with_facts(desired, plan) if with_facts else plan

    def with_facts(self, desired, plan):
        """The prune plan with its facts: what other stacks declare, what Namespaces / CRDs hold."""
        if needs_facts(plan) and not plan.has_facts:
            declared, contents, kept = self.pruner.facts(plan.prune)
            plan.prune = self._prune_plan(plan.snap, desired, declared, contents, kept, with_facts=True)
        plan.has_facts = True
        return plan

    def verified(self):
        """What earlier runs of the stack found in sync (:mod:`.insync`), read once."""
        if self._verified is None:
            self._verified_path = insync.memo_path(
                self.opts.discovery_cache_dir, getattr(self.client, "server", None), self.stack,
                self.opts.record_namespace, self.opts.field_manager, self.opts.takeover_managers, deciding_code())
            self._verified = insync.load(self._verified_path)
            if self._verified_path:  # kept for the next run: what the applies leave in sync is noted too
                self.run.verified = self._verified
        return self._verified

    def _plan(self, desired, snap, pruning, changeset):
        to_apply, unchanged, ignored = P.apply_plan(desired, snap.ours, self.opts.field_manager, self.opts.takeover,
                                                    self.verified())
        # what another source of this run declares too, and keeps
        to_apply, yielded, warnings = self.opts.run_sources.split(to_apply, snap, self.stack, self.opts.source)
        for warning in warnings:
            changeset.warn(warning)
        prune = self._prune_plan(snap, desired) if pruning else None
        return P.Plan(snap, to_apply, unchanged, ignored, prune, yielded)

    def _end_fields(self, desired, plan, remaining, pruned_ok):
        # the owning source is adopted by the first run that has one (see gate.OTHER_SOURCE)
        return record_fields(desired, self.record.group_kinds, plan.snap.unverified, remaining, pruned_ok,
                             self.opts.commit, self.opts.source)

    def _no_object_fields(self, desired, plan):
        """The record's fields after a run that writes no object (None if it writes one)."""
        if (plan.to_apply or unmarks(desired, plan.snap.ours) if self.opts.applying else []) or plan.deletes:
            return None
        return self._end_fields(desired, plan, plan.staying_kinds(self.stack), plan.prune is not None)

    def _nothing_to_write(self, fields):
        """``fields`` (:meth:`_no_object_fields`) say that no object is written and the record stays as it is."""
        return fields is not None and not (self.opts.writes_record and record_would_change(self.record.data, self.record.group_kinds, fields))

    def _record_only(self, fields):
        """Under the Lease: whether a plan that writes no object, only the record (a new commit of the same
        manifests), may save the record without observing again: no run recorded anything since it was observed."""
        observed = self.record.data
        return not (fields is None or observed is None or not self.opts.writes_record or self.record.load() != observed)

    def _result_without_writes(self, plan, changeset, fields, save_record=False):
        """The ChangeSet of a run that writes no object (its stack checksum is the record's): with ``wait``, once
        the stack's objects are ready; ``save_record`` (under the Lease, :meth:`_record_only`): then saves the
        record. Raises StackError if the wait fails (the record is then left as it is, as by :meth:`execute`)."""
        P.report_plan(plan, changeset, self.opts.applying)
        if plan.prune is not None:  # what waits for its prune grace, deletions of an approved plan that no longer apply
            self._report_later(plan.prune, changeset)
        changeset.checksum = fields["checksum"]
        self._wait_ready([], plan, changeset)
        if save_record and not changeset.errors:
            self.ensure_lock()
            self.record.save(lastSyncTime=now_rfc3339(), **fields)
        return self._failed_or(changeset)

    def _wait_ready(self, written, plan, changeset):
        """With ``wait`` (a run that applies, not a dry run, nothing failed so far): wait until every object of the
        stack the run applied (``written``) or found unchanged (``plan.unchanged``) is ready, as a retry must fail
        where the first run failed. Each is judged first from what the apply answered or the plan observed; only
        those not ready yet are read again (:func:`.wait.wait_for`). Errors go to ``changeset``, healths to its
        entries."""
        if not (self.opts.wait and self.opts.applying) or changeset.errors:
            return
        objects = awaited(written, plan.unchanged, plan.snap.ours)
        if not objects:
            return
        healths = {}
        changeset.errors.extend(wait_for(self.client, objects, self.opts.wait_rules, self.opts.wait_timeout,
                                         self.opts.poll_interval, self.map, healths=healths, progress=self.progress))
        changeset.record_health(healths)

    def _failed_or(self, changeset):
        """``changeset``, or a StackError naming its errors (up to 10) when it has any."""
        if changeset.errors:
            failed = len(changeset.errors)
            raise StackError("stack %r: %s%s" % (self.stack, "" if failed == 1 else "%d objects failed: " % failed,
                                                 "; ".join(changeset.errors[:10])), changeset)
        return changeset

    def execute(self, desired, plan, changeset, dry_run, facts):
        """Carry out ``plan`` (server-side dry runs with ``dry_run``; ``facts``: the gate's); fills ``changeset``."""
        P.report_plan(plan, changeset, self.opts.applying)
        to_apply = plan.to_apply if self.opts.applying else []
        left = set(id(d) for d, _m in plan.yielded)
        shared_objects([d for d in desired if id(d) not in left] if self.opts.applying else [], plan.snap, self.opts,
                       changeset)
        if self.opts.fail_on_shared and self.opts.applying and to_apply:
            foreign = foreign_owned(self.client, to_apply, plan.snap.ours, self.map)
            if foreign:
                raise StackError("objects managed by another deployment tool (%s is set): %s" % (option("fail_on_shared"),
                                 "; ".join("%s (%s)" % (d.named(), tool) for d, tool in foreign[:20])), changeset)
        changeset.checksum = stack_checksum([d.checksum for d in desired])
        if self.opts.applying and not dry_run:
            widened = self.record.group_kinds | set(d.oid.group_kind for d in desired)
            if self.record.data is None or widened != self.record.group_kinds:
                self.ensure_lock()
                self.record.save(group_kinds=widened)
        applier = Applier(self.run)
        written = applier.apply_all(to_apply, plan.snap.ours, changeset, dry_run)
        if self.opts.applying:  # back in git: its prune mark goes
            self.marker.unmark(unmarks(desired, plan.snap.ours), changeset, dry_run)
        if not dry_run:  # check mode does not wait
            self._wait_ready(written, plan, changeset)
        remaining, pruned_ok = self._prune(plan, changeset, dry_run, facts)
        if self.opts.writes_record and not changeset.errors and not dry_run:
            fields = self._end_fields(desired, plan, remaining, pruned_ok)
            if changeset.changed or record_would_change(self.record.data, self.record.group_kinds, fields):
                fields["lastSyncTime"] = now_rfc3339()
                self.ensure_lock()
                self.record.save(**fields)
        return self._failed_or(changeset)

    # -- public entry points ------------------------------------------------------------------
    def sync(self, resources):
        """Converge the stack to ``resources`` (state=present). Returns a ChangeSet; raises StackError. What the run
        found in sync is remembered for the next (:mod:`.insync`)."""
        cs = self._sync(resources)
        if self._verified is not None:
            insync.save(self._verified_path, self._verified)
        return cs

    def _sync(self, resources):
        cs = ChangeSet()
        with self._run(cs):
            desired = self.prepare(resources, cs)
            facts = gate.facts_of(self.opts, desired=len(desired))
            decision = self._gate(facts)  # refused before any request if it needs no plan (an empty set)
            pruning, planning = decision.prune, gate.plans_prune(facts, decision)
            first_key = self._load_key(desired, create=False)
            stamp_all(desired, self.stack, first_key)
            plan = self.last_plan = self.plan(desired, cs, planning, with_facts=self.opts.check_mode)
            self._gate(facts, desired, plan)
            plan.prune = plan.prune if pruning else None  # planned only to check an approved plan's deletions
            if self.opts.check_mode:
                return self.execute(desired, plan, cs, dry_run=True, facts=facts)
            fields = self._no_object_fields(desired, plan)  # None if the plan writes an object
            if self._nothing_to_write(fields):
                return self._result_without_writes(plan, cs, fields)
            with self._locked():
                cs = self.run.changeset = self._new_attempt(cs)
                if self._record_only(fields):
                    return self._result_without_writes(plan, cs, fields, save_record=True)
                key = self._load_key(desired, create=self.opts.applying)
                if key != first_key:  # created just now: only keyed (Secret) checksums depend on it
                    stamp_all([d for d in desired if is_secret(d.oid)], self.stack, key)
                plan = self.plan(desired, cs, planning)
                self._gate(facts, desired, plan)
                plan.prune = plan.prune if pruning else None
                return self.execute(desired, plan, cs, dry_run=False, facts=facts)

    def inspect(self, resources=None):
        """Read-only report for ``stack_info`` (see :func:`.report.stack_report`), from the same plan as ``sync``."""
        cs = ChangeSet()
        with self._run(cs):
            desired = self.prepare(resources, cs) if resources is not None else []
            stamp_all(desired, self.stack, self._load_key(desired, create=False))
            facts = gate.facts_of(self.opts, caller=gate.INFO, desired=len(desired) if resources is not None else None)
            plan = self.last_plan = self.plan(desired, cs, pruning=self._gate(facts).prune)
            self.pruning = plan.prune is not None
            report = stack_report(plan.snap, desired, plan.prune, self.opts, self.record, resources is not None)
            report["warnings"] = cs.warnings
            return report

    def delete_all(self):
        """state=absent: delete every object of the stack (reverse order), then its record and key."""
        cs = ChangeSet()
        with self._run(cs):
            facts = gate.facts_of(self.opts, state="absent")
            pruning = self._gate(facts).prune
            self.run.grace = None  # the stack goes on purpose: no grace period
            plan = self.last_plan = self.plan([], cs, pruning)
            self._gate(facts, [], plan)
            if not plan.deletes and self.record.data is None:
                return cs
            if self.opts.check_mode:
                P.report_plan(plan, cs, applying=False)
                self._prune(plan, cs, True, facts)
                return cs
            with self._locked():
                cs = self.run.changeset = self._new_attempt(ChangeSet())
                plan = self.plan([], cs, pruning)
                self._gate(facts, [], plan)
                P.report_plan(plan, cs, applying=False)
                remaining, _pruned = self._prune(plan, cs, False, facts)
                self.ensure_lock()
                if not remaining and not plan.snap.unverified:
                    self.record.delete()
                    self.key_store.delete()
                else:  # what is left is still looked for, but the stack declares nothing any more
                    self.record.save(**record_fields([], (), plan.snap.unverified, remaining, True))
            return cs
