"""plugin_utils/sources.py: sources resolved and checked, dependency order, results, summary and stats."""

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.base.naming import stack_name
from ansible_collections.stacksync.k8s.plugins.module_utils.engine import gate
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
    assert s["stack"] == stack_name("https://git.example.com/org/apps", "manifests")
    assert s["legacy_stack"] == "git.example.com-org-apps-manifests"
    assert s["source_id"] == "git.example.com/org/apps#manifests"
    assert s["repo_label"] == "https://git.example.com/org/apps.git"
    assert s["depends_on"] == [] and s["own_auth"] is False


def test_stack_name_from_the_path_and_own_auth():
    (s,) = resolve({"repo": "file:///srv/repo.git", "path": "./a//b/", "context": "tenant"})
    assert s["path"] == "a/b" and s["stack"] == stack_name("/srv/repo", "a/b") and s["own_auth"] is True
    assert s["stack"].startswith("repo-a-b-") and s["legacy_stack"] == "srv-repo-a-b"


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
    assert e["counts"] == {"created": 1, "configured": 0, "recreated": 0, "unchanged": 3, "pruned": 1, "skipped": 1}
    assert (e["changed"], e["failed"], e["pruning"], e["msg"], e["seconds"]) == (True, False, "done", "", 1.23)
    assert e["repo"] == "https://h.example/r.git" and e["warnings"] == ["w1", "w2"]
    assert [o["name"] for o in e["pruned"]] == ["gone"] and [o["name"] for o in e["skipped"]] == ["opt"]


def test_one_run_that_failed_in_its_prune_part_reads_as_a_failed_prune():
    res = {"failed": True, "failed_phase": "prune", "msg": "refusing to prune: empty", "pruned": [],
           "counts": {"created": 0, "configured": 0, "unchanged": 2, "pruned": 0}}
    e = sp.stack_entry(SOURCE, COMMIT, 2, res, None, phase_all=True)
    assert e["failed"] and e["pruning"] == "failed" and e["msg"] == "refusing to prune: empty"
    res = dict(res, failed_phase=None, msg="apply failed")
    e = sp.stack_entry(SOURCE, COMMIT, 2, res, None, phase_all=True)
    assert e["failed"] and e["pruning"] == "not run" and e["msg"] == "apply failed"


def test_one_run_lists_its_diff_once():
    diff = [{"before_header": "ConfigMap default/a", "after_header": "ConfigMap default/a", "before": "1", "after": "2"}]
    res = {"changed": True, "diff": diff, "counts": {"created": 0, "configured": 1, "unchanged": 0, "pruned": 0}}
    assert sp.stack_entry(SOURCE, COMMIT, 1, res, None, phase_all=True)["diff"] == [diff]
    prune = {"changed": True, "diff": [{"before": "x", "after": ""}], "counts": {"pruned": 1}}
    assert sp.stack_entry(SOURCE, COMMIT, 1, res, prune)["diff"] == [diff, prune["diff"]]


def test_a_blocked_stack_says_which_dependency_failed():
    e = sp.stack_entry(SOURCE, COMMIT, 2, None, None, blocked=["infra"])
    assert e["failed"] and e["msg"] == "not applied: it depends on infra, which failed"


def test_a_stack_whose_source_failed_carries_the_error():
    e = sp.stack_entry(SOURCE, "", 0, None, None, error="stacksync.k8s.manifests: apps/cm.yaml: not YAML")
    assert e["failed"] and not e["changed"] and e["pruning"] == "not run" and e["commit"] == ""
    assert e["msg"] == "stacksync.k8s.manifests: apps/cm.yaml: not YAML"


def test_health_says_whether_the_stack_s_objects_were_checked():
    written = {"counts": {"created": 1}, "applied": [cm("a", action="created", health="Healthy")]}
    # a wait covers the unchanged objects too: the healthy ones are counted, not listed
    unchanged = {"counts": {"unchanged": 1}, "applied": []}
    assert sp.stack_entry(SOURCE, COMMIT, 1, written, None, health_waited=True)["health"] == "healthy"
    assert sp.stack_entry(SOURCE, COMMIT, 1, written, None)["health"] == "not checked"
    assert sp.stack_entry(SOURCE, COMMIT, 1, unchanged, None, health_waited=True)["health"] == "healthy"
    assert sp.stack_entry(SOURCE, COMMIT, 1, unchanged, None)["health"] == "not checked"
    nothing = {"counts": {}, "applied": []}  # nothing applied or unchanged: nothing was waited for
    assert sp.stack_entry(SOURCE, COMMIT, 0, nothing, None, health_waited=True)["health"] == "not checked"
    failed = {"failed": True, "msg": "boom", "counts": {"unchanged": 1}}
    assert sp.stack_entry(SOURCE, COMMIT, 1, failed, None, health_waited=True)["health"] == "not checked"
    # a retry after a timeout: the unchanged object the wait found not healthy is listed
    stuck = {"failed": True, "msg": "timed out", "counts": {"unchanged": 1},
             "applied": [cm("a", action="unchanged", health="Progressing", health_reason="LessAvailable")]}
    e = sp.stack_entry(SOURCE, COMMIT, 1, stuck, None, health_waited=True)
    assert e["health"] == "unhealthy" and [o["name"] for o in e["unhealthy"]] == ["a"]


def test_an_entry_lists_the_objects_written_and_counts_the_unchanged():
    applied = [cm("a", action="created"), cm("b", action="unchanged"), cm("c", action="configured"),
               cm("d", action="unchanged", health="Degraded", health_reason="Failed: boom")]
    apply = {"counts": {"created": 1, "configured": 1, "unchanged": 2}, "applied": applied}
    e = sp.stack_entry(SOURCE, COMMIT, 4, apply, None, health_waited=True)
    assert [o["name"] for o in e["applied"]] == ["a", "c"] and e["counts"]["unchanged"] == 2
    assert [o["name"] for o in e["unhealthy"]] == ["d"] and e["health"] == "unhealthy"  # found among all of them
    assert len(apply["applied"]) == 4  # the stack run's own result is untouched


def test_unhealthy_objects_are_listed_with_their_reason():
    apply = {"counts": {}, "applied": [cm("a", action="created", health="Healthy"),
                                       cm("b", action="created", health="Degraded", health_reason="Failed: boom")]}
    e = sp.stack_entry(SOURCE, COMMIT, 2, apply, {"counts": {"pruned": 0}}, health_waited=True)
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
                    "wait": True, "source": "file:///r#manifests"}


def test_a_source_with_its_own_kubeconfig_gets_none_of_the_host_credentials():
    # none of the job's connection settings (validate_certs, impersonation included), and no K8S_AUTH_* either
    (s,) = resolve({"repo": "file:///r", "stack": "t", "kubeconfig": "/tenant", "impersonate_user": "",
                    "record_namespace": "team", "state": "absent"})
    params = dict(PARAMS, proxy="http://job-proxy", request_timeout=5.0)
    args = sp.stack_args(s, "", None, params, "prune", environ={"K8S_AUTH_KUBECONFIG": "/job"})
    assert args == {"kubeconfig": "/tenant", "k8s_auth_env": False, "field_manager": "fm", "max_prune": "10%",
                    "request_timeout": 5.0, "record_namespace": "team", "name": "t", "state": "absent", "prune": True,
                    "source": "file:///r#manifests"}
    assert set(sp.HOST_CREDENTIALS) >= {"host", "api_key", "validate_certs", "ca_cert", "client_cert", "client_key",
                                        "proxy", "no_proxy", "impersonate_user", "impersonate_groups", "username",
                                        "password", "context", "kubeconfig"}


def test_a_source_with_its_own_context_looks_it_up_in_the_job_kubeconfig_file_only():
    (s,) = resolve({"repo": "file:///r", "stack": "t", "context": "tenant", "impersonate_user": "sa"})
    args = sp.stack_args(s, "c", [], PARAMS, "prune", environ={"K8S_AUTH_KUBECONFIG": "/job"})
    assert (args["context"], args["kubeconfig"], args["k8s_auth_env"]) == ("tenant", "/host/kubeconfig", False)
    assert args["impersonate_user"] == "sa" and "impersonate_groups" not in args  # not the job's groups
    assert "api_key" not in args and "ca_cert" not in args and "validate_certs" not in args
    args = sp.stack_args(s, "c", [], dict(PARAMS, kubeconfig=None), "prune", environ={"K8S_AUTH_KUBECONFIG": "/job"})
    assert args["kubeconfig"] == "/job"
    args = sp.stack_args(s, "c", [], dict(PARAMS, kubeconfig=None), "prune", environ={})
    assert "kubeconfig" not in args  # then KUBECONFIG or ~/.kube/config, as kubectl


def test_git_options_and_transports_are_refused_before_anything_is_fetched():
    for source, refused in (({"repo": "file:///x", "version": "--upload-pack=touch /tmp/x"}, "version"),
                            ({"repo": "--upload-pack=touch /tmp/x"}, "begins with '-'"),
                            ({"repo": "ext::sh -c touch% /tmp/x"}, "transport 'ext'"),
                            ({"repo": "file:///x", "version": "a..b"}, "'..'")):
        with pytest.raises(sp.SourceError, match="refused"):
            resolve(source)
        try:
            resolve(source)
        except sp.SourceError as e:
            assert refused in str(e)


def test_confinement_options_reach_the_stack_run():
    (s,) = resolve({"repo": "file:///x", "allowed_namespaces": ["team-a"], "allowed_kinds": ["ConfigMap"],
                    "denied_kinds": ["Secret"], "allow_cluster_scoped": False})
    args = sp.stack_args(s, "c0ffee", [], {}, "apply")
    assert (args["allowed_namespaces"], args["allowed_kinds"], args["denied_kinds"], args["allow_cluster_scoped"]) == (
        ["team-a"], ["ConfigMap"], ["Secret"], False)


def test_every_stack_of_a_sync_with_several_record_namespaces_gets_them_all():
    # a tenant whose credentials may not list records cluster-wide must still read the other tenants' records
    sources = resolve({"repo": "file:///a", "stack": "a", "record_namespace": "rec-a"},
                      {"repo": "file:///b", "stack": "b", "record_namespace": "rec-b"},
                      {"repo": "file:///c", "stack": "c"})
    params = dict(PARAMS, record_namespace="rec-default", record_namespaces=["rec-extra"])
    for s in sources:
        args = sp.stack_args(s, "abc", [], params, "prune")
        assert args["record_namespaces"] == ["rec-a", "rec-b", "rec-default", "rec-extra"]
    assert sp.stack_args(sources[2], "abc", [], params, "prune")["record_namespace"] == "rec-default"
    (alone,) = resolve({"repo": "file:///a", "stack": "a", "record_namespace": "rec-a"})
    assert "record_namespaces" not in sp.stack_args(alone, "abc", [], PARAMS, "prune")  # one namespace: nothing to add


def test_stack_args_carry_the_owning_source_the_prune_option_and_the_other_sources():
    (s,) = resolve({"repo": "https://u:tok@git.example.com/Org/Apps.git?x=1", "stack": "apps", "prune": False})
    others = [{"stack": "b", "source": "b-src", "namespace": "", "earlier": True, "objects": []}]
    args = sp.stack_args(s, "c", [], PARAMS, "apply", others=others)
    # the source identity is credential-free and one for every spelling of the repository
    assert args["source"] == "git.example.com/Org/Apps#manifests" and "tok" not in args["source"]
    assert args["prune"] is False and args["other_sources"] is others
    # a sources run of one source says so (nothing else of the run writes), a lookup outside the run does not
    assert sp.stack_args(s, "c", [], PARAMS, "apply", others=[])["other_sources"] == []
    assert "other_sources" not in sp.stack_args(s, "c", [], PARAMS, "apply")


# -- the schedule (next_step) -------------------------------------------------------------------------
def run(prepared, outcomes):
    """Play a sources run through next_step: ``outcomes[(stack, stage)]`` is what a stack run returns (default
    done); the steps as ``(stage, stack, phase or the message)``."""
    done, steps = {}, []
    step = sp.next_step(prepared, done)
    while step is not None:
        stack = step.source["stack"]
        assert step.stage not in done.get(stack, {}), "a stage runs once"
        if step.phase is None:
            done.setdefault(stack, {})[step.stage] = sp.FAILED if step.stage == "apply" else sp.NOT_RUN
            steps.append((step.stage, stack, step.message))
        else:
            done.setdefault(stack, {})[step.stage] = outcomes.get((stack, step.stage), sp.DONE)
            steps.append((step.stage, stack, step.phase))
        step = sp.next_step(prepared, done)
    return steps


def prepared(*sources, errors=()):
    return [(s, "c", None if s["stack"] in errors else [], "bad yaml" if s["stack"] in errors else None)
            for s in resolve(*sources)]


def test_a_single_source_is_one_run():
    assert run(prepared({"repo": "file:///r", "stack": "a"}), {}) == [("apply", "a", "all")]
    # without prune too: its stack's prune gate holds the prune back (stack_args passes prune: false)
    (source, commit, resources, _e), = p = prepared({"repo": "file:///r", "stack": "a", "prune": False})
    assert run(p, {}) == [("apply", "a", "all")]
    assert sp.stack_args(source, commit, resources, PARAMS, "all")["prune"] is False
    entry = sp.stack_entry(source, commit, 0, {"changed": False, "counts": {}}, None, phase_all=True)
    assert entry["pruning"] == "disabled" and not entry["failed"]
    # and two sources, one without prune: the gate holds its prune run back
    assert run(prepared({"repo": "file:///r", "stack": "a", "prune": False}, {"repo": "file:///r", "stack": "b"}),
               {})[2:] == [("prune", "b", "prune"), ("prune", "a", "prune is false")]


def test_applies_in_order_then_prunes_in_reverse():
    p = prepared({"repo": "file:///r", "stack": "a"}, {"repo": "file:///r", "stack": "b", "depends_on": ["a"]},
                 {"repo": "file:///r", "stack": "old", "state": "absent"})
    assert run(p, {}) == [("apply", "a", "apply"), ("apply", "b", "apply"),
                          ("prune", "old", "delete"), ("prune", "b", "prune"), ("prune", "a", "prune")]


def test_a_failed_apply_holds_back_only_its_own_prune():
    # before: any failure held back every stack's prune
    p = prepared({"repo": "file:///r", "stack": "a"}, {"repo": "file:///r", "stack": "b"},
                 {"repo": "file:///r", "stack": "c"})
    steps = run(p, {("b", "apply"): sp.FAILED})
    assert ("prune", "a", "prune") in steps and ("prune", "c", "prune") in steps
    assert ("prune", "b", "nothing was pruned because an apply failed") in steps


def test_a_source_that_cannot_be_rendered_holds_back_every_prune_of_the_run():
    # what it declares now is unknown: an object that moved to it in this commit must not be deleted by the stack
    # it left (a failed *apply* holds back only its own prune: its desired set is known and passed to the others)
    p = prepared({"repo": "file:///r", "stack": "base"}, {"repo": "file:///r", "stack": "broken"},
                 {"repo": "file:///r", "stack": "apps", "depends_on": ["broken"]}, errors=("broken",))
    steps = run(p, {})
    assert steps[:3] == [
        ("apply", "base", "apply"),
        ("apply", "broken", "FAILED: bad yaml"),
        ("apply", "apps", "not applied: it depends on broken, which failed")]
    assert steps[3:] == [("prune", "apps", "not applied: it depends on broken, which failed"),
                         ("prune", "broken", "its source could not be fetched or rendered"),
                         ("prune", "base", gate.decide(gate.Facts(unrendered=("broken",))).message)]
    assert "broken could not be fetched or rendered" in steps[5][2]


def test_a_stack_being_deleted_waits_for_a_run_where_every_apply_succeeded():
    # state absent hands objects to the stacks that declare them (a rename): not while one of them failed
    p = prepared({"repo": "file:///r", "stack": "new"}, {"repo": "file:///r", "stack": "old", "state": "absent"},
                 {"repo": "file:///r", "stack": "other"})
    steps = run(p, {("other", "apply"): sp.FAILED})
    assert [s for s in steps if s[1] == "old"] == [("prune", "old", gate.decide(gate.Facts(
        state="absent", others_failed=True)).message)]
    assert ("prune", "new", "prune") in steps
    assert ("prune", "old", "delete") in run(p, {})


def test_other_sources_list_what_every_other_present_source_rendered():
    srcs = resolve({"repo": "file:///r", "stack": "a", "namespace": "web"}, {"repo": "file:///r", "stack": "b"},
                   {"repo": "file:///r", "stack": "broken"}, {"repo": "file:///r", "stack": "old", "state": "absent"})
    cm_a = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}
    cr_b = {"apiVersion": "example.com/v1", "kind": "W", "metadata": {"name": "y", "namespace": "n"}}
    p = [(srcs[0], "c", [cm_a], None), (srcs[1], "c", [cr_b, "junk", {"kind": "NoApiVersion"}], None),
         (srcs[2], "c", None, "render failed"), (srcs[3], "", None, None)]
    declarations = dict((s["stack"], sp.declared(r)) for s, _c, r, e in p if s["state"] == "present" and not e)
    assert declarations == {"a": [["v1", "ConfigMap", "", "x"]], "b": [["example.com/v1", "W", "n", "y"]]}
    of_b = sp.other_sources(p, srcs[1], {"namespace": "dflt"}, declarations)
    assert of_b == [{"stack": "a", "source": "file:///r#manifests", "earlier": True, "namespace": "web",
                     "objects": [["v1", "ConfigMap", "", "x"]]},
                    {"stack": "broken", "source": "file:///r#manifests", "earlier": False, "namespace": "dflt", "objects": None}]
    of_a = sp.other_sources(p, srcs[0], {}, declarations)
    assert [(o["stack"], o["earlier"], o["namespace"]) for o in of_a] == [("b", False, ""), ("broken", False, "")]
    # a source that did not render is listed without objects (its set is unknown; its record counts); one being
    # deleted is not listed
    assert [(o["stack"], o["objects"] is None) for o in sp.other_sources(p, srcs[3], {}, declarations)] == [
        ("a", False), ("b", False), ("broken", True)]
    assert [o["stack"] for o in sp.other_sources(p, srcs[2], {}, declarations)] == ["a", "b"]


def test_other_sources_carry_each_sources_confinement():
    srcs = resolve({"repo": "file:///a", "stack": "a", "allowed_namespaces": ["team-a"]}, {"repo": "file:///b", "stack": "b"})
    p = [(s, "c", [], None) for s in srcs]
    declarations = {"a": [], "b": []}
    (of_b,) = sp.other_sources(p, srcs[1], {"denied_kinds": ["Secret"]}, declarations)
    assert of_b["policy"] == {"allowed_namespaces": ["team-a"], "denied_kinds": ["Secret"]}  # its own, else the task's
    (of_a,) = sp.other_sources(p, srcs[0], {}, declarations)
    assert "policy" not in of_a
