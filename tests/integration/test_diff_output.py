"""``--diff`` made for people (issue 17): created and pruned objects are summarised (their whole
body with ``-vv``), changed objects show their changed lines; Secret values never appear."""

import json
import os
import re
import subprocess
import sys
import uuid

import pytest

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
    (tmp_path / "play.yml").write_text(PLAY)
    (tmp_path / "vars.json").write_text(json.dumps(dict(variables, kubeconfig=str(kube.kubeconfig))))
    cmd = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", "localhost,", "-c", "local",
           "-e", "ansible_python_interpreter=" + sys.executable, "-e", "@" + str(tmp_path / "vars.json"),
           str(tmp_path / "play.yml"), *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_CALLBACK_RESULT_FORMAT="yaml"))
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    return proc.stdout


def configmaps(ns, n, value="v"):
    return [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm-{i:04d}", "namespace": ns},
             "data": {"a": value, "b": "x" * 200, "c": "y" * 200}} for i in range(n)]


@pytest.fixture
def ns(kube):
    from tests.reliability import helpers as H

    client = H.client_for(kube.kubeconfig)
    name = "diffout-" + uuid.uuid4().hex[:6]
    H.create_namespace(client, name)
    yield name
    H.delete_quietly(client, "/api/v1/namespaces/" + name)
    client.close()


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
