"""runner.py: one run of the ``stack`` module (what the module and its action plugin share), on the simulator:
validated parameters in, the module's return values out, every failure as :class:`RunFailed` with what is known."""

import gc
import json

import pytest
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible_collections.stacksync.k8s.plugins.module_utils import runner
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.observe import Snapshot
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.prepare import Desired
from ansible_collections.stacksync.k8s.plugins.module_utils.runner import RunFailed, run_stack

from .simengine import client_of, cm_path, configmap, gone, live, namespace, unique


@pytest.fixture(scope="module")
def client(kubesim):
    c = client_of(kubesim)
    yield c
    c.close()


@pytest.fixture
def params(kubesim, tmp_path):
    """``params(**args)``: the module's validated parameters for the simulator (discovery cached under tmp_path)."""
    def make(**args):
        args.setdefault("kubeconfig", kubesim.kubeconfig)
        args.setdefault("discovery_cache_dir", str(tmp_path / "cache"))
        result = ArgumentSpecValidator(runner.ARGUMENT_SPEC, mutually_exclusive=runner.MUTUALLY_EXCLUSIVE).validate(args)
        assert not result.error_messages, result.error_messages
        return result.validated_parameters
    return make


def manifests(ns, *names):
    return [namespace(ns)] + [configmap(n, ns) for n in names]


def test_a_run_returns_the_documented_values_and_the_api_requests_it_made(params, client):
    ns, stack = unique("r-run"), unique("s")
    warnings = []
    result = run_stack(params(name=stack, resources=manifests(ns, "a")), warn=warnings.append)
    assert result["changed"] is True and result["counts"]["created"] == 2
    assert sorted(o["name"] for o in result["applied"]) == ["a", ns]
    assert result["api_requests"]["PATCH"] >= 3 and result["api_requests"]["GET"] >= 1
    assert warnings == [] and "diff" not in result
    assert live(client, cm_path(ns, "a")) is not None


def test_diff_mode_returns_readable_diffs_whole_only_with_verbosity(params):
    ns, stack = unique("r-diff"), unique("s")
    short = run_stack(params(name=stack, resources=manifests(ns, "a")), diff=True)
    assert [d["before_header"] for d in short["diff"]] == [f"Namespace {ns}", f"ConfigMap {ns}/a"]
    assert all("prepared" in d for d in short["diff"])  # created objects summed up
    ns2 = unique("r-diff")
    whole = run_stack(params(name=unique("s"), resources=manifests(ns2, "a")), diff=True, verbosity=2)
    assert "name: a" in whole["diff"][1]["after"]


def test_warnings_go_to_warn(params, client):
    ns, stack = unique("r-warn"), unique("s")
    run_stack(params(name=stack, resources=manifests(ns, "a")))
    helm = configmap("h", ns)
    helm["metadata"]["labels"] = {"app.kubernetes.io/managed-by": "Helm"}
    client.request("POST", f"/api/v1/namespaces/{ns}/configmaps", body=helm)
    warnings = []
    run_stack(params(name=stack, resources=manifests(ns, "a", "h")), warn=warnings.append)
    assert warnings == [f"ConfigMap {ns}/h is also managed by Helm; both will keep changing it (remove it from one of "
                        "them; to move it here, see docs/adoption.md: takeover_managers takes over the fields the tool "
                        "set)"]


def test_a_refused_prune_fails_with_the_phase_and_what_was_known(params):
    ns, stack = unique("r-refused"), unique("s")
    run_stack(params(name=stack, resources=manifests(ns, "a")))
    with pytest.raises(RunFailed) as e:
        run_stack(params(name=stack, resources=[]))
    assert "refusing to prune stack" in e.value.msg
    assert e.value.result["failed_phase"] == "prune" and "api_requests" in e.value.result


def test_a_failed_object_fails_the_run_with_the_changeset_and_its_diff(params):
    ns, stack = unique("r-failed"), unique("s")
    frozen = dict(configmap("f", ns), immutable=True)
    run_stack(params(name=stack, resources=[namespace(ns), frozen]))
    with pytest.raises(RunFailed) as e:
        run_stack(params(name=stack, resources=[namespace(ns), dict(frozen, data={"k": "x"}), configmap("b", ns)]),
                  diff=True)
    assert "cannot change immutable field" in e.value.msg
    assert [(o["name"], o["action"]) for o in e.value.result["applied"]] == [("b", "created")]
    assert e.value.result["counts"]["unchanged"] == 1  # the namespace: counted, listed with report_unchanged
    assert [d["before_header"] for d in e.value.result["diff"]] == [f"ConfigMap {ns}/b"]
    with pytest.raises(RunFailed) as again:
        run_stack(params(name=stack, resources=[namespace(ns), dict(frozen, data={"k": "x"}), configmap("b", ns)],
                         report_unchanged=True))
    assert [(o["name"], o["action"]) for o in again.value.result["applied"]] == [(ns, "unchanged"), ("b", "unchanged")]


def test_state_absent_deletes_the_stack(params, client):
    ns, stack = unique("r-absent"), unique("s")
    run_stack(params(name=stack, resources=manifests(ns, "a")))
    result = run_stack(params(name=stack, state="absent"))
    assert sorted(o["kind"] for o in result["pruned"]) == ["ConfigMap", "Namespace"]
    assert gone(client, cm_path(ns, "a"))


def test_check_mode_writes_nothing(params, client):
    ns, stack = unique("r-check"), unique("s")
    result = run_stack(params(name=stack, resources=manifests(ns, "a")), check_mode=True)
    assert result["changed"] and result["counts"]["created"] == 2
    assert live(client, "/api/v1/namespaces/" + ns) is None


def test_the_manifests_can_come_from_a_resources_file(params, tmp_path, client):
    ns, stack = unique("r-file"), unique("s")
    path = tmp_path / "resources.json"
    path.write_text(json.dumps(manifests(ns, "from-file")))
    run_stack(params(name=stack, resources_file=str(path)))
    assert live(client, cm_path(ns, "from-file")) is not None
    path.write_text("{}")
    with pytest.raises(RunFailed, match="not a JSON list of mappings"):
        run_stack(params(name=stack, resources_file=str(path)))


@pytest.mark.parametrize("args, message", [
    (dict(src="/srv/apps"), "src is rendered on the controller by the stacksync.k8s.stack action plugin"),
    (dict(concurrency=0), "concurrency must be at least 1"),
    (dict(kubeconfig="/nonexistent/kubeconfig"), "/nonexistent/kubeconfig"),
    (dict(name="not/a/label"), "is not a valid label value"),
    (dict(max_prune="many"), "max_prune"),
])
def test_parameters_the_run_cannot_use_fail_before_any_request(params, args, message):
    args = dict(dict(name="s") if "src" in args else dict(name="s", resources=[]), **args)
    with pytest.raises(RunFailed) as e:
        run_stack(params(**args))
    assert message in e.value.msg


def test_an_unexpected_error_says_what_failed_without_dumping_objects(params, monkeypatch):
    from ansible_collections.stacksync.k8s.plugins.module_utils.engine import manager

    def broken(self, resources):
        raise KeyError("spec")

    monkeypatch.setattr(manager.StackManager, "sync", broken)
    with pytest.raises(RunFailed) as e:
        run_stack(params(name="s", resources=manifests(unique("r-bug"), "a")))
    assert e.value.msg == "stack 's': unexpected error: 'spec'"
    assert "KeyError" in e.value.result["exception"] and e.value.result["api_requests"] is not None


# -- plans: emitted by a check, read back as an approved plan ------------------------------------------------------
def test_a_check_emits_its_plan_writes_it_whole_and_a_run_reads_it_back(params, tmp_path):
    ns, stack = unique("r-plan"), unique("s")
    run_stack(params(name=stack, resources=manifests(ns, "a", "b", "c")))
    path = tmp_path / "plan.json"
    warnings = []
    result = run_stack(params(name=stack, resources=manifests(ns, "a"), emit_plan=True, plan_file=str(path),
                              max_prune="1"), check_mode=True, warn=warnings.append)
    plan = result["plan"]
    assert json.loads(path.read_text()) == plan and sorted(plan["stacks"]) == [stack]
    assert any("more than max_prune allows" in w for w in warnings), warnings  # 2 deletions, 1 allowed
    assert list(tmp_path.glob(".plan-*")) == []  # written through a temporary file, renamed
    assert runner.read_plan(str(path)) == plan and runner.read_plan(plan) is plan
    # a real run without emit_plan returns no plan
    assert "plan" not in run_stack(params(name=stack, resources=manifests(ns, "a", "b", "c")))


def test_a_plan_that_cannot_be_read_or_written_fails_naming_the_file(tmp_path):
    with pytest.raises(RunFailed, match=r"approved_plan .*missing\.json"):
        runner.read_plan(str(tmp_path / "missing.json"))
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(RunFailed, match=r"approved_plan .*bad\.json"):
        runner.read_plan(str(tmp_path / "bad.json"))
    with pytest.raises(RunFailed, match=r"plan_file .*no-such-dir"):
        runner.write_plan(str(tmp_path / "no-such-dir" / "plan.json"), {"stacks": {}})


def _alive(cls):
    return [o for o in gc.get_objects() if type(o) is cls]


def test_a_run_leaves_no_desired_or_live_object_for_the_garbage_collector(params):
    """No reference cycle keeps a run's plan (every manifest and live object) alive when the run ends: it is freed by
    reference counting, not left to a collection of ~250,000 containers at 10,000 objects (the verbs share the run's
    context, not the manager's bound methods)."""
    stack, ns = unique("s-gc"), unique("r-gc")
    run_stack(params(name=stack, resources=manifests(ns, "a", "b")))
    gc.collect()
    gc.disable()
    try:
        run_stack(params(name=stack, resources=manifests(ns, "a", "b")))
        assert _alive(Desired) == [] and _alive(Snapshot) == []
    finally:
        gc.enable()


def test_runs_share_lists_only_with_the_same_connection(monkeypatch):
    monkeypatch.delenv("K8S_AUTH_API_KEY", raising=False)
    base = {"kubeconfig": "/k", "context": "a"}
    assert runner.connection_key(dict(base)) == runner.connection_key({"context": "a", "kubeconfig": "/k"})
    assert runner.connection_key(base) != runner.connection_key(dict(base, context="b"))
    assert runner.connection_key(base) != runner.connection_key(dict(base, impersonate_user="tenant-b"))
    before = runner.connection_key(base)
    monkeypatch.setenv("K8S_AUTH_API_KEY", "another token")  # the credentials the run would use from the environment
    assert runner.connection_key(base) != before
