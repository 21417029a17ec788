"""``wait`` fails fast on a stalled rollout (issue 19), on the simulator and on a real control plane.

A Deployment whose pods never become available (they select a node label no node has; the real
control plane in CI has no scheduler anyway) with ``progressDeadlineSeconds: 5``: the deployment
controller marks it ``Progressing=False`` / ``ProgressDeadlineExceeded`` after about 5 seconds, and the
sync must fail then, naming the object and the reason, instead of running into ``wait_timeout``.
"""

import time
import uuid

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.manager import StackError, StackManager

try:
    from .test_sync_helpers import client_fixture, localhost_play, module_task, run_play
except ImportError:  # rootdir-relative import (tests/integration is not a package)
    from test_sync_helpers import client_fixture, localhost_play, module_task, run_play

WAIT_TIMEOUT = 120  # far above the progress deadline: reaching it would mean wait did not fail fast
FAST = 60  # seconds: the deadline (5 s) plus the controller's and the poll loop's delays, with room for a loaded machine

PLAYBOOK = localhost_play(module_task("stack", {"resources": "{{ resources }}", "wait": True, "wait_timeout": "{{ wait_timeout }}"},
                                      name="sync and wait", ignore_errors=True))

NS_PREFIX = "ss-health"  # tests/conftest.py's ns fixture
client = client_fixture()


def stalling_deployment(name, deadline=5):
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": 1, "progressDeadlineSeconds": deadline, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"nodeSelector": {"stacksync.io/test-no-such-node": "true"},
                                           "containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10"}]}}}}


def test_stack_module_wait_fails_fast_on_progress_deadline_exceeded(tmp_path, kube, ns):
    variables = {"ns": ns, "stack": "health-" + uuid.uuid4().hex[:6], "wait_timeout": WAIT_TIMEOUT, "kc": kube.kubeconfig,
                 "resources": [stalling_deployment("stalled"), {"apiVersion": "v1", "kind": "ConfigMap",
                                                                "metadata": {"name": "fine"}, "data": {"a": "b"}}]}
    started = time.monotonic()
    r = run_play(tmp_path, PLAYBOOK, variables, timeout=WAIT_TIMEOUT + 60).result
    elapsed = time.monotonic() - started
    assert r.get("failed"), r
    assert f"Deployment.apps {ns}/stalled" in r["msg"] and "ProgressDeadlineExceeded" in r["msg"], r["msg"]
    assert "has timed out progressing" in r["msg"] and "timed out after" not in r["msg"]
    assert elapsed < FAST, f"wait took {elapsed:.1f}s: it ran into the timeout instead of failing fast"
    # what was applied stays applied (the failure is the rollout's, not the apply's)
    assert r["counts"]["created"] == 2


def test_stack_module_wait_covers_the_unchanged_objects_on_a_rerun(tmp_path, kube, ns):
    # kubernetes.core.k8s `wait: true` fails again on the retry; so must `stack`: a rerun with nothing to write, or
    # writing only another object, waits for the unchanged Deployment too and fails as the first run did
    deployment = stalling_deployment("stuck", deadline=600)  # never available, and no fast failure either
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fine"}, "data": {"a": "b"}}
    variables = {"ns": ns, "stack": "rewait-" + uuid.uuid4().hex[:6], "wait_timeout": 3, "kc": kube.kubeconfig,
                 "resources": [deployment, cm]}
    timed_out = f"timed out after 3s waiting for: Deployment.apps {ns}/stuck: Progressing (LessAvailable): Available: 0/1"
    first = run_play(tmp_path, PLAYBOOK, variables).result
    assert first.get("failed") and first["msg"].endswith(timed_out), first
    again = run_play(tmp_path, PLAYBOOK, variables).result
    assert again.get("failed") and again["msg"] == first["msg"], again
    assert not again["changed"] and again["counts"]["unchanged"] == 2 and again["counts"]["created"] == 0, again
    # the unchanged Deployment the wait found not ready is listed, with its health; the healthy ConfigMap is counted
    assert [(o["name"], o["action"], o["health"]) for o in again["applied"]] == [("stuck", "unchanged", "Progressing")]
    variables["resources"] = [deployment, dict(cm, data={"a": "changed"})]  # a change elsewhere in the stack
    changed = run_play(tmp_path, PLAYBOOK, variables).result
    assert changed.get("failed") and changed["msg"].endswith(timed_out), changed
    assert sorted((o["name"], o["action"]) for o in changed["applied"]) == [("fine", "configured"), ("stuck", "unchanged")]


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


def test_wait_waits_for_a_replication_controller_s_pods(kube, client, ns):
    # a ReplicationController is read like a ReplicaSet: not ready until its pods are (here they never run)
    rc = {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "legacy"},
          "spec": {"replicas": 1, "selector": {"app": "legacy"}, "template": {
              "metadata": {"labels": {"app": "legacy"}}, "spec": dict(stalling_deployment("x")["spec"]["template"]["spec"])}}}
    m = StackManager(client, "health-" + uuid.uuid4().hex[:6], record_namespace=ns, namespace=ns, poll_interval=0.5,
                     wait=True, wait_timeout=5)
    with pytest.raises(StackError) as e:
        m.sync([rc])
    assert f"ReplicationController {ns}/legacy: Progressing (LessAvailable): Available: 0/1" in str(e.value), str(e.value)


def test_stack_info_reports_sync_and_health_per_object(kube, ns):
    """stack_info's report: sync (Argo CD's vocabulary) and health per object, with counts."""
    from tests.reliability import helpers as H

    client = H.client_for(kube.kubeconfig)
    stack = "report-" + uuid.uuid4().hex[:6]
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": ns}, "data": {"a": "1"}}
    gone = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "gone", "namespace": ns}, "data": {"a": "1"}}
    StackManager(client, stack, record_namespace=ns, namespace=ns).sync([cm, gone])
    new = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "new", "namespace": ns}, "data": {"a": "1"}}
    report = StackManager(client, stack, record_namespace=ns, namespace=ns).inspect([cm, new])
    by_name = dict((o["name"], o) for o in report["objects"])
    assert by_name["settings"]["sync"] == "Synced" and by_name["settings"]["health"] == "Healthy"
    assert by_name["gone"]["sync"] == "Extraneous" and by_name["new"]["sync"] == "Missing"
    assert by_name["new"]["health"] == "Missing"
    assert report["counts"]["sync"] == {"Synced": 1, "Extraneous": 1, "Missing": 1}
    client.close()
