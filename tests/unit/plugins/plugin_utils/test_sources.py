"""plugin_utils/sources.py: sources resolved and checked, dependency order, results, summary and stats."""

import pytest
from ansible_collections.stacksync.k8s.plugins.plugin_utils import sources as sp

DEFAULTS = {"version": "main", "path": "manifests", "prune": True}


def resolve(*sources, **defaults):
    return sp.resolve(list(sources), dict(DEFAULTS, **defaults))


def names(sources):
    return [s["stack"] for s in sources]


# -- resolve ------------------------------------------------------------------------------------------
def test_defaults_fill_what_a_source_leaves_unset():
    (s,) = resolve({"repo": "https://user:tok@git.example.com/org/apps.git", "prune": None, "version": "v1"})
    assert (s["version"], s["path"], s["prune"], s["state"]) == ("v1", "manifests", True, "present")
    assert s["stack"] == "git.example.com-org-apps-manifests"
    assert s["repo_label"] == "https://git.example.com/org/apps.git"
    assert s["depends_on"] == [] and s["own_auth"] is False


def test_stack_name_from_the_path_and_own_auth():
    (s,) = resolve({"repo": "file:///srv/repo.git", "path": "./a//b/", "context": "tenant"})
    assert s["path"] == "a/b" and s["stack"] == "srv-repo-a-b" and s["own_auth"] is True


@pytest.mark.parametrize("source, message", [
    ({"path": "x"}, "source 1 has no repo"),
    ({"repo": "  "}, "source 1 has no repo"),
    ({"repo": "file:///x", "state": "gone"}, "state must be present or absent"),
    ({"repo": "file:///x", "path": "../up"}, "relative path inside the repository"),
    ({"repo": "file:///x", "path": "/abs"}, "relative path inside the repository"),
    ({"repo": "file:///x", "stack": "-bad-"}, "not a valid label value"),
    ({"repo": "file:///x", "stack": "x" * 64}, "not a valid label value"),
    ({"repo": "file:///x", "colour": "blue"}, "unknown option(s) colour"),
    ("file:///x", "source 1 is not a mapping"),
])
def test_invalid_sources_are_refused(source, message):
    with pytest.raises(sp.SourceError, match=r".*" + message.replace("(", r"\(").replace(")", r"\)")):
        resolve(source)


def test_credentials_never_reach_a_message():
    with pytest.raises(sp.SourceError) as e:
        resolve({"repo": "https://user:s3cret@git.example.com/r.git", "state": "gone"})
    assert "s3cret" not in str(e.value) and "git.example.com/r.git" in str(e.value)


# -- stack names and dependencies ---------------------------------------------------------------------
def test_two_sources_with_one_stack_name_are_refused():
    with pytest.raises(sp.SourceError, match="same stack name \\(apps\\)"):
        resolve({"repo": "file:///a", "stack": "apps"}, {"repo": "file:///b", "stack": "apps"})


def test_dependencies_order_the_stacks_and_keep_the_given_order_otherwise():
    srcs = resolve({"repo": "file:///r", "stack": "apps", "depends_on": ["crds", "infra"]},
                   {"repo": "file:///r", "stack": "monitoring"},
                   {"repo": "file:///r", "stack": "infra", "depends_on": ["crds"]},
                   {"repo": "file:///r", "stack": "crds"})
    assert names(sp.order(srcs)) == ["monitoring", "crds", "infra", "apps"]
    assert sp.dependents(srcs) == {"crds", "infra"}


@pytest.mark.parametrize("deps, message", [
    ({"a": ["b"], "b": ["c"], "c": ["a"]}, "dependency cycle between stacks a, b, c, a"),
    ({"a": ["a"]}, "dependency cycle between stacks a, a"),
    ({"a": ["nope"]}, "stack a depends on 'nope', which is not a stack of this sync"),
])
def test_cycles_and_missing_names_are_refused(deps, message):
    with pytest.raises(sp.SourceError, match=message):
        resolve(*({"repo": "file:///r", "stack": n, "depends_on": d} for n, d in deps.items()))


def test_a_dependency_on_a_stack_being_deleted_is_refused():
    with pytest.raises(sp.SourceError, match="depends on old, which has state absent"):
        resolve({"repo": "file:///r", "stack": "old", "state": "absent"},
                {"repo": "file:///r", "stack": "new", "depends_on": ["old"]})


def test_blocked_by_names_the_failed_dependencies():
    src = {"stack": "a", "depends_on": ["x", "y"]}
    assert sp.blocked_by(src, {"y"}) == ["y"] and sp.blocked_by(src, set()) == []


# -- results ------------------------------------------------------------------------------------------
def cm(name, **extra):
    return dict({"apiVersion": "v1", "kind": "ConfigMap", "namespace": "web", "name": name}, **extra)


SOURCE = resolve({"repo": "https://t:x@h.example/r.git", "stack": "apps"})[0]
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def test_two_runs_make_one_entry():
    apply = {"changed": True, "counts": {"created": 1, "configured": 0, "unchanged": 3},
             "applied": [cm("new", action="created"), cm("old", action="unchanged")],
             "skipped_objects": [cm("opt", code="ignored", reason="ignored")], "warnings": ["w1"]}
    prune = {"changed": True, "counts": {"pruned": 1}, "pruned": [cm("gone")], "warnings": ["w1", "w2"],
             "skipped_objects": [cm("new", code="not-applied"), cm("opt", code="ignored")]}
    e = sp.stack_entry(SOURCE, COMMIT, 4, apply, prune, seconds=1.234)
    assert e["counts"] == {"created": 1, "configured": 0, "unchanged": 3, "pruned": 1, "skipped": 1}
    assert (e["changed"], e["failed"], e["pruning"], e["msg"], e["seconds"]) == (True, False, "done", "", 1.23)
    assert e["repo"] == "https://h.example/r.git" and e["warnings"] == ["w1", "w2"]
    assert [o["name"] for o in e["pruned"]] == ["gone"] and [o["name"] for o in e["skipped"]] == ["opt"]


def test_one_run_that_failed_in_its_prune_part_reads_as_a_failed_prune():
    res = {"failed": True, "failed_phase": "prune", "msg": "refusing to prune: empty", "pruned": [],
           "counts": {"created": 0, "configured": 0, "unchanged": 2, "pruned": 0}}
    e = sp.stack_entry(SOURCE, COMMIT, 2, res, None, one_run=True)
    assert e["failed"] and e["pruning"] == "failed" and e["msg"] == "refusing to prune: empty"
    res = dict(res, failed_phase=None, msg="apply failed")
    e = sp.stack_entry(SOURCE, COMMIT, 2, res, None, one_run=True)
    assert e["failed"] and e["pruning"] == "not run" and e["msg"] == "apply failed"


def test_one_run_lists_its_diff_once():
    diff = [{"before_header": "ConfigMap default/a", "after_header": "ConfigMap default/a", "before": "1", "after": "2"}]
    res = {"changed": True, "diff": diff, "counts": {"created": 0, "configured": 1, "unchanged": 0, "pruned": 0}}
    assert sp.stack_entry(SOURCE, COMMIT, 1, res, None, one_run=True)["diff"] == [diff]
    prune = {"changed": True, "diff": [{"before": "x", "after": ""}], "counts": {"pruned": 1}}
    assert sp.stack_entry(SOURCE, COMMIT, 1, res, prune)["diff"] == [diff, prune["diff"]]


def test_a_blocked_stack_says_which_dependency_failed():
    e = sp.stack_entry(SOURCE, COMMIT, 2, None, None, blocked=["infra"])
    assert e["failed"] and e["msg"] == "not applied: it depends on infra, which failed"


def test_a_stack_whose_source_failed_carries_the_error():
    e = sp.stack_entry(SOURCE, "", 0, None, None, error="stacksync.k8s.manifests: apps/cm.yaml: not YAML")
    assert e["failed"] and not e["changed"] and e["pruning"] == "not run" and e["commit"] == ""
    assert e["msg"] == "stacksync.k8s.manifests: apps/cm.yaml: not YAML"


def test_health_says_whether_the_written_objects_were_checked():
    written = {"counts": {"created": 1}, "applied": [cm("a", action="created", health="Healthy")]}
    unchanged = {"counts": {"unchanged": 1}, "applied": [cm("a", action="unchanged")]}
    assert sp.stack_entry(SOURCE, COMMIT, 1, written, None, waited=True)["health"] == "healthy"
    assert sp.stack_entry(SOURCE, COMMIT, 1, written, None)["health"] == "not checked"
    assert sp.stack_entry(SOURCE, COMMIT, 1, unchanged, None, waited=True)["health"] == "not checked"
    failed = {"failed": True, "msg": "boom", "counts": {}}
    assert sp.stack_entry(SOURCE, COMMIT, 1, failed, None, waited=True)["health"] == "not checked"


def test_unhealthy_objects_are_listed_with_their_reason():
    apply = {"counts": {}, "applied": [cm("a", action="created", health="Healthy"),
                                       cm("b", action="created", health="Degraded", health_reason="Failed: boom")]}
    e = sp.stack_entry(SOURCE, COMMIT, 2, apply, {"counts": {"pruned": 0}}, waited=True)
    assert [o["name"] for o in e["unhealthy"]] == ["b"] and e["health"] == "unhealthy"


def test_a_source_remembers_where_it_is_in_the_list_and_what_it_set():
    a, b = resolve({"repo": "file:///a", "stack": "a"}, {"repo": "file:///b", "kubeconfig": "/k", "context": ""})
    assert (a["index"], b["index"]) == (0, 1)
    assert a["given"] == ["repo", "stack"] and b["given"] == ["kubeconfig", "repo"]


# -- the stack runs' arguments ------------------------------------------------------------------------
PARAMS = {"kubeconfig": "/host/kubeconfig", "context": "admin", "host": None, "api_key": "tok", "ca_cert": "/ca",
          "validate_certs": False, "impersonate_user": "ops", "impersonate_groups": ["g"], "field_manager": "fm",
          "wait": None, "max_prune": "10%", "sources": [{"repo": "x"}], "cache_dir": "/c", "summary": True}


def test_stack_args_carry_the_task_options_and_the_phase():
    (s,) = resolve({"repo": "file:///r", "stack": "apps", "namespace": "web"})
    args = sp.stack_args(s, "abc", [{"kind": "ConfigMap"}], PARAMS, "apply", wait=True)
    assert args == {"kubeconfig": "/host/kubeconfig", "context": "admin", "api_key": "tok", "ca_cert": "/ca",
                    "validate_certs": False, "impersonate_user": "ops", "impersonate_groups": ["g"],
                    "field_manager": "fm", "max_prune": "10%", "name": "apps", "state": "present", "prune": True,
                    "namespace": "web", "resources": [{"kind": "ConfigMap"}], "phase": "apply", "commit": "abc",
                    "wait": True}


def test_a_source_with_its_own_kubeconfig_gets_none_of_the_host_credentials():
    (s,) = resolve({"repo": "file:///r", "stack": "t", "kubeconfig": "/tenant", "impersonate_user": "",
                    "record_namespace": "team", "state": "absent"})
    args = sp.stack_args(s, "", None, PARAMS, "prune")
    assert args == {"kubeconfig": "/tenant", "validate_certs": False, "field_manager": "fm", "max_prune": "10%",
                    "record_namespace": "team", "name": "t", "state": "absent", "prune": True}
    (s,) = resolve({"repo": "file:///r", "stack": "t", "context": "tenant", "impersonate_user": "sa"})
    args = sp.stack_args(s, "c", [], PARAMS, "prune")
    assert (args["context"], args["impersonate_user"], args["impersonate_groups"]) == ("tenant", "sa", ["g"])
    assert "kubeconfig" not in args and "api_key" not in args and "ca_cert" not in args
