"""An aggregated API whose server does not answer is warned about, naming its group, once per task.

A `stacksync.k8s.stack` task (in the controller's process and as a module process) and a
`stacksync.k8s.stack_info` task through ansible-playbook, on the simulator and on a real
kube-apiserver (STACKSYNC_TEST_KUBECONFIG): an APIService whose Service has no endpoints makes
discovery of its group fail (a 503 and a Stale group in aggregated discovery on both). Each run
gets a fresh discovery cache: a cached discovery (10 minutes, like kubectl's) written before the
APIService broke does not know that its group fails.
"""

import contextlib
import sys
import time
import uuid

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.client import ApiError

try:
    from .test_sync_helpers import client_fixture, localhost_play, module_task, run_play
except ImportError:  # rootdir-relative import (tests/integration is not a package)
    from test_sync_helpers import client_fixture, localhost_play, module_task, run_play

APISERVICES = "/apis/apiregistration.k8s.io/v1/apiservices"

OPTIONS = {"discovery_cache_dir": "{{ cache }}", "resources": "{{ resources }}"}
TASKS = {"stack": module_task("stack", OPTIONS), "stack_info": module_task("stack_info", OPTIONS, name="info")}

client = client_fixture()


@pytest.fixture
def broken_group(client):
    """A namespace and an APIService of a new group whose Service selects no pod; the group's discovery fails."""
    ns = "ss-agg-" + uuid.uuid4().hex[:6]
    group = f"g{uuid.uuid4().hex[:6]}.example.com"
    client.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    client.create(f"/api/v1/namespaces/{ns}/services", {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "backend", "namespace": ns},
        "spec": {"selector": {"app": "nothing-runs-here"}, "ports": [{"port": 443, "targetPort": 8443}]}})
    client.create(APISERVICES, {
        "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {"name": "v1beta1." + group},
        "spec": {"group": group, "version": "v1beta1", "groupPriorityMinimum": 100, "versionPriority": 100,
                 "insecureSkipTLSVerify": True, "service": {"name": "backend", "namespace": ns, "port": 443}}})
    deadline = time.monotonic() + 30
    while client.request("GET", f"/apis/{group}/v1beta1", raw=True)[0] != 503:  # the aggregator found no endpoints
        assert time.monotonic() < deadline, "the APIService never became unavailable"
        time.sleep(0.5)
    try:
        yield ns, group
    finally:
        for path in (APISERVICES + "/v1beta1." + group, "/api/v1/namespaces/" + ns):
            with contextlib.suppress(ApiError):
                client.delete(path)


def run(tmp_path, kube, module, variables):
    """Run one task of ``module`` through ansible-playbook: (its registered result, the output)."""
    played = run_play(tmp_path, localhost_play(TASKS[module]), dict(variables, kc=kube.kubeconfig), interpreter=False,
                      env=dict(ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0", COLUMNS="400"))
    return played.result, played.log


@pytest.mark.parametrize("module,in_process", [("stack", True), ("stack", False), ("stack_info", True)],
                         ids=["stack-controller-process", "stack-module-process", "stack_info"])
def test_a_run_warns_once_naming_the_group(tmp_path, kube, broken_group, module, in_process):
    ns, group = broken_group
    variables = dict(stack="agg-" + uuid.uuid4().hex[:6], ns=ns, cache=str(tmp_path / "cache"), stacksync_in_process=in_process,
                     ansible_python_interpreter=sys.executable,
                     resources=[{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}}])
    result, log = run(tmp_path, kube, module, variables)
    want = f"API {group}/v1beta1 is unavailable (its aggregated API server did not answer discovery)"
    assert [w for w in result.get("warnings") or [] if group in w] == [w for w in result["warnings"] if w.startswith(want)]
    assert len([w for w in result["warnings"] if group in w]) == 1, result["warnings"]
    assert log.count(group) == 1 and "[WARNING]: " + want in log, log  # printed once, nothing else names it
    if module == "stack":
        assert result["changed"] and result["counts"]["created"] == 1  # the rest of the run goes on
    else:
        assert [(o["kind"], o["name"], o["status"]) for o in result["objects"]] == [("ConfigMap", "c", "missing")]
