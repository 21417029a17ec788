"""info.py: stack_info's argument spec (the render options of stack, documented alike) and its run."""

import pytest
import yaml
from ansible_collections.stacksync.k8s.plugins.module_utils import info
from ansible_collections.stacksync.k8s.plugins.module_utils.runner import RunFailed
from ansible_collections.stacksync.k8s.plugins.plugin_utils.stack_action import validate_args


def test_stack_info_takes_the_render_options_of_stack_documented_alike():
    from ansible_collections.stacksync.k8s.plugins.doc_fragments import render
    from ansible_collections.stacksync.k8s.plugins.module_utils.runner import ARGUMENT_SPEC as STACK_SPEC
    from ansible_collections.stacksync.k8s.plugins.modules import stack, stack_info

    assert info.ARGUMENT_SPEC["render"] == STACK_SPEC["render"] and info.ARGUMENT_SPEC["src"] == STACK_SPEC["src"]
    # both document `render` with one doc fragment, which documents every suboption the spec has
    for module in (stack, stack_info):
        doc = yaml.safe_load(module.DOCUMENTATION)
        assert "stacksync.k8s.render" in doc["extends_documentation_fragment"] and "render" not in doc["options"]
    documented = yaml.safe_load(render.ModuleDocFragment.DOCUMENTATION)["options"]["render"]["suboptions"]
    assert set(documented) == set(STACK_SPEC["render"]["options"])
    # every other option stack_info shares with stack has stack's default
    for name, spec in info.ARGUMENT_SPEC.items():
        if name != "resources" and name in STACK_SPEC:
            assert spec.get("default") == STACK_SPEC[name].get("default"), name


def test_the_module_alone_refuses_src():
    params = validate_args(dict(name="s", src="/srv/apps"), info.ARGUMENT_SPEC, info.MUTUALLY_EXCLUSIVE).validated_parameters
    with pytest.raises(RunFailed) as e:
        info.run_stack_info(params)
    assert e.value.msg == info.SRC_WITHOUT_ACTION


def test_a_connection_problem_fails_the_run_with_its_message(tmp_path):
    params = validate_args(dict(name="s", kubeconfig=str(tmp_path / "missing")), info.ARGUMENT_SPEC,
                           info.MUTUALLY_EXCLUSIVE).validated_parameters
    with pytest.raises(RunFailed) as e:
        info.run_stack_info(params)
    assert "missing" in e.value.msg


def test_stack_and_stack_info_document_the_discovery_cache_with_one_fragment():
    from ansible_collections.stacksync.k8s.plugins.doc_fragments import discovery_cache
    from ansible_collections.stacksync.k8s.plugins.module_utils.runner import ARGUMENT_SPEC as STACK_SPEC
    from ansible_collections.stacksync.k8s.plugins.modules import stack, stack_info

    documented = yaml.safe_load(discovery_cache.ModuleDocFragment.DOCUMENTATION)["options"]
    for module, spec in ((stack, STACK_SPEC), (stack_info, info.ARGUMENT_SPEC)):
        doc = yaml.safe_load(module.DOCUMENTATION)
        assert "stacksync.k8s.discovery_cache" in doc["extends_documentation_fragment"]
        assert not set(documented) & set(doc["options"])
        for name, option in documented.items():
            assert (option["type"], option["default"]) == (spec[name]["type"], spec[name]["default"]), name


# -- the run, on the simulator ---------------------------------------------------------------------------
from .simengine import client_of, configmap, namespace, sync, unique  # noqa: E402


@pytest.fixture
def info_params(kubesim, tmp_path):
    def make(**args):
        args.setdefault("kubeconfig", kubesim.kubeconfig)
        args.setdefault("discovery_cache_dir", str(tmp_path / "cache"))
        validated = validate_args(args, info.ARGUMENT_SPEC, info.MUTUALLY_EXCLUSIVE)
        assert not validated.error_messages, validated.error_messages
        return validated.validated_parameters
    return make


def test_the_report_compares_the_stack_with_a_desired_set_and_changes_nothing(kubesim, info_params):
    ns, stack = unique("i-run"), unique("s")
    client = client_of(kubesim)
    try:
        sync(client, stack, [namespace(ns), configmap("a", ns), configmap("b", ns)], commit="c1")
    finally:
        client.close()
    start = len(kubesim.requests)
    warnings = []
    report = info.run_stack_info(info_params(name=stack, resources=[namespace(ns), configmap("a", ns)]),
                                 warn=warnings.append)
    assert [r["method"] for r in list(kubesim.requests)[start:] if r["method"] != "GET"] == []
    assert report["changed"] is False and report["commit"] == "c1" and warnings == []
    assert dict((o["name"], o["status"]) for o in report["objects"]) == {ns: "in_sync", "a": "in_sync", "b": "would_prune"}
    bare = info.run_stack_info(info_params(name=stack))
    assert set(o["status"] for o in bare["objects"]) == {"present"} and "warnings" not in bare


def test_a_run_that_cannot_be_reported_fails_with_the_engines_message(info_params):
    with pytest.raises(RunFailed, match="not a valid label value"):
        info.run_stack_info(info_params(name="not/a/label"))
    with pytest.raises(RunFailed, match="invalid manifests"):
        info.run_stack_info(info_params(name="s", resources=[{"kind": "ConfigMap"}]))


def test_an_unexpected_error_is_reported_with_its_traceback(info_params, monkeypatch):
    from ansible_collections.stacksync.k8s.plugins.module_utils.engine import manager

    monkeypatch.setattr(manager.StackManager, "inspect", lambda self, resources: {}["objects"])
    with pytest.raises(RunFailed) as e:
        info.run_stack_info(info_params(name="s"))
    assert e.value.msg == "stack 's': unexpected error: 'objects'" and "KeyError" in e.value.result["exception"]
