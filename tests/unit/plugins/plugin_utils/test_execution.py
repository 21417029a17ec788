"""Unit tests: where a stacksync.k8s.stack task runs (controller process or module process)."""

import json
import os
import sys

import pytest
from ansible_collections.stacksync.k8s.plugins.plugin_utils.execution import (
    describe_origin,
    effective_interpreter,
    interpreter_reason,
    same_python,
    task_reasons,
)

PY = sys.executable


def module_process_reasons(transport, interpreter=None, controller_python=None, interpreter_how=None, **task):
    """Every reason the task needs a module process: the task's (:func:`task_reasons`), then the interpreter's."""
    reason = interpreter_reason(interpreter, controller_python, interpreter_how)
    return task_reasons(transport, **task) + ([reason] if reason else [])


def test_the_implicit_localhost_runs_in_the_controller_process():
    # implicit localhost: connection local, ansible_python_interpreter = sys.executable
    assert module_process_reasons("local", interpreter=PY, controller_python=PY) == []


@pytest.mark.parametrize("kwargs, reason", [
    (dict(transport="ssh"), "connection ssh is not local"),
    (dict(become=True), "become is on"),
    (dict(async_val=30), "async task"),
    (dict(delegate_to="bastion"), "delegated to bastion"),
    (dict(environment=[{"K8S_AUTH_CONTEXT": "prod"}]), "the task sets environment variables"),
    (dict(enabled=False), "stacksync_in_process is false"),
    (dict(interpreter=None), "ansible_python_interpreter (not set: interpreter discovery) is not the controller's"),
    (dict(interpreter="/usr/bin/env python3"), "ansible_python_interpreter /usr/bin/env python3 is not the controller's"),
    (dict(interpreter="auto_silent"), "ansible_python_interpreter auto_silent is not"),
])
def test_anything_that_needs_a_separate_process_runs_the_module(kwargs, reason):
    args = dict(transport="local", interpreter=PY, controller_python=PY)
    args.update(kwargs)
    transport = args.pop("transport")
    reasons = module_process_reasons(transport, **args)
    assert len(reasons) == 1 and reasons[0].startswith(reason), reasons


def test_an_empty_environment_list_is_no_environment():
    # Task.environment is a list of mappings; play-level `environment: {}` gives [{}]
    assert module_process_reasons("local", environment=[{}], interpreter=PY, controller_python=PY) == []
    assert module_process_reasons("local", environment=[], interpreter=PY, controller_python=PY) == []


def test_same_python_is_the_same_virtualenv_not_only_the_same_binary(tmp_path):
    base = tmp_path / "base" / "python3.11"
    base.parent.mkdir()
    base.write_text("")
    venv_bin = tmp_path / "venv" / "bin"
    venv_bin.mkdir(parents=True)
    for name in ("python", "python3"):
        os.symlink(base, venv_bin / name)
    other_bin = tmp_path / "other" / "bin"
    other_bin.mkdir(parents=True)
    os.symlink(base, other_bin / "python3")

    linked_venv = tmp_path / "linked-venv"
    os.symlink(venv_bin.parent, linked_venv)

    own = str(venv_bin / "python3")
    assert same_python(own, own)
    assert same_python(str(linked_venv / "bin" / "python"), own)  # the same virtualenv through a link
    assert same_python(str(venv_bin / "python"), own)  # python and python3 of one virtualenv
    assert same_python(str(venv_bin / ".." / "bin" / "python3"), own)
    # another virtualenv (or the base interpreter) links to the same file but has other packages
    assert not same_python(str(other_bin / "python3"), own)
    assert not same_python(str(base), own)
    assert not same_python("python3", own)  # relative: resolved on the target's PATH
    assert not same_python("", own) and not same_python(None, own) and not same_python(own, None)


# --- the effective interpreter, as ansible-core resolves it (module_common._get_shebang) ---------------------------


@pytest.fixture
def config_manager(tmp_path, monkeypatch):
    """ansible-core's own config manager reading a given ansible.cfg (or none) and the environment."""
    from ansible.config.manager import ConfigManager

    monkeypatch.delenv("ANSIBLE_PYTHON_INTERPRETER", raising=False)

    def make(interpreter_python=None):
        cfg = tmp_path / "ansible.cfg"
        cfg.write_text("[defaults]\n" + (f"interpreter_python = {interpreter_python}\n" if interpreter_python else ""))
        return ConfigManager(conf_file=str(cfg))

    return make


def resolve(manager, variables, discovered=None):
    value, origin = manager.get_config_value_and_origin("INTERPRETER_PYTHON", variables=variables)
    return effective_interpreter(value, origin, discovered=discovered)


def test_a_host_variable_sets_the_interpreter_and_wins_over_environment_and_config(config_manager, monkeypatch):
    monkeypatch.setenv("ANSIBLE_PYTHON_INTERPRETER", "/env/python3")
    manager = config_manager("/cfg/python3")
    assert resolve(manager, {"ansible_python_interpreter": PY}) == (PY, "variable ansible_python_interpreter")


def test_the_environment_sets_the_interpreter_over_ansible_cfg(config_manager, monkeypatch):
    monkeypatch.setenv("ANSIBLE_PYTHON_INTERPRETER", PY)
    assert resolve(config_manager("/cfg/python3"), {}) == (PY, "environment variable ANSIBLE_PYTHON_INTERPRETER")


def test_ansible_cfg_sets_the_interpreter(config_manager, tmp_path):
    assert resolve(config_manager(PY), {}) == (PY, "interpreter_python in %s" % (tmp_path / "ansible.cfg"))


@pytest.mark.parametrize("mode", ["auto", "auto_silent", "auto_legacy", "auto_legacy_silent", " auto_silent "])
def test_a_discovery_mode_means_the_discovered_interpreter(config_manager, mode):
    manager = config_manager()
    variables = {"ansible_python_interpreter": mode}
    assert resolve(manager, variables, discovered=PY) == (
        PY, f"interpreter discovery ({mode.strip()}, from variable ansible_python_interpreter)")
    # not discovered yet for this host: the caller runs discovery
    assert resolve(manager, variables) == (
        None, f"interpreter discovery ({mode.strip()}, from variable ansible_python_interpreter)")


def test_nothing_set_is_discovery_by_default(config_manager):
    assert resolve(config_manager(), {}) == (None, "interpreter discovery (auto, from the default)")
    assert resolve(config_manager(), {}, discovered="/usr/bin/python3") == (
        "/usr/bin/python3", "interpreter discovery (auto, from the default)")
    assert effective_interpreter("", "var: ansible_python_interpreter") == (
        None, "interpreter discovery (auto, from variable ansible_python_interpreter)")


def test_a_connection_that_runs_modules_on_the_controller_uses_the_playbook_python():
    # network connections (_remote_is_local): ansible-core ignores INTERPRETER_PYTHON and uses ansible_playbook_python
    assert effective_interpreter("/usr/bin/python3", "default", remote_is_local=True, playbook_python=PY)[0] == PY


@pytest.mark.parametrize("origin, words", [
    ("var: ansible_python_interpreter", "variable ansible_python_interpreter"),
    ("env: ANSIBLE_PYTHON_INTERPRETER", "environment variable ANSIBLE_PYTHON_INTERPRETER"),
    ("/etc/ansible/ansible.cfg", "interpreter_python in /etc/ansible/ansible.cfg"),
    ("default", "the default"),
    (None, "the default"),
])
def test_describe_origin(origin, words):
    assert describe_origin(origin) == words


def test_the_reason_names_the_interpreter_and_how_it_was_set():
    how = "environment variable ANSIBLE_PYTHON_INTERPRETER"
    assert interpreter_reason(PY, PY, how) is None
    assert interpreter_reason("/usr/bin/python3", PY, how) == (
        f"the Python interpreter /usr/bin/python3 ({how}) is not the controller's Python {PY}")
    reasons = module_process_reasons("local", interpreter="/usr/bin/python3", controller_python=PY, interpreter_how=how)
    assert reasons == [interpreter_reason("/usr/bin/python3", PY, how)]
    assert module_process_reasons("local", interpreter=PY, controller_python=PY, interpreter_how=how) == []


def test_task_reasons_ignore_the_interpreter():
    assert task_reasons("local") == []
    assert task_reasons("ssh", become=True) == ["connection ssh is not local", "become is on"]


# --- the module process's arguments: validated once without copying the manifests; manifests read from a file -----

MANIFESTS = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"c{i}"}} for i in range(3)]
OTHERS = [{"stack": "b", "source": "b-src", "namespace": "", "earlier": True, "objects": [["v1", "ConfigMap", "", "c"]]}]


@pytest.mark.parametrize("args", [
    dict(name="s", resources=MANIFESTS),
    dict(name="s", resources=[*MANIFESTS, '{"apiVersion": "v1", "kind": "ConfigMap"}']),  # a JSON string: converted
    dict(name="s", resources=None),
    dict(name="s"),
    dict(name="s", resources=MANIFESTS, src="/tmp"),  # mutually exclusive
    dict(name="s", resources=MANIFESTS, resources_file="/tmp/x.json"),
    dict(name="s", resources=MANIFESTS, bogus=1),
    dict(resources=MANIFESTS),  # name missing
    dict(name="s", resources=MANIFESTS, concurrency="many"),
    dict(name="s", resources=MANIFESTS, other_sources=OTHERS),
    dict(name="s", other_sources=[*OTHERS, "not a mapping"]),
    dict(name="s", other_sources=OTHERS, bogus=1),
])
def test_validate_is_the_argument_spec_validator_without_the_copy(args):
    from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
    from ansible_collections.stacksync.k8s.plugins.module_utils.runner import ARGUMENT_SPEC, MUTUALLY_EXCLUSIVE
    from ansible_collections.stacksync.k8s.plugins.plugin_utils.stack_action import STACK

    expected = ArgumentSpecValidator(ARGUMENT_SPEC, mutually_exclusive=MUTUALLY_EXCLUSIVE).validate(args)
    got, _error = STACK.validate(args)
    assert got.error_messages == expected.error_messages
    if not expected.error_messages:
        assert got.validated_parameters == expected.validated_parameters


def test_validate_keeps_the_manifests_as_they_are():
    from ansible_collections.stacksync.k8s.plugins.plugin_utils.stack_action import STACK

    assert STACK.validate(dict(name="s", resources=MANIFESTS))[0].validated_parameters["resources"] is MANIFESTS
    assert STACK.validate(dict(name="s", other_sources=OTHERS))[0].validated_parameters["other_sources"] is OTHERS


def test_read_resources_file(tmp_path):
    from ansible_collections.stacksync.k8s.plugins.module_utils.runner import RunFailed, read_resources_file

    path = tmp_path / "m.json"
    path.write_text(json.dumps(MANIFESTS))
    assert read_resources_file(str(path)) == MANIFESTS
    for content, message in (('{"kind": "ConfigMap"}', "not a JSON list of mappings"),
                             ('["ConfigMap"]', "not a JSON list of mappings"),
                             ("[{", "Expecting")):
        path.write_text(content)
        with pytest.raises(RunFailed) as e:
            read_resources_file(str(path))
        assert e.value.msg.startswith(f"resources_file {path}: ") and message in e.value.msg
    with pytest.raises(RunFailed, match="No such file"):
        read_resources_file(str(tmp_path / "missing.json"))


@pytest.mark.parametrize("version, legacy", [("2.16.19", True), ("2.20.10", True), ("2.21.5", False),
                                             ("2.21.0.dev0", False), ("3.0.0", False), ("devel", False)])
def test_the_auto_legacy_modes_ask_for_discovery_until_ansible_core_removed_them(version, legacy):
    from ansible_collections.stacksync.k8s.plugins.plugin_utils.execution import discovery_modes

    modes = discovery_modes(version)
    assert {"auto", "auto_silent"} <= set(modes) and ("auto_legacy" in modes) is legacy
    interpreter, how = effective_interpreter("auto_legacy", "var: ansible_python_interpreter", discovered=PY, modes=modes)
    # ansible-core 2.21 takes the value as an interpreter's path (a module process, as before: not the controller's)
    assert (interpreter, how.startswith("interpreter discovery")) == ((PY, True) if legacy else ("auto_legacy", False))
