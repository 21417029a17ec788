# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The engine's prune steps, mixed into :class:`.manager.StackManager`: the one helper that asks for the prune plan
(:func:`.plan.prune_plan`, then the stack's confinement, the prune grace period of :mod:`.grace` and an approved
plan's narrowing, :func:`.approval.narrow`), the prune gate's questions (:mod:`.gate`), and the prune once the
applies are done (deletions, releases and prune marks).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.stacksync.k8s.plugins.module_utils.engine import approval as A
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import changeset as C
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import gate
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import grace as G
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import plan as P
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.confinement import confine_prune
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.objects import live_api_version, owned_by

PLAN_SKIPPED = "plan-skipped"  # reason code: a deletion of the approved plan that no longer applies


class StackError(Exception):
    """The run failed; ``changeset`` holds what was done before the failure (may be None); ``phase`` is ``prune``
    when the prune gate refused the prune (an empty set, the prune budget) before anything was written."""

    def __init__(self, message, changeset=None, phase=None):
        super(StackError, self).__init__(message)
        self.changeset = changeset
        self.phase = phase


def needs_facts(plan):
    """The plan deletes, releases or marks something, or has marked objects waiting (which may be released)."""
    prune = plan.prune
    return prune is not None and bool(prune.candidates or prune.releases or prune.marks or prune.waiting)


class PruneSteps:
    """The prune steps of a :class:`.manager.StackManager` (its ``opts``, ``client``, ``pruner``, ``marker``,
    ``record``, ``discovery``, ``grace`` and ``with_facts``)."""

    def _prune_plan(self, snap, desired, declared=None, contents=None, kept=None, with_facts=False):
        """The prune plan (:func:`.plan.prune_plan`, asked here only): what the run's other sources declare, and
        the other stacks' records (``declared``, once read), is released or kept, never deleted; with its facts
        (``with_facts``) confined to the stack's confinement; split by the grace period; narrowed to an approved plan."""
        ids = set(d.oid for d in desired)
        prune = P.prune_plan(snap.ours, self.stack, ids, set(d.checksum for d in desired),
                             self.opts.run_sources.declared(declared), contents, kept)
        if with_facts:
            confine_prune(prune, self.opts.policy)
        prune.now = getattr(self.client, "server_time", None)
        G.split(prune, self.grace, prune.now)
        return A.narrow(self.opts.approval, prune, snap.ours, ids, lambda message: P.Reason(A.NOT_APPROVED, message))

    def _gate(self, facts, desired=(), plan=None):
        """The gate's decision (:func:`.gate.decide`), its refusal raised (before any write); with a ``plan``, on it
        and the record it was made on (:func:`.gate.decide_on_plan`)."""
        decision = gate.decide(facts) if plan is None else gate.decide_on_plan(
            facts, plan, self.record.data, lambda: self.with_facts(desired, plan))
        if decision.refuse:
            raise StackError(decision.message, phase=None if decision.blocks_writes else "prune")
        return decision

    @staticmethod
    def _report_later(prune, changeset):
        """Entries for what waits for its prune grace, and for the approved deletions that no longer apply."""
        for oid, info, obj, after in prune.waiting:
            changeset.add(oid, live_api_version(obj, info), C.SKIPPED, C.PHASE_PRUNE, G.GRACE, G.waiting_reason(after),
                          prune_after=None if after is None else G.format_time(after))
        for oid, api_version, message in prune.notes:
            changeset.add(oid, api_version, C.SKIPPED, C.PHASE_PRUNE, PLAN_SKIPPED, message)
            changeset.warn("%s: %s" % (oid, message))

    def _prune(self, plan, changeset, dry_run, facts):
        """``(group/kinds left behind, whether the prune ran)``: as the gate says once the applies are done."""
        self.pruning = False
        if plan.prune is None:  # the gate said no before planning
            return set(), False
        decision = gate.decide(facts.but(plan=plan.prune, has_facts=plan.has_facts, apply_errors=len(changeset.errors)))
        if not decision.prune:
            changeset.warn(decision.message)
            return set(), False
        self.pruning = True
        early = G.marked_without_grace(plan.prune, self.grace)
        if early:
            changeset.warn(early)
        self._report_later(plan.prune, changeset)
        remaining, pruned = self.pruner.execute(plan.prune, changeset, dry_run)
        self.marker.mark(plan.prune.marks, self.grace, changeset, dry_run)
        if not dry_run and any(oid.group_kind in P.KIND_SERVING for oid in pruned):
            self.discovery.kinds_changed()
        if self.opts.wait and pruned and not dry_run:
            self.pruner.wait_gone(plan.prune, pruned, changeset)
        # what was released is another stack's now: it does not keep this stack's record (state=absent) alive
        released = set(e.oid for e in changeset.entries if e.action == C.RELEASED)
        remaining |= set(oid.group_kind for oid, (_i, obj) in plan.snap.ours.items()
                         if oid not in pruned and oid not in released and owned_by(obj, self.stack, oid))
        return remaining, True
