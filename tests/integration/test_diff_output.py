"""``--diff`` made for people (issue 17): created and pruned objects are summarised (their whole
body with ``-vv``), changed objects show their changed lines; Secret values never appear."""

import base64
import re

try:
    from .test_sync_helpers import run_play
except ImportError:  # rootdir-relative import (tests/integration is not a package)
    from test_sync_helpers import run_play

NS_PREFIX = "diffout"  # tests/conftest.py's ns fixture

PLAY = """
- hosts: localhost
  gather_facts: false
  tasks:
    - name: sync
      stacksync.k8s.stack:
        name: "{{ stack }}"
        kubeconfig: "{{ kubeconfig }}"
        namespace: "{{ ns }}"
        record_namespace: "{{ ns }}"
        resources: "{{ resources }}"
"""


def run(tmp_path, kube, variables, *args):
    return run_play(tmp_path, PLAY, dict(variables, kubeconfig=str(kube.kubeconfig)), *args, timeout=600,
                    env=dict(ANSIBLE_NOCOLOR="1", ANSIBLE_CALLBACK_RESULT_FORMAT="yaml")).stdout


def configmaps(ns, n, value="v"):
    return [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm-{i:04d}", "namespace": ns},
             "data": {"a": value, "b": "x" * 200, "c": "y" * 200}} for i in range(n)]


def test_a_thousand_object_check_diff_stays_under_two_thousand_lines(tmp_path, kube, ns):
    variables = dict(stack="diffout-" + ns, ns=ns, resources=configmaps(ns, 1000))
    out = run(tmp_path, kube, variables, "--check", "--diff")
    lines = out.splitlines()
    assert len(lines) < 2000, len(lines)
    assert "cm-0999" in out and "y" * 200 not in out  # every object named, no bodies


def test_changed_objects_show_their_changed_lines_and_vv_shows_whole_bodies(tmp_path, kube, ns):
    variables = dict(stack="diffout-" + ns, ns=ns, resources=configmaps(ns, 3))
    run(tmp_path, kube, variables)
    changed = dict(variables, resources=configmaps(ns, 3, value="changed") + configmaps(ns, 4)[3:])
    out = run(tmp_path, kube, changed, "--check", "--diff")
    lines = [" ".join(line.split()) for line in out.splitlines()]
    assert lines.count("- a: v") == 3 and lines.count("+ a: changed") == 3, out  # the changed line of each
    created = [x for x in lines if "cm-0003" in x]
    assert len(created) == 1 and re.fullmatch(rf"\+ ConfigMap {ns}/cm-0003 \(created, \d+ bytes\)", created[0]), created
    out = run(tmp_path, kube, changed, "--check", "--diff", "-vv")
    assert out.count("cm-0003") > 1 and "(created, " not in out  # -vv: the created object whole


def secret(ns, token):
    return [{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds", "namespace": ns},
             "stringData": {"user": "admin-" + ns, "token": token}}]


def test_a_changed_secret_value_shows_its_key_changed_never_its_value(tmp_path, kube, ns):
    old, new = "old-" + ns, "new-" + ns
    variables = dict(stack="diffout-" + ns, ns=ns, resources=secret(ns, old))
    run(tmp_path, kube, variables)
    changed = dict(variables, resources=secret(ns, new))
    for args in (("--check", "--diff"), ("--diff",)):
        out = run(tmp_path, kube, changed, *args)
        lines = [" ".join(line.split()) for line in out.splitlines()]
        # the changed key on both sides (it was marked alike on both, so the diff hid it); the unchanged key not at all
        assert "- token: <redacted, old value>" in lines and "+ token: <redacted, changed>" in lines, (args, out)
        assert not [x for x in lines if x.startswith(("- user:", "+ user:"))], (args, out)
        for value in (old, new, "admin-" + ns):
            assert value not in out and base64.b64encode(value.encode()).decode() not in out
