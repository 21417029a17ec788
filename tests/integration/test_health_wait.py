"""``wait`` fails fast on a stalled rollout (issue 19), on the simulator and on a real control plane.

A Deployment whose pods never become available (they select a node label no node has; the real
control plane in CI has no scheduler anyway) with ``progressDeadlineSeconds: 5``: the deployment
controller marks it ``Progressing=False`` / ``ProgressDeadlineExceeded`` after about 5 seconds, and the
sync must fail then, naming the object and the reason, instead of running into ``wait_timeout``.
"""

import contextlib
import json
import os
import subprocess
import sys
import time
import uuid

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.auth import build_client
from ansible_collections.stacksync.k8s.plugins.module_utils.client import ApiError
from ansible_collections.stacksync.k8s.plugins.module_utils.manager import StackError, StackManager

WAIT_TIMEOUT = 120  # far above the progress deadline: reaching it would mean wait did not fail fast
FAST = 60  # seconds: the deadline (5 s) plus the controller's and the poll loop's delays, with room for a loaded machine

PLAYBOOK = """
- hosts: localhost
  gather_facts: false
  tasks:
    - name: sync and wait
      stacksync.k8s.stack:
        name: "{{ stack }}"
        kubeconfig: "{{ kc }}"
        record_namespace: "{{ ns }}"
        namespace: "{{ ns }}"
        resources: "{{ resources }}"
        wait: true
        wait_timeout: "{{ wait_timeout }}"
      register: r
      ignore_errors: true
    - name: save result
      ansible.builtin.copy:
        content: "{{ r | to_json }}"
        dest: "{{ out }}"
"""


@pytest.fixture(scope="module")
def client(kube):
    return build_client({"kubeconfig": kube.kubeconfig})[0]


@pytest.fixture
def ns(client):
    name = "ss-health-" + uuid.uuid4().hex[:6]
    client.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    yield name
    with contextlib.suppress(ApiError):
        client.delete("/api/v1/namespaces/" + name)


def stalling_deployment(name, deadline=5):
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": 1, "progressDeadlineSeconds": deadline, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"nodeSelector": {"stacksync.io/test-no-such-node": "true"},
                                           "containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10"}]}}}}


def test_stack_module_wait_fails_fast_on_progress_deadline_exceeded(tmp_path, kube, ns):
    play = tmp_path / "play.yml"
    play.write_text(PLAYBOOK)
    out = tmp_path / "result.json"
    extra = tmp_path / "vars.json"
    extra.write_text(json.dumps({"kc": kube.kubeconfig, "out": str(out), "ns": ns, "stack": "health-" + uuid.uuid4().hex[:6],
                                 "wait_timeout": WAIT_TIMEOUT,
                                 "resources": [stalling_deployment("stalled"), {"apiVersion": "v1", "kind": "ConfigMap",
                                                                                "metadata": {"name": "fine"}, "data": {"a": "b"}}]}))
    cmd = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", "localhost,", "-c", "local",
           "-e", "ansible_python_interpreter=" + sys.executable, "-e", "@" + str(extra), str(play)]
    started = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=WAIT_TIMEOUT + 60)
    elapsed = time.monotonic() - started
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    r = json.loads(out.read_text())
    assert r.get("failed"), r
    assert f"Deployment.apps {ns}/stalled" in r["msg"] and "ProgressDeadlineExceeded" in r["msg"], r["msg"]
    assert "has timed out progressing" in r["msg"] and "timed out after" not in r["msg"]
    assert elapsed < FAST, f"wait took {elapsed:.1f}s: it ran into the timeout instead of failing fast"
    # what was applied stays applied (the failure is the rollout's, not the apply's)
    assert r["counts"]["created"] == 2


def test_manager_wait_fails_fast_and_names_the_object(kube, client, ns):
    m = StackManager(client, "health-" + uuid.uuid4().hex[:6], record_namespace=ns, namespace=ns, poll_interval=0.5,
                     wait=True, wait_timeout=WAIT_TIMEOUT)
    started = time.monotonic()
    with pytest.raises(StackError) as e:
        m.sync([stalling_deployment("stalled", deadline=2)])
    elapsed = time.monotonic() - started
    assert str(e.value).count("ProgressDeadlineExceeded") == 1, str(e.value)
    assert f"Deployment.apps {ns}/stalled: ProgressDeadlineExceeded: ReplicaSet " in str(e.value)
    assert elapsed < FAST, elapsed
