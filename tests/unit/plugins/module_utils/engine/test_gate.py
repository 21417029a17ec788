"""gate.py: the one place that decides whether a run prunes, and why not."""

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.base.identity import ObjectId
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import gate as g
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.options import StackOptions
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.plan import Plan, PrunePlan


def plan(candidates, owned=None, has_facts=True):
    prune = PrunePlan()
    prune.candidates = [(ObjectId("", "ConfigMap", "web", f"c{i}"), None, {}) for i in range(candidates)]
    prune.owned = candidates if owned is None else owned
    out = Plan(None, [], [], [], prune)
    out.has_facts = has_facts
    return out


def decide(**facts):
    return g.decide(g.Facts(stack="apps", record_namespace="kube-system", **facts))


def test_a_plain_run_prunes():
    d = decide(desired=3)
    assert d.prune and d.code == g.PRUNE and not d.refuse and d is g.PRUNING


@pytest.mark.parametrize("facts, code", [
    (dict(prune=False), g.DISABLED),
    (dict(phase="apply"), g.PHASE_APPLY),
    (dict(caller=g.SOURCES, source_failed=True), g.SOURCE_FAILED),
    (dict(caller=g.SOURCES, blocked=("infra",)), g.DEPENDENCY_FAILED),
    (dict(caller=g.SOURCES, unrendered=("tenant-b",)), g.OTHERS_UNRENDERED),
    (dict(apply_errors=2), g.APPLY_FAILED),
    (dict(caller=g.SOURCES, state="absent", others_failed=True), g.OTHERS_FAILED),
    (dict(caller=g.INFO), g.NO_DESIRED_SET),
])
def test_why_not(facts, code):
    d = decide(**facts)
    assert d.code == code and not d.prune and not d.refuse and d.message


def test_the_messages_say_why():
    assert decide(apply_errors=2).message == "nothing was pruned because 2 applies failed"
    assert decide(apply_errors=1, dry_run=True).message == "nothing would be pruned because an apply would fail"
    assert decide(caller=g.SOURCES, blocked=("a", "b")).message == "not applied: it depends on a, b, which failed"


def test_a_source_that_could_not_be_rendered_holds_back_the_other_stacks_prunes():
    d = decide(caller=g.SOURCES, unrendered=("tenant-b", "tenant-c"))
    assert d.code == g.OTHERS_UNRENDERED and not d.refuse
    assert "tenant-b, tenant-c could not be fetched or rendered" in d.message
    # its own failure comes first; a stack being deleted is held back by others_failed as before
    assert decide(caller=g.SOURCES, source_failed=True, unrendered=("b",)).code == g.SOURCE_FAILED
    assert decide(caller=g.SOURCES, state="absent", unrendered=("b",), others_failed=True).code == g.OTHERS_FAILED


def test_what_state_absent_ignores():
    # state absent deletes the stack on purpose: not the prune option, the phase, an empty set or the budget
    assert decide(state="absent", prune=False, phase="apply", desired=0, plan=plan(100, 100)).prune
    # an apply failure still holds it back (no apply in state absent: zero errors)
    assert decide(state="absent", apply_errors=0).prune


def test_an_empty_desired_set_is_refused_unless_allowed():
    d = decide(desired=0)
    assert d.code == g.EMPTY_SET and d.refuse and not d.provisional and not d.blocks_writes
    assert "refusing to prune stack 'apps' to an empty set of resources" in d.message
    assert decide(desired=0, allow_empty=True).prune
    assert decide(desired=0, prune=False).code == g.DISABLED  # nothing pruned: nothing to refuse
    assert decide(desired=0, phase="apply").code == g.PHASE_APPLY
    assert decide(caller=g.INFO, desired=0).prune  # stack_info reports the plan


def test_the_prune_budget():
    assert decide(desired=20, plan=plan(10, 20).prune, has_facts=True).prune  # default: half, at least 10
    d = decide(desired=20, plan=plan(11, 20).prune, has_facts=True)
    assert d.code == g.OVER_BUDGET and d.refuse and not d.provisional
    assert d.message.startswith("stack 'apps': refusing to prune 11 of the stack's 20 objects")
    # a plan without its facts: provisional (facts can only take deletions away)
    assert decide(desired=20, plan=plan(11, 20).prune, has_facts=False).provisional
    assert decide(desired=20, max_prune="100%", plan=plan(20, 20).prune).prune
    assert decide(desired=0, allow_empty=True, plan=plan(20, 20).prune).prune  # the whole stack, on purpose
    assert decide(caller=g.INFO, desired=1, plan=plan(20, 20).prune).prune


def test_decide_on_plan_reads_the_facts_before_refusing():
    read = []

    def with_facts():
        read.append(True)
        return plan(5, 20)  # the facts took six candidates away

    facts = g.Facts(stack="apps", desired=20)
    assert g.decide_on_plan(facts, plan(11, 20, has_facts=False), None, with_facts).prune and read
    read.clear()
    d = g.decide_on_plan(facts, plan(11, 20, has_facts=True), None, with_facts)
    assert d.code == g.OVER_BUDGET and not read  # already with its facts: nothing more to read
    assert g.decide_on_plan(facts, plan(3, 20, has_facts=False), None, with_facts).prune and not read


def test_a_stack_of_another_source_is_refused_writes_included():
    facts = g.Facts(stack="apps", record_namespace="kube-system", source="git.example.com-b", desired=3)
    for prune in (True, False):  # refused whether it would prune or not: writing it would overwrite the other's
        d = g.decide_on_plan(facts.but(prune=prune), plan(0), {"source": "git.example.com-a"}, None)
        assert d.code == g.OTHER_SOURCE and d.refuse and d.blocks_writes
    msg = d.message
    assert "stack 'apps' belongs to source 'git.example.com-a'" in msg and "from source 'git.example.com-b'" in msg
    assert "ConfigMap kube-system/stacksync-apps" in msg and "/data/source" in msg and "own stack name" in msg
    # the same source, no recorded source (adopted), or a run without a source: not refused
    assert g.decide_on_plan(facts, plan(0), {"source": "git.example.com-b"}, None).prune
    assert g.decide_on_plan(facts, plan(0), {}, None).prune
    assert g.decide_on_plan(facts, plan(0), None, None).prune
    assert g.decide_on_plan(facts.but(source=None), plan(0), {"source": "git.example.com-a"}, None).prune
    assert g.decide_on_plan(facts.but(state="absent"), plan(0), {"source": "x"}, None).code == g.OTHER_SOURCE


def test_facts_default_to_absent_and_are_checked():
    f = g.Facts()
    assert (f.approved, f.grace, f.budget_override, f.plan, f.apply_errors) == (None,) * 5
    with pytest.raises(TypeError, match="unknown fact"):
        g.Facts(colour="blue")
    assert f.but(prune=False).prune is False and f.prune is True


def test_facts_of_a_run_come_from_its_options():
    opts = StackOptions("apps", prune=False, phase="prune", allow_empty=True, max_prune="5", source="s",
                        record_namespace="rec", check_mode=True)
    f = g.facts_of(opts, desired=4)
    assert (f.stack, f.prune, f.phase, f.allow_empty, f.max_prune, f.source, f.record_namespace, f.dry_run,
            f.desired) == ("apps", False, "prune", True, "5", "s", "rec", True, 4)


def test_every_rule_answers_only_from_its_own_facts():
    # with every fact absent, no rule answers: one more rule (and fact) never changes the others' answers
    for rule in g.RULES:
        assert rule(g.Facts()) is None, rule.__name__


# -- issue 29: an approved plan, the prune grace period --------------------------------------------------------

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def snapped(candidates, owned=None, has_facts=True):
    """A plan of ``candidates`` ConfigMaps (live objects with uids), on a snapshot."""
    from ansible_collections.stacksync.k8s.plugins.module_utils.engine.observe import Snapshot

    out = plan(0, owned if owned is not None else candidates, has_facts)
    out.snap = Snapshot()
    for i in range(candidates):
        oid = ObjectId("", "ConfigMap", "web", f"c{i}")
        obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": oid.name, "namespace": "web", "uid": f"u{i}"}}
        out.prune.candidates.append((oid, None, obj))
        out.snap.ours[oid] = (None, obj)
    return out


def approval_of(made, approved=None, source=None, commit=COMMIT):
    from ansible_collections.stacksync.k8s.plugins.module_utils.engine import approval as A
    from ansible_collections.stacksync.k8s.plugins.module_utils.engine import plan_file as pf

    doc = pf.document({"apps": pf.stack_entry(made, source, commit)}, "h")
    if approved is not None:
        doc["approved"] = approved
    return A.for_stack(A.parse(doc, "h"), "apps")


def test_a_stale_approved_plan_refuses_the_run_writes_included():
    approved = approval_of(snapped(2))
    facts = g.Facts(stack="apps", desired=3, approved=approved, commit=COMMIT, budget_override=True)
    assert g.decide_on_plan(facts, snapped(2), None, None).prune  # what the plan says: it prunes
    # another commit: refused at once, before anything is planned
    d = decide(desired=3, approved=approved, commit="f" * 40)
    assert d.code == g.PLAN_STALE and d.refuse and d.blocks_writes and not d.provisional
    assert "the plan's commit is {}, this run syncs {}".format(COMMIT, "f" * 40) in d.message
    # a third deletion the plan does not list: refused on the plan, before any write
    d = g.decide_on_plan(facts, snapped(3), None, None)
    assert d.code == g.PLAN_STALE and d.blocks_writes
    assert "ConfigMap web/c2 would be deleted, and the plan does not list its deletion" in d.message


def test_a_stale_plan_made_without_the_prune_facts_is_decided_again_with_them():
    facts = g.Facts(stack="apps", desired=3, approved=approval_of(snapped(2)), commit=COMMIT, budget_override=True)
    read = []

    def with_facts():
        read.append(True)
        return snapped(2)  # the facts take the third candidate away (another stack declares it)

    assert g.decide_on_plan(facts, snapped(3, has_facts=False), None, with_facts).prune and read


def test_a_stack_whose_deletions_are_not_approved_prunes_nothing_and_the_plan_lifts_the_budget():
    made = snapped(12, owned=12)  # 12 of 12: over the default budget
    facts = g.Facts(stack="apps", desired=0, allow_empty=False, commit=COMMIT)
    refused = approval_of(made, approved=[])
    d = g.decide(facts.but(approved=refused, plan=made.prune, has_facts=True))
    assert d.code == g.NOT_APPROVED and not d.refuse and not d.prune
    approved = approval_of(made)
    ok = facts.but(desired=1, approved=approved, budget_override=True)
    assert g.decide(ok.but(plan=made.prune, has_facts=True)).prune  # approved: the budget does not refuse it
    assert g.decide(ok.but(budget_override=None, plan=made.prune, has_facts=True)).code == g.OVER_BUDGET
    # a check that emits a plan lists what is over the budget instead of refusing it (a run needs the plan approved)
    assert g.decide(g.Facts(stack="apps", desired=1, plan=made.prune, has_facts=True, dry_run=True, emit_plan=True)).prune
    assert g.decide(g.Facts(stack="apps", desired=1, plan=made.prune, has_facts=True, dry_run=True)).code == g.OVER_BUDGET


def test_phase_apply_plans_the_prune_only_to_check_an_approved_plan():
    f = g.Facts(stack="apps", phase="apply", approved=approval_of(snapped(1)), commit=COMMIT)
    d = g.decide(f)
    assert d.code == g.PHASE_APPLY and g.plans_prune(f, d)
    assert not g.plans_prune(f.but(approved=None), d) and not g.plans_prune(f.but(prune=False), g.decide(f.but(prune=False)))
    assert not g.plans_prune(f.but(approved=approval_of(snapped(1), approved=[])), d)


def test_without_the_servers_time_a_grace_period_deletes_and_marks_nothing():
    made = snapped(0)
    made.prune.waiting.append((ObjectId("", "ConfigMap", "web", "w"), None, {}, None))
    d = decide(desired=1, grace=30, plan=made.prune, has_facts=True)
    assert d.code == g.NO_SERVER_TIME and not d.prune and not d.refuse and "Date header" in d.message
    made.prune.now = 1.0
    assert decide(desired=1, grace=30, plan=made.prune, has_facts=True).prune
