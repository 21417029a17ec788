"""vocabulary.py: option names in messages, as the caller (module, role) names them."""

import threading
from pathlib import Path

import pytest
import yaml
from ansible_collections.stacksync.k8s.plugins.module_utils.base import vocabulary as V
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.plan import prune_limit
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.auth import AuthError, read_kubeconfigs
from ansible_collections.stacksync.k8s.plugins.module_utils.sources_spec import ARGUMENT_SPEC as SOURCES_SPEC

ROLE = Path(__file__).resolve().parents[5] / "roles" / "sync"


def test_an_option_is_its_own_name_unless_a_run_speaks_other_words():
    assert V.option("allow_empty") == "allow_empty"
    with V.spoken({"allow_empty": "stacksync_allow_empty"}):
        assert V.option("allow_empty") == "stacksync_allow_empty" and V.option("wait") == "wait"
        with V.spoken(None):
            assert V.option("allow_empty") == "allow_empty"
        assert V.option("allow_empty") == "stacksync_allow_empty"
    assert V.option("allow_empty") == "allow_empty"


def test_the_words_hold_for_the_threads_of_a_run():
    seen = []
    with V.spoken({"max_prune": "stacksync_max_prune"}):
        t = threading.Thread(target=lambda: seen.append(V.option("max_prune")))
        t.start()
        t.join()
    assert seen == ["stacksync_max_prune"]


def test_the_role_names_its_variables_and_the_module_its_options():
    assert V.task_option("role", "kubeconfig") == "stacksync_kubeconfig"
    assert V.task_option("role_repo", "max_prune") == "stacksync_max_prune"
    assert V.task_option("module", "kubeconfig") == "kubeconfig"
    assert V.task_option("role", "username") == "username"  # the role has no variable for it
    assert V.source_option("role", 2, "kubeconfig") == "stacksync_sources[2].kubeconfig"
    assert V.source_option("module", 0, "context") == "sources[0].context"
    assert V.source_option("role_repo", 0, "path") == "stacksync_path"


def test_a_stack_run_names_what_its_source_set_as_the_source_s():
    names = V.stack_names("role", 1, {"name": "web", "kubeconfig": "/k", "max_prune": "3"}, ["kubeconfig", "repo"])
    assert names["kubeconfig"] == "stacksync_sources[1].kubeconfig" and names["max_prune"] == "stacksync_max_prune"
    assert names["host"] == "stacksync_host"  # an option not given is named as the role would set it
    assert V.stack_names("module", 0, {"name": "web", "kubeconfig": "/k"}, ["repo"]) == {}
    assert V.stack_names("module", 2, {"name": "web", "kubeconfig": "/k"}, ["kubeconfig", "repo"]) == {
        "kubeconfig": "sources[2].kubeconfig"}


def test_every_role_option_is_a_variable_of_the_role_and_a_sources_option():
    spec = yaml.safe_load((ROLE / "meta" / "argument_specs.yml").read_text())
    variables = set(spec["argument_specs"]["main"]["options"])
    for name in V.ROLE_OPTIONS:
        assert "stacksync_" + name in variables, name
        assert name in SOURCES_SPEC, name
    # and every variable of the role that passes a sources option is in the list
    tasks = (ROLE / "tasks" / "main.yml").read_text()
    for name in SOURCES_SPEC:
        if "stacksync_" + name in variables and f"stacksync_{name} " in tasks.replace("|", " "):
            assert name in V.ROLE_OPTIONS, name


def test_engine_messages_speak_the_callers_words(tmp_path):
    with V.spoken({"kubeconfig": "stacksync_kubeconfig", "max_prune": "stacksync_max_prune"}):
        with pytest.raises(AuthError, match=r"not found: .*/nowhere \(check stacksync_kubeconfig\)"):
            read_kubeconfigs([str(tmp_path / "nowhere")], explicit=True)
        with pytest.raises(ValueError, match=r"^stacksync_max_prune must be"):
            prune_limit("lots", 10)
        with pytest.raises(AuthError, match=r"set stacksync_kubeconfig \(or host and api_key\)"):
            read_kubeconfigs([str(tmp_path / "none")], explicit=False)
