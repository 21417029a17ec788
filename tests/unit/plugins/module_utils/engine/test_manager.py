"""manager.py: the sequencer (sync, check mode, inspect, state absent) on the Kubernetes API simulator.

What is checked is what the manager itself decides: which paths a run takes (nothing to write: no Lease and no
write; only the record; the whole run under the Lease), what the gate's refusals stop, what a failure carries
(the run's changeset), and what each entry point leaves in the cluster.
"""

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.base.constants import STACK_LABEL
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import gate
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.changeset import CREATED, PRUNED, UNCHANGED
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.lock import LeaseLock
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.manager import StackError, StackManager
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.record import SECRET_BASE, object_name

from ..simengine import (
    client_of,
    cm_path,
    configmap,
    gone,
    live,
    manager,
    namespace,
    record_path,
    requests_since,
    secret,
    sync,
    unique,
    writes,
)

LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"


@pytest.fixture(scope="module")
def client(kubesim):
    c = client_of(kubesim)
    yield c
    c.close()


def stack_objects(ns, count=3):
    return [namespace(ns)] + [configmap(f"c{i}", ns) for i in range(count)]


def actions(changeset):
    return sorted((e.action, e.oid.kind, e.oid.name) for e in changeset.entries)


def test_a_first_sync_creates_everything_under_the_lease_and_records_the_stack(kubesim, client):
    ns, stack = unique("m-first"), unique("s")
    start = len(kubesim.requests)
    cs = sync(client, stack, stack_objects(ns), commit="abc")
    assert actions(cs) == [(CREATED, "ConfigMap", "c0"), (CREATED, "ConfigMap", "c1"), (CREATED, "ConfigMap", "c2"),
                           (CREATED, "Namespace", ns)]
    assert cs.changed and cs.checksum and cs.warnings == []
    assert live(client, cm_path(ns, "c1"))["metadata"]["labels"][STACK_LABEL] == stack
    record = live(client, record_path(stack))["data"]
    assert record["commit"] == "abc" and record["objectCount"] == "4" and record["checksum"] == cs.checksum
    assert record["groupKinds"] == "ConfigMap,Namespace"
    sent = writes(kubesim, start)
    # the Lease is taken before the first write and given back after the last one
    assert sent[0] == ("POST", LEASES) and sent[-1] == ("DELETE", LEASES + "/" + object_name(stack))
    assert gone(client, LEASES + "/" + object_name(stack))


def test_a_sync_with_nothing_to_write_takes_no_lease_and_writes_nothing(kubesim, client):
    ns, stack = unique("m-noop"), unique("s")
    first = sync(client, stack, stack_objects(ns))
    start = len(kubesim.requests)
    cs = sync(client, stack, stack_objects(ns))
    assert writes(kubesim, start) == []
    assert [e.action for e in cs.entries] == [UNCHANGED] * 4 and not cs.changed
    assert cs.checksum == first.checksum


def test_a_new_commit_of_the_same_manifests_writes_only_the_record(kubesim, client):
    ns, stack = unique("m-commit"), unique("s")
    sync(client, stack, stack_objects(ns), commit="one")
    start = len(kubesim.requests)
    cs = sync(client, stack, stack_objects(ns), commit="two")
    assert not cs.changed
    sent = [w for w in writes(kubesim, start) if "/leases" not in w[1]]
    assert sent == [("PATCH", record_path(stack))]
    assert live(client, record_path(stack))["data"]["commit"] == "two"


def test_what_left_the_desired_set_is_pruned_and_the_record_narrowed(kubesim, client):
    ns, stack = unique("m-prune"), unique("s")
    sync(client, stack, [*stack_objects(ns), secret("pw", ns)])
    cs = sync(client, stack, stack_objects(ns, count=1))
    assert sorted((e.oid.kind, e.oid.name) for e in cs.entries if e.action == PRUNED) == [
        ("ConfigMap", "c1"), ("ConfigMap", "c2"), ("Secret", "pw")]
    assert gone(client, cm_path(ns, "c2")) and live(client, cm_path(ns, "c0")) is not None
    assert live(client, record_path(stack))["data"]["groupKinds"] == "ConfigMap,Namespace"


def test_an_empty_desired_set_is_refused_before_any_request_unless_allowed(kubesim, client):
    ns, stack = unique("m-empty"), unique("s")
    sync(client, stack, stack_objects(ns, count=1))
    start = len(kubesim.requests)
    with pytest.raises(StackError, match=r"refusing to prune stack .* to an empty set") as e:
        sync(client, stack, [])
    assert e.value.phase == "prune" and len(kubesim.requests) == start
    cs = sync(client, stack, [], allow_empty=True)
    assert sorted(e.oid.kind for e in cs.entries if e.action == PRUNED) == ["ConfigMap", "Namespace"]


def test_a_prune_over_the_budget_is_refused_before_any_write(kubesim, client):
    ns, stack = unique("m-budget"), unique("s")
    sync(client, stack, stack_objects(ns, count=4))
    start = len(kubesim.requests)
    with pytest.raises(StackError, match="max_prune") as e:
        sync(client, stack, [*stack_objects(ns, count=1), configmap("new", ns)], max_prune="1")
    assert e.value.phase == "prune"
    assert [w for w in writes(kubesim, start) if "/leases" not in w[1]] == []  # not even the new ConfigMap
    assert live(client, cm_path(ns, "new")) is None and live(client, cm_path(ns, "c3")) is not None


@pytest.mark.parametrize("options, message", [
    (dict(prune=False), "prune is false"),
    (dict(phase="apply"), "phase apply"),
])
def test_a_run_the_gate_keeps_from_pruning_applies_and_deletes_nothing(client, options, message):
    ns, stack = unique("m-noprune"), unique("s")
    sync(client, stack, stack_objects(ns))
    cs = sync(client, stack, [*stack_objects(ns, count=1), configmap("new", ns)], **options)
    assert [e.oid.name for e in cs.entries if e.action == CREATED] == ["new"]
    assert not [e for e in cs.entries if e.action == PRUNED]
    assert live(client, cm_path(ns, "c2")) is not None


def test_phase_prune_deletes_without_applying(client):
    ns, stack = unique("m-phase"), unique("s")
    sync(client, stack, stack_objects(ns))
    cs = sync(client, stack, [*stack_objects(ns, count=1), configmap("new", ns)], phase="prune")
    assert live(client, cm_path(ns, "new")) is None  # reported, not written
    skipped = [e for e in cs.entries if e.oid.name == "new"]
    assert [(e.action, e.code) for e in skipped] == [("skipped", "not-applied")]
    assert gone(client, cm_path(ns, "c2"))


def test_check_mode_writes_nothing_and_reports_what_a_sync_would_do(kubesim, client):
    ns, stack = unique("m-check"), unique("s")
    sync(client, stack, stack_objects(ns))
    start = len(kubesim.requests)
    cs = sync(client, stack, [*stack_objects(ns, count=1), configmap("new", ns)], check_mode=True)
    assert [r for r in list(kubesim.requests)[start:] if r["method"] != "GET" and "dryRun" not in r["query"]] == []
    assert ("created", "new") in [(e.action, e.oid.name) for e in cs.entries]
    assert sorted(e.oid.name for e in cs.entries if e.action == PRUNED) == ["c1", "c2"]
    assert live(client, cm_path(ns, "c2")) is not None and live(client, cm_path(ns, "new")) is None


def test_a_failed_apply_fails_the_run_with_its_changeset_and_holds_back_the_prune(client):
    ns, stack = unique("m-fail"), unique("s")
    immutable = dict(configmap("frozen", ns), immutable=True)
    sync(client, stack, [*stack_objects(ns), immutable])
    changed = dict(immutable, data={"k": "other"})
    with pytest.raises(StackError, match="cannot change immutable field") as e:
        sync(client, stack, [namespace(ns), configmap("c0", ns), changed])
    cs = e.value.changeset
    assert [(x.action, x.oid.name) for x in cs.entries if x.action == "failed"] == [("failed", "frozen")]
    assert any("nothing was pruned because an apply failed" in w for w in cs.warnings)
    assert live(client, cm_path(ns, "c2")) is not None  # not pruned
    # the record keeps every kind and the old checksum: the next run tries again
    assert live(client, record_path(stack))["data"]["objectCount"] == "5"


def test_secrets_get_a_stack_key_and_state_absent_deletes_objects_record_and_key(client):
    ns, stack = unique("m-absent"), unique("s")
    sync(client, stack, [*stack_objects(ns, count=1), secret("pw", ns)])
    key = SECRET_BASE % "kube-system" + "/" + object_name(stack, "-key")
    assert live(client, key) is not None
    check = manager(client, stack, check_mode=True).delete_all()
    assert sorted(e.oid.kind for e in check.entries if e.action == PRUNED) == ["ConfigMap", "Namespace", "Secret"]
    assert live(client, cm_path(ns, "c0")) is not None  # check mode deleted nothing
    cs = manager(client, stack).delete_all()
    assert sorted(e.oid.kind for e in cs.entries if e.action == PRUNED) == ["ConfigMap", "Namespace", "Secret"]
    assert gone(client, record_path(stack)) and gone(client, key) and gone(client, cm_path(ns, "c0"))
    assert manager(client, stack).delete_all().entries == []  # nothing left: nothing to do


def test_inspect_reports_the_plan_a_sync_would_execute(client):
    ns, stack = unique("m-info"), unique("s")
    sync(client, stack, stack_objects(ns), commit="c1")
    report = manager(client, stack).inspect([*stack_objects(ns, count=1), configmap("new", ns)])
    status = dict((o["name"], o["status"]) for o in report["objects"])
    assert status == {ns: "in_sync", "c0": "in_sync", "c1": "would_prune", "c2": "would_prune", "new": "missing"}
    assert report["commit"] == "c1" and report["group_kinds"] == ["ConfigMap", "Namespace"]
    assert report["counts"]["sync"] == {"Synced": 2, "Extraneous": 2, "Missing": 1}
    # without a desired set: what is there, as it is
    bare = manager(client, stack).inspect()
    assert set(o["status"] for o in bare["objects"]) == {"present"} and bare["checksum"] is None


def test_a_stack_locked_by_another_run_fails_without_writing_an_object(client):
    ns, stack = unique("m-locked"), unique("s")
    other = LeaseLock(client, "kube-system", stack, duration=60, timeout=1).acquire()
    try:
        with pytest.raises(StackError, match="locked by another run") as e:
            sync(client, stack, stack_objects(ns), lock_timeout=0.3)
        assert e.value.changeset is not None
        assert live(client, cm_path(ns, "c0")) is None
    finally:
        other.release()


def test_a_run_waiting_for_another_runs_lock_says_so_at_once_and_counts_the_wait_apart(client):
    ns, stack = unique("m-wait"), unique("s")
    other = LeaseLock(client, "kube-system", stack, duration=1, timeout=1).acquire()
    other._stop.set()  # an interrupted run: it no longer renews its Lease (1 s)
    other._thread.join()
    lines, calls = [], []

    class Told:
        def __call__(self, verb, done, total):
            calls.append((verb, done, total))

        def note(self, text):
            lines.append(text)

        def paused(self, seconds):
            calls.append(("paused", seconds))

    cs = sync(client, stack, stack_objects(ns), progress=Told())
    assert len(lines) == 1 and lines[0].startswith(f"stack {stack!r} is locked by another run (Lease kube-system/stacksync-{stack} "
                                                   f"held by {other.identity}; it expires in ")
    assert lines[0].endswith("waiting up to 5 s for it")
    assert calls[0][0] == "paused" and 0 < calls[0][1] < 3 and cs.lock_wait == round(calls[0][1], 2)
    assert cs.result()["lock_wait"] == cs.lock_wait
    assert next(w for w in cs.warnings if "locked by another run" in w).endswith("s for it")
    assert cs.count("created") > 0
    # no wait: none said
    cs = sync(client, stack, stack_objects(ns, count=4), progress=Told())
    assert cs.lock_wait == 0.0 and len(lines) == 1


def test_a_record_naming_another_source_refuses_the_run_before_any_write(kubesim, client):
    ns, stack = unique("m-source"), unique("s")
    sync(client, stack, stack_objects(ns, count=1), source="repo-a")
    start = len(kubesim.requests)
    with pytest.raises(StackError, match="belongs to source 'repo-a'") as e:
        sync(client, stack, stack_objects(ns, count=2), source="repo-b")
    assert e.value.phase is None  # writes are refused too, not only the prune
    assert writes(kubesim, start) == []


def test_invalid_options_fail_as_a_stack_error():
    with pytest.raises(StackError, match="not a valid label value"):
        StackManager(None, "not/valid")
    with pytest.raises(StackError, match="max_prune"):
        StackManager(None, "s", max_prune="lots")


def test_an_api_error_ends_the_run_as_a_stack_error_and_drops_the_discovery_cache(client, tmp_path):
    ns, stack = unique("m-denied"), unique("s")
    cache = tmp_path / "discovery"
    sync(client, stack, stack_objects(ns, count=1), discovery_cache_dir=str(cache))
    assert any(cache.glob("stacksync-discovery-*.json"))
    m = manager(client, stack, discovery_cache_dir=str(cache), record_namespace="missing-" + ns)
    with pytest.raises(StackError) as e:
        m.sync(stack_objects(ns, count=1))  # the record namespace does not exist: the record cannot be written
    assert e.value.changeset is not None and "missing-" + ns in str(e.value)
    assert not any(cache.glob("stacksync-discovery-*.json"))  # a stale kind may be why it failed: read it again
    assert any(cache.glob("insync/*.json"))  # what was found in sync stays true: an object's uid and resourceVersion


def test_gate_facts_of_the_engine_come_from_its_options():
    m = StackManager(None, "s", prune=False, phase="prune", max_prune="3", source="git", allow_empty=True)
    facts = gate.facts_of(m.opts, desired=2)
    assert (facts.stack, facts.prune, facts.phase, facts.max_prune, facts.source, facts.allow_empty, facts.desired) == (
        "s", False, "prune", "3", "git", True, 2)
    assert gate.decide(facts).code == gate.DISABLED


def test_fail_on_shared_refuses_objects_another_deployment_tool_manages(client):
    ns, stack = unique("m-helm"), unique("s")
    sync(client, stack, [namespace(ns)])
    helm = configmap("chart", ns)
    helm["metadata"]["labels"] = {"app.kubernetes.io/managed-by": "Helm"}
    helm["metadata"]["annotations"] = {"meta.helm.sh/release-name": "web"}
    client.request("POST", f"/api/v1/namespaces/{ns}/configmaps", body=helm)
    with pytest.raises(StackError, match=rf"managed by another deployment tool .*ConfigMap {ns}/chart \(Helm \(web\)\)"):
        sync(client, stack, [namespace(ns), configmap("chart", ns), configmap("mine", ns)], fail_on_shared=True)
    assert live(client, cm_path(ns, "mine")) is None  # refused before any apply
    cs = sync(client, stack, [namespace(ns), configmap("chart", ns)])  # without the option: applied, with a warning
    assert any("also managed by Helm (web)" in w for w in cs.warnings)


def test_wait_records_the_health_of_what_was_written(client):
    ns, stack = unique("m-wait"), unique("s")
    cs = sync(client, stack, stack_objects(ns, count=1), wait=True, wait_timeout=10)
    healths = dict((e.oid.name, e.extra.get("health")) for e in cs.entries)
    assert healths == {ns: "Healthy", "c0": "Healthy"}
    assert [e.ref()["health"] for e in cs.entries] == ["Healthy", "Healthy"]


def unavailable_deployment(name, ns):
    """A Deployment that never becomes Available: its pods select a node label no node has."""
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": ns},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"nodeSelector": {"stacksync.io/test-no-such-node": "true"},
                                           "containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10"}]}}}}


def healths_of(changeset):
    return dict((e.oid.name, e.extra.get("health")) for e in changeset.entries)


def test_wait_covers_the_unchanged_objects_a_rerun_after_a_timeout_fails_as_the_first(kubesim, client):
    ns, stack = unique("m-rewait"), unique("s")
    objects = [namespace(ns), unavailable_deployment("db", ns), configmap("c0", ns)]
    timed_out = f"timed out after 1s waiting for: Deployment.apps {ns}/db: Progressing (LessAvailable): Available: 0/1"
    with pytest.raises(StackError) as first:
        sync(client, stack, objects, wait=True, wait_timeout=1, commit="one")
    assert str(first.value) == f"stack {stack!r}: {timed_out}"
    # the retry: no object to write, the Deployment still not available -- it fails the same way, writing no object,
    # and the record (which a failed wait does not complete) is left as it is
    record = live(client, record_path(stack))["data"]
    start = len(kubesim.requests)
    with pytest.raises(StackError) as again:
        sync(client, stack, objects, wait=True, wait_timeout=1, commit="one")
    assert str(again.value) == str(first.value)
    assert [w for w in writes(kubesim, start) if "/leases" not in w[1]] == []
    assert live(client, record_path(stack))["data"] == record
    cs = again.value.changeset
    assert [e.action for e in cs.entries] == [UNCHANGED] * 3
    assert healths_of(cs) == {ns: "Healthy", "db": "Progressing", "c0": "Healthy"}
    # the unchanged Deployment is listed in `applied` (not healthy), the healthy unchanged ones only counted
    assert [o["name"] for o in cs.result(unchanged=False)["applied"]] == ["db"]
    # only the Deployment was read again while waited for: the others were judged from what the plan observed
    reads = [r["path"] for r in requests_since(kubesim, start) if r["method"] == "GET" and not r.get("query")]
    assert set(p for p in reads if "/deployments" in p or "/configmaps/c0" in p or p.endswith("/namespaces/" + ns)) == {
        f"/apis/apps/v1/namespaces/{ns}/deployments/db"}


def test_a_record_only_run_with_wait_fails_on_an_unhealthy_object_and_leaves_the_record(kubesim, client):
    ns, stack = unique("m-rewait2"), unique("s")
    objects = [namespace(ns), unavailable_deployment("db", ns)]
    with pytest.raises(StackError):
        sync(client, stack, objects, wait=True, wait_timeout=1, commit="one")
    sync(client, stack, objects, commit="one")  # without wait: recorded
    with pytest.raises(StackError, match=f"timed out after 1s waiting for: Deployment.apps {ns}/db"):
        sync(client, stack, objects, wait=True, wait_timeout=1, commit="two")
    assert live(client, record_path(stack))["data"]["commit"] == "one"
    # a change of one object: the unchanged Deployment is waited for too
    with pytest.raises(StackError, match=f"waiting for: Deployment.apps {ns}/db") as e:
        sync(client, stack, [*objects, configmap("new", ns)], wait=True, wait_timeout=1, commit="two")
    assert healths_of(e.value.changeset)["db"] == "Progressing"
    assert ("created", "new") in [(x.action, x.oid.name) for x in e.value.changeset.entries]


def test_a_healthy_noop_with_wait_reads_no_more_than_one_without(kubesim, client):
    ns, stack = unique("m-noopwait"), unique("s")
    sync(client, stack, stack_objects(ns), wait=True, wait_timeout=10)
    start = len(kubesim.requests)
    sync(client, stack, stack_objects(ns))
    plain = len(kubesim.requests) - start
    start = len(kubesim.requests)
    cs = sync(client, stack, stack_objects(ns), wait=True, wait_timeout=10)
    assert len(kubesim.requests) - start == plain and writes(kubesim, start) == []
    assert set(healths_of(cs).values()) == {"Healthy"} and cs.result(unchanged=False)["applied"] == []


def test_check_mode_and_phase_prune_do_not_wait(kubesim, client):
    ns, stack = unique("m-nowait"), unique("s")
    objects = [namespace(ns), unavailable_deployment("db", ns)]
    with pytest.raises(StackError):
        sync(client, stack, objects, wait=True, wait_timeout=1)
    for options in (dict(check_mode=True), dict(phase="prune")):
        cs = sync(client, stack, objects, wait=True, wait_timeout=1, **options)
        assert cs.errors == [] and healths_of(cs) == {ns: None, "db": None}, options


@pytest.mark.parametrize("denied, refused", [
    ({"verbs": ["get"], "resources": ["configmaps"]}, "configmaps"),
    ({"verbs": ["create"], "resources": ["leases"]}, "leases"),
    ({"verbs": ["create"], "resources": ["secrets"]}, "secrets"),
])
def test_the_record_namespace_refused_says_where_the_state_lives_and_what_rights_it_needs(kubesim, client, tmp_path,
                                                                                            denied, refused):
    """Credentials that may write the stack's objects but not its record, key or Lease (in kube-system by default):
    the error says which namespace holds them, the option (in the caller's words) that moves them, and the rights."""
    from ansible_collections.stacksync.k8s.plugins.module_utils.base.vocabulary import spoken

    from ..simengine import user_client

    ns = unique("ns-rec")
    sync(client, unique("setup"), [namespace(ns)], allow_empty=True)
    user = user_client(kubesim, tmp_path, unique("no-record"), deny=[dict(denied, namespaces=["kube-system"])])
    resources = [configmap("a", ns), secret("s", ns)]
    with pytest.raises(StackError) as err:
        sync(user, unique("rec"), resources, namespace=ns)
    text = str(err.value)
    assert "403" in text and refused in text and "kube-system" in text, text
    assert ("namespace kube-system, set by record_namespace, holds the stack's record ConfigMap, key Secret and Lease: "
            "the credentials need get, create, update, patch and delete on configmaps, secrets and "
            "leases.coordination.k8s.io there; or set record_namespace to a namespace where they have them)") in text
    with spoken({"record_namespace": "stacksync_record_namespace"}), pytest.raises(StackError) as err:
        sync(user, unique("rec"), resources, namespace=ns)
    assert "set by stacksync_record_namespace, holds" in str(err.value), str(err.value)
    assert "or set stacksync_record_namespace to a namespace" in str(err.value)
    # another object refused is not the record's
    user = user_client(kubesim, tmp_path, unique("no-cm"), deny=[{"verbs": ["patch"], "resources": ["configmaps"],
                                                                   "namespaces": [ns]}])
    with pytest.raises(StackError) as err:
        sync(user, unique("rec"), [configmap("b", ns)], namespace=ns)
    assert "403" in str(err.value) and "record_namespace" not in str(err.value), str(err.value)
