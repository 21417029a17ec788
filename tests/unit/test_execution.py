"""Unit tests: where a stacksync.k8s.stack task runs (controller process or module process)."""

import os
import sys

import pytest
from ansible_collections.stacksync.k8s.plugins.plugin_utils.execution import module_process_reasons, same_python

PY = sys.executable


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
