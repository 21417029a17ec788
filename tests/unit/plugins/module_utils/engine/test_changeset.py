"""changeset.py: typed entries of a run and the module's return values made from them (pure)."""

from types import SimpleNamespace

from ansible_collections.stacksync.k8s.plugins.module_utils.base.identity import ObjectId
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import changeset as C

CM = ObjectId("", "ConfigMap", "apps", "c")
NS = ObjectId("", "Namespace", "", "apps")


def test_an_object_is_named_by_api_version_kind_namespace_and_name():
    assert C.object_ref(CM, "v1") == {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "apps", "name": "c"}
    assert C.object_ref(NS, "v1", status="x")["namespace"] is None  # cluster-scoped: None, not ""
    assert C.object_ref(NS, "v1", status="x")["status"] == "x"


def test_each_action_returns_the_fields_its_documentation_lists():
    cs = C.ChangeSet()
    cs.add(CM, "v1", C.CREATED, C.PHASE_APPLY, drift=[{"manager": "kubectl"}])
    cs.add(NS, "v1", C.SKIPPED, C.PHASE_PRUNE, "holds-others", "still contains objects")
    cs.add(ObjectId("", "Secret", "apps", "s"), "v1", C.FAILED, C.PHASE_APPLY, reason="apply failed: 422")
    cs.add(ObjectId("", "ConfigMap", "apps", "old"), "v1", C.TERMINATING, C.PHASE_PRUNE, "terminating", "finalizers")
    cs.add(ObjectId("", "ConfigMap", "apps", "moved"), "v1", C.RELEASED, C.PHASE_PRUNE, stack="other")
    created, skipped, failed, terminating, released = [e.ref() for e in cs.entries]
    assert created == dict(C.object_ref(CM, "v1"), action="created", drift=[{"manager": "kubectl"}])
    assert skipped == dict(C.object_ref(NS, "v1"), reason="still contains objects", code="holds-others", phase="prune")
    assert failed["reason"] == "apply failed: 422" and "action" not in failed and "code" not in failed
    assert terminating["reason"] == "finalizers" and "phase" not in terminating
    assert released == dict(C.object_ref(ObjectId("", "ConfigMap", "apps", "moved"), "v1"), stack="other")
    assert cs.errors == ["apply failed: 422"]  # a failed entry is one of the run's errors


def test_the_result_groups_entries_and_counts_them():
    cs = C.ChangeSet()
    cs.add(CM, "v1", C.UNCHANGED, C.PHASE_APPLY)
    assert not cs.changed
    cs.add(NS, "v1", C.CONFIGURED, C.PHASE_APPLY)
    cs.add(ObjectId("", "ConfigMap", "apps", "gone"), "v1", C.PRUNED, C.PHASE_PRUNE)
    cs.add(ObjectId("", "ConfigMap", "apps", "kept"), "v1", C.SKIPPED, C.PHASE_PRUNE, "ignored", "ignore annotation set")
    cs.checksum = "sha256:x"
    result = cs.result()
    assert result["changed"] is True and result["checksum"] == "sha256:x"
    assert [o["name"] for o in result["applied"]] == ["c", "apps"]
    assert [o["name"] for o in result["pruned"]] == ["gone"]
    assert [o["name"] for o in result["skipped_objects"]] == ["kept"]  # never "skipped": Ansible reads that key
    assert "skipped" not in result and result["terminating"] == [] and result["released"] == []
    assert result["counts"] == {"created": 0, "configured": 1, "recreated": 0, "unchanged": 1, "pruned": 1, "skipped": 1,
                                "terminating": 0, "released": 0, "marked": 0, "unmarked": 0}


def test_a_recreated_object_is_its_own_action_with_its_reason():
    cs = C.ChangeSet()
    cs.add(CM, "v1", C.UNCHANGED, C.PHASE_APPLY)
    cs.add(NS, "v1", C.RECREATED, C.PHASE_APPLY, reason="immutable field(s) x changed")
    assert cs.changed and cs.counts["recreated"] == 1 and cs.counts["configured"] == 0
    result = cs.result(unchanged=False)
    assert result["applied"] == [dict(C.object_ref(NS, "v1"), action="recreated", reason="immutable field(s) x changed")]


def test_without_unchanged_applied_lists_what_was_written_and_the_unchanged_a_wait_found_not_healthy():
    cs = C.ChangeSet()
    cs.add(CM, "v1", C.UNCHANGED, C.PHASE_APPLY)
    cs.add(ObjectId("", "ConfigMap", "apps", "ready"), "v1", C.UNCHANGED, C.PHASE_APPLY, health="Healthy")
    cs.add(ObjectId("apps", "Deployment", "apps", "web"), "apps/v1", C.UNCHANGED, C.PHASE_APPLY, health="Degraded",
           health_reason="Failed: boom")
    cs.add(NS, "v1", C.CREATED, C.PHASE_APPLY)
    cs.add(ObjectId("", "ConfigMap", "apps", "x"), "v1", C.CONFIGURED, C.PHASE_APPLY)
    cs.add(ObjectId("", "ConfigMap", "apps", "gone"), "v1", C.PRUNED, C.PHASE_PRUNE)
    every, written = cs.result(), cs.result(unchanged=False)
    assert [(o["name"], o["action"]) for o in written["applied"]] == [("web", "unchanged"), ("apps", "created"),
                                                                      ("x", "configured")]
    assert written["applied"][0]["health_reason"] == "Failed: boom"
    assert [o["name"] for o in every["applied"]] == ["c", "ready", "web", "apps", "x"]
    assert dict(written, applied=None) == dict(every, applied=None)  # the rest, counts included, is the same
    assert written["counts"]["unchanged"] == 3


def test_a_release_changes_the_cluster_and_a_skip_does_not():
    cs = C.ChangeSet()
    cs.add(CM, "v1", C.SKIPPED, C.PHASE_PRUNE, "not-owned", "not ours")
    assert not cs.changed
    cs.add(NS, "v1", C.RELEASED, C.PHASE_PRUNE, stack="b")
    assert cs.changed


def test_warnings_are_kept_once_and_reset_keeps_the_first_ones():
    cs = C.ChangeSet()
    for w in ("a", "b", "a", "c"):
        cs.warn(w)
    assert cs.warnings == ["a", "b", "c"]
    cs.add(CM, "v1", C.FAILED, C.PHASE_APPLY, reason="x")
    cs.diff.append({"before": {}})
    cs.reset(1)  # the run plans again: what came before the plan stays
    assert (cs.warnings, cs.entries, cs.errors, cs.diff) == (["a"], [], [], [])


def test_health_is_added_to_the_applied_objects_waited_for_only():
    cs = C.ChangeSet()
    cs.add(CM, "v1", C.CREATED, C.PHASE_APPLY)
    cs.add(NS, "v1", C.PRUNED, C.PHASE_PRUNE)
    cs.add(ObjectId("", "ConfigMap", "apps", "d"), "v1", C.CONFIGURED, C.PHASE_APPLY)
    cs.record_health({CM: SimpleNamespace(health="Progressing", reason="LessAvailable", message="1/2"),
                      NS: SimpleNamespace(health="Healthy", reason="", message=""),
                      ObjectId("", "ConfigMap", "apps", "d"): SimpleNamespace(health="Healthy", reason="Ready", message="")})
    created, pruned, configured = [e.ref() for e in cs.entries]
    assert (created["health"], created["health_reason"]) == ("Progressing", "LessAvailable: 1/2")
    assert "health" not in pruned
    assert (configured["health"], configured["health_reason"]) == ("Healthy", "Ready")
    assert cs.count(C.CREATED) == 1 and cs.count(C.FAILED) == 0


def test_an_unchanged_object_is_listed_only_when_its_health_says_not_healthy():
    cs = C.ChangeSet()
    for name, health in (("none", None), ("empty", ""), ("healthy", "Healthy"), ("current", "Current"),
                         ("progressing", "Progressing"), ("missing", "Missing")):
        cs.add(ObjectId("", "ConfigMap", "apps", name), "v1", C.UNCHANGED, C.PHASE_APPLY,
               **({} if health is None else {"health": health}))
    assert [o["name"] for o in cs.result(unchanged=False)["applied"]] == ["progressing", "missing"]
