"""plugin_utils/rename.py: which stacks named otherwise before 0.2.0 a sync takes over, and what it reports."""

from ansible_collections.stacksync.k8s.plugins.module_utils.base.naming import legacy_stack_name
from ansible_collections.stacksync.k8s.plugins.plugin_utils import rename as rn
from ansible_collections.stacksync.k8s.plugins.plugin_utils import sources as sp


def resolve(*sources):
    return sp.resolve(list(sources), {"version": "main", "path": ".", "prune": True})


def test_default_names_are_renamed_explicit_ones_never():
    a, b, explicit, absent, keep = resolve(
        {"repo": "https://git.example.com/acme/apps", "path": "prod"},
        {"repo": "https://git.example.com/acme/apps-prod"},  # the same legacy name as the first
        {"repo": "https://git.example.com/acme/other", "stack": "mine"},
        {"repo": "https://git.example.com/acme/gone", "state": "absent"},
        {"repo": "https://git.example.com/acme/kept", "prune": False},
    )
    legacy = legacy_stack_name("https://git.example.com/acme/apps", "prod")
    assert a["legacy_stack"] == b["legacy_stack"] == legacy and explicit["legacy_stack"] is None
    renames = rn.renames([a, b, explicit, absent, keep])
    assert renames == {legacy: [a, b], absent["legacy_stack"]: [absent]}  # prune: false keeps its old stack


def test_a_legacy_name_another_source_uses_is_not_renamed():
    legacy = legacy_stack_name("https://git.example.com/acme/apps")
    a, b = resolve({"repo": "https://git.example.com/acme/apps"}, {"repo": "file:///x", "stack": legacy})
    assert rn.renames([a, b]) == {}


def test_takes_over_only_a_legacy_stack_with_a_record_for_a_new_stack_that_never_synced():
    record = {"stack": "old", "lastSyncTime": "2026-01-01T00:00:00Z"}
    assert rn.takes_over(record, {}) and rn.takes_over(record, None)
    assert rn.takes_over(record, {"stack": "new", "groupKinds": "ConfigMap"})  # its apply ran, the run then failed
    assert not rn.takes_over({}, {}) and not rn.takes_over(None, {})
    assert not rn.takes_over(record, {"stack": "new", "lastSyncTime": "2026-01-02T00:00:00Z"})


def test_the_result_carries_what_the_legacy_stack_did():
    prune = {"changed": False, "counts": {"pruned": 1}, "pruned": [{"name": "a"}], "warnings": ["w"]}
    absent = {"changed": True, "counts": {"pruned": 2}, "pruned": [{"name": "b"}, {"name": "c"}], "warnings": ["w", "x"]}
    out = rn.renamed_result(prune, "old", absent)
    assert out["counts"]["pruned"] == 3 and [o["name"] for o in out["pruned"]] == ["a", "b", "c"]
    assert out["changed"] and out["warnings"] == ["w", "x"] and not out.get("failed")
    failed = rn.renamed_result(prune, "old", {"failed": True, "msg": "no rights"})
    assert failed["failed"] and failed["failed_phase"] == "prune"
    assert failed["msg"] == "taking over stack old (its name before 0.2.0): no rights"


def test_it_says_so_once_in_plain_words():
    assert rn.rename_line("old", {"counts": {"pruned": 0}}).startswith(
        "took over stack old, its name before 0.2.0 (the default stack names changed): ")
    assert rn.rename_line("old", {"counts": {"pruned": 0}}).endswith("nothing was deleted")
    assert "2 of its objects no longer in git were pruned" in rn.rename_line("old", {"counts": {"pruned": 2}})
    assert rn.rename_line("old", None, check_mode=True).startswith("would take over stack old")


def test_depends_on_written_with_the_old_default_names_keeps_working():
    crds_url = "https://git.example.com/acme/platform"
    old = legacy_stack_name(crds_url, "crds")
    crds, apps = resolve({"repo": crds_url, "path": "crds"}, {"repo": crds_url, "path": "apps", "depends_on": [old]})
    assert apps["depends_on"] == [crds["stack"]] and crds["stack"] != old
    assert [s["stack"] for s in sp.order([apps, crds])] == [crds["stack"], apps["stack"]]
