# -*- coding: utf-8 -*-
# Copyright: (c) 2026, stacksync.k8s contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The prune gate: whether a run of a stack prunes and, if not, why -- decided here and nowhere else. Pure.

Every caller asks :func:`decide` with what it knows of the run (:class:`Facts`): the ``sources`` action before it
schedules a stack's prune run (``plugin_utils/sources.next_step``), and the engine (:class:`.manager.StackManager`:
``sync``, check mode, ``stack_info``, ``state: absent``) before it plans a prune, once the plan is made (before any
write) and once the applies are done. A fact not known yet is ``None`` (or its default) and the rules that need it
say nothing; the answer is a :class:`Decision`: ``prune``, or a reason code with a message, and whether the run
fails before any write. What is deleted, object by object, is :func:`.plan.prune_plan`'s, behind this gate.

A new rule is one more fact (a :class:`Facts` field whose default means "absent") and one more function in
:data:`RULES`, at the place of its precedence -- never another site. The approved plan (:mod:`.approval`):
``approved`` (the stack's part of it), ``commit`` and ``applies`` (what the run syncs and would apply) decide
whether the run may go on (``plan-stale``: refused before any write) and whether it prunes (``not-approved``);
``budget_override`` (its deletions are approved) lifts the prune budget, and ``emit_plan`` (check mode making a plan)
lists what is over it instead of refusing. ``grace`` (the prune grace period, :mod:`.grace`): a run that cannot
read the server's time deletes nothing marked. Fencing (:mod:`.prune`'s ``_fence``: the Lease proven held by a write
the server accepts before each delete, and uid + resourceVersion preconditions) is not a decision but a
precondition of every DELETE the gate allowed: a run that lost its lock stops there, whatever the gate said.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import namedtuple

from ansible_collections.stacksync.k8s.plugins.module_utils.base.vocabulary import option
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import approval as A
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.plan import prune_budget_problem
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.plan_file import applies_of
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.record import object_name

# who asks
STACK = "stack"  # the engine's sync, check mode and state absent (module stacksync.k8s.stack)
INFO = "info"  # stack_info: reports the plan a sync would execute
SOURCES = "sources"  # the sources action, scheduling a stack's prune run

PRUNE = "prune"
# why not (typed: the callers and tests read these, never the message)
OTHER_SOURCE = "other-source"  # refused: the stack's record names another owning source
PLAN_STALE = "plan-stale"  # refused: the approved plan does not match what the run would do (writes too)
DISABLED = "disabled"  # prune: false
PHASE_APPLY = "phase-apply"  # phase apply: the prune is another run's (the sources action's prune phase)
NOT_APPROVED = "not-approved"  # the approved plan does not approve this stack's deletions
SOURCE_FAILED = "source-failed"  # the stack's source could not be fetched or rendered
DEPENDENCY_FAILED = "dependency-failed"  # not applied: a stack it depends on failed
OTHERS_UNRENDERED = "others-unrendered"  # another source of the run could not be fetched or rendered
APPLY_FAILED = "apply-failed"  # one of the stack's own applies failed (or, in check mode, would fail)
OTHERS_FAILED = "others-failed"  # state absent in a sources run in which another stack was not applied
NO_DESIRED_SET = "no-desired-set"  # stack_info without a desired set: nothing is compared, nothing would go
EMPTY_SET = "empty-set"  # refused: an empty desired set without allow_empty
OVER_BUDGET = "over-budget"  # refused: more deletions than max_prune allows
NO_SERVER_TIME = "no-server-time"  # prune_grace: the server's answers carry no time, so no grace can be measured

#: refusals that stop the whole run (writes too), not only its prune
WRITE_REFUSALS = (OTHER_SOURCE, PLAN_STALE)


class Decision(namedtuple("Decision", ["code", "message", "refuse", "provisional"])):
    """The gate's answer: :attr:`code` (:data:`PRUNE` or why not), a message, ``refuse`` (the run fails before any
    write) and ``provisional`` (made on a prune plan without its facts: they can only take deletions away, so the
    caller reads them and asks again before acting on a refusal)."""

    __slots__ = ()

    @property
    def prune(self):
        return self.code == PRUNE

    @property
    def blocks_writes(self):
        return self.code in WRITE_REFUSALS


PRUNING = Decision(PRUNE, "", False, False)


def _no(code, message, refuse=False, provisional=False):
    return Decision(code, message, refuse, provisional)


class Facts:
    """What a caller knows of a run; every field defaults to "not known" / "absent" (see :data:`FIELDS`)."""

    #: field -> default. ``desired``: the number of desired objects; ``plan``: the :class:`.plan.PrunePlan`
    #: (``has_facts``: with its facts); ``apply_errors``: failed applies once the applies are done; ``source`` /
    #: ``recorded_source``: the run's and the record's owning source; ``source_failed``, ``blocked`` (the failed
    #: stacks it depends on), ``others_failed`` and ``unrendered`` (the run's other stacks whose source could not
    #: be fetched or rendered): a sources run's outcomes. ``approved``: the stack's :class:`.approval.Approval` (None:
    #: no approved plan), ``commit`` the commit the run syncs, ``applies`` what it would apply
    #: (:func:`.plan_file.applies_of`, once planned); ``grace``: ``prune_grace`` in seconds (None: none).
    FIELDS = dict(
        caller=STACK, stack="", state="present", prune=True, phase="all", allow_empty=False, max_prune=None,
        record_namespace="", dry_run=False, desired=None, source=None, recorded_source=None, source_failed=False,
        blocked=(), others_failed=False, unrendered=(), plan=None, has_facts=False, apply_errors=None,
        approved=None, commit=None, applies=None, emit_plan=False, grace=None, budget_override=None,
    )
    __slots__ = tuple(FIELDS)

    def __init__(self, **facts):
        unknown = sorted(set(facts) - set(self.FIELDS))
        if unknown:
            raise TypeError("unknown fact(s): %s" % ", ".join(unknown))
        for name, default in self.FIELDS.items():
            setattr(self, name, facts.get(name, default))

    def but(self, **changes):
        """These facts with ``changes``."""
        facts = dict((name, getattr(self, name)) for name in self.FIELDS)
        facts.update(changes)
        return Facts(**facts)

    @property
    def present(self):
        return self.state == "present"


def facts_of(opts, **known):
    """The :class:`Facts` of a run of the engine with options ``opts`` (:class:`.options.StackOptions`), and what
    is ``known`` so far."""
    approved = opts.approval
    return Facts(stack=opts.stack, prune=opts.prune, phase=opts.phase, allow_empty=opts.allow_empty,
                 max_prune=opts.max_prune, source=opts.source, record_namespace=opts.record_namespace,
                 dry_run=opts.check_mode, approved=approved, commit=opts.commit, emit_plan=opts.emit_plan,
                 grace=opts.grace, budget_override=True if approved is not None and approved.approved else None, **known)


def foreign_source_message(f):
    record = "ConfigMap %s/%s" % (f.record_namespace, object_name(f.stack))
    return ("stack %r belongs to source %r (its record, %s, says so); this run is from source %r: refusing to write "
            "or prune it, nothing was changed. Two sources syncing one stack would overwrite and prune each other's "
            "objects: give this source its own stack name. If the stack moves to this source on purpose, remove the "
            "record's source (kubectl -n %s patch configmap %s --type=json -p "
            "'[{\"op\": \"remove\", \"path\": \"/data/source\"}]'); the next run from this source adopts it"
            % (f.stack, f.recorded_source, record, f.source, f.record_namespace, object_name(f.stack)))


def _other_source(f):
    if f.source and f.recorded_source and f.source != f.recorded_source:
        return _no(OTHER_SOURCE, foreign_source_message(f), refuse=True)
    return None


def _plan_stale(f):
    """An approved plan (``approved``) that does not match what the run would do refuses it before any write: what
    it syncs (at once), what it would apply (on the plan) and delete (on the prune plan; without its facts the
    refusal is provisional: they can only take deletions away)."""
    if f.approved is None:
        return None
    found = A.problems(f.approved, f.source, f.commit, f.phase, f.applies, f.plan)
    if not found:
        return None
    provisional = not f.has_facts and not A.problems(f.approved, f.source, f.commit, f.phase, f.applies, None)
    return _no(PLAN_STALE, A.refusal(f.approved, found), refuse=True, provisional=provisional)


def _disabled(f):
    return _no(DISABLED, "prune is false") if f.present and not f.prune else None


def _phase_apply(f):
    if f.present and f.phase == "apply":
        return _no(PHASE_APPLY, "phase apply: only applied, the prune is a later run's (phase prune)")
    return None


def _not_approved(f):
    if f.approved is not None and not f.approved.approved:
        return _no(NOT_APPROVED, "the approved plan does not approve this stack's deletions: nothing is pruned")
    return None


def _source_failed(f):
    return _no(SOURCE_FAILED, "its source could not be fetched or rendered") if f.source_failed else None


def _blocked(f):
    if f.blocked:
        return _no(DEPENDENCY_FAILED, "not applied: it depends on %s, which failed" % ", ".join(f.blocked))
    return None


def _others_unrendered(f):
    """What a source that could not be rendered declares now is unknown: an object that moved to it in this commit
    would be deleted by the stack it left. Every stack of the run keeps its objects until that source renders."""
    if f.present and f.unrendered:
        return _no(OTHERS_UNRENDERED, "nothing was pruned: the source of %s could not be fetched or rendered, so what "
                                      "it declares now is unknown (an object moving to it must not be deleted); the "
                                      "next run after it is fixed prunes" % ", ".join(f.unrendered))
    return None


def _apply_failed(f):
    if not f.apply_errors:
        return None
    failing = "an apply" if f.apply_errors == 1 else "%d applies" % f.apply_errors
    return _no(APPLY_FAILED, "nothing %s pruned because %s %s" % (
        "would be" if f.dry_run else "was", failing, "would fail" if f.dry_run else "failed"))


def _others_failed(f):
    if f.state == "absent" and f.others_failed:
        return _no(OTHERS_FAILED, "not deleted: another stack of this run was not applied, and a stack being "
                                  "deleted may be handing its objects to it")
    return None


def _no_desired_set(f):
    if f.caller == INFO and f.desired is None:
        return _no(NO_DESIRED_SET, "no desired set given: the stack's objects are reported as they are")
    return None


def _empty_set(f):
    if f.caller == STACK and f.present and f.desired == 0 and not f.allow_empty:
        return _no(EMPTY_SET, "refusing to prune stack %r to an empty set of resources (set %s: true if this is "
                              "intended)" % (f.stack, option("allow_empty")), refuse=True)
    return None


def _over_budget(f):
    """The prune budget (``max_prune``): not for state absent, nor an empty set with allow_empty, which delete
    the stack on purpose; stack_info reports the plan (a sync's own budget is the sync's)."""
    if f.caller != STACK or not f.present or f.plan is None or not f.plan.candidates or f.budget_override:
        return None  # an approved plan's deletions are over the budget on purpose
    if f.desired == 0 and f.allow_empty:
        return None
    problem = prune_budget_problem([c[0] for c in f.plan.candidates], f.plan.owned, f.max_prune)
    if problem and not (f.dry_run and f.emit_plan):  # a plan lists them: a run deletes them once it is approved
        return _no(OVER_BUDGET, "stack %r: %s" % (f.stack, problem), refuse=True, provisional=not f.has_facts)
    return None


def _no_server_time(f):
    """With a grace period, a run whose server answered without a time (no ``Date`` header) cannot tell whether any
    grace has passed: it marks nothing and deletes nothing marked (the controller's clock is never read)."""
    if f.grace and f.present and f.plan is not None and f.plan.now is None and (f.plan.marks or f.plan.waiting):
        return _no(NO_SERVER_TIME, "nothing was pruned: the API server's answers carry no time (Date header), so the "
                                   "prune grace period cannot be measured")
    return None


#: the rules, in precedence order: the first that answers decides
RULES = (_other_source, _plan_stale, _disabled, _phase_apply, _not_approved, _source_failed, _blocked,
         _others_unrendered, _apply_failed, _others_failed, _no_desired_set, _empty_set, _over_budget, _no_server_time)


def decide_on_plan(facts, plan, record, with_facts):
    """:func:`decide` once ``plan`` (a :class:`.plan.Plan`) is made, with the ``record`` it was observed with (its
    data, None: no record). A provisional refusal is asked again on the plan with its facts (``with_facts()``)."""
    facts = facts.but(plan=plan.prune, has_facts=plan.has_facts, recorded_source=(record or {}).get("source"),
                      applies=applies_of(plan) if facts.approved is not None else None)
    decision = decide(facts)
    if decision.refuse and decision.provisional:
        decision = decide(facts.but(plan=with_facts().prune, has_facts=True))
    return decision


def plans_prune(facts, decision):
    """Whether a run plans a prune: when the gate lets it prune, and in phase apply with an approved plan (its
    deletions are checked before the applies, the prune is the prune phase's)."""
    return decision.prune or (decision.code == PHASE_APPLY and facts.approved is not None and facts.approved.approved
                              and facts.prune)


def decide(facts):
    """The :class:`Decision` for ``facts``: the first rule of :data:`RULES` that answers, else :data:`PRUNING`."""
    for rule in RULES:
        decision = rule(facts)
        if decision is not None:
            return decision
    return PRUNING
