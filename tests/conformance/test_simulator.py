"""Simulator-only features: instances, CLI, fault injection, request log, deny rules, performance."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import urllib3

from tests.kubesim import Simulator
from tests.kubesim.client import KubeHTTP

pytestmark = pytest.mark.sim_only
REPO = Path(__file__).resolve().parents[2]


def test_start_is_fast_and_instances_are_independent(kubesim_factory):
    started = time.monotonic()
    a = kubesim_factory()
    b = kubesim_factory(tls=True)
    assert time.monotonic() - started < 1.0
    assert a.server != b.server and b.server.startswith("https://")
    a.http.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "only-a"}})
    assert a.http.get("/api/v1/namespaces/only-a")[0] == 200
    assert b.http.get("/api/v1/namespaces/only-a")[0] == 404


def test_kubeconfig_contents(kubesim):
    import yaml
    cfg = yaml.safe_load(Path(kubesim.kubeconfig).read_text())
    ctx = cfg["contexts"][0]
    assert cfg["current-context"] == ctx["name"] and ctx["context"]["namespace"] == "default"
    assert cfg["users"][0]["user"]["token"] == kubesim.token
    assert cfg["clusters"][0]["cluster"]["server"] == kubesim.server


def test_cli_serves_until_killed(tmp_path):
    kubeconfig = tmp_path / "kc"
    proc = subprocess.Popen([sys.executable, "-m", "tests.kubesim", "--port", "0", "--kubeconfig", str(kubeconfig), "--tls",
                             "--latency-ms", "1"], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 10
        while not kubeconfig.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        client = KubeHTTP.from_kubeconfig(str(kubeconfig), str(tmp_path / "ca.crt"))
        status, body, _ = client.get("/api/v1/namespaces/default")
        assert status == 200 and body["metadata"]["name"] == "default"
    finally:
        proc.terminate()
        assert proc.wait(10) == 0


def test_request_log_and_counters(kubesim):
    sim = kubesim.sim
    sim.reset_counters()
    kubesim.http.get("/api/v1/namespaces/default/configmaps")
    kubesim.http.get("/apis/apps/v1/deployments")
    kubesim.http.apply("/api/v1/namespaces/default/configmaps/x", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}})
    assert sim.count("list", "configmaps") == 1 and sim.count("list", "apps/deployments") == 1 and sim.count("patch") == 1
    last = sim.requests[-1]
    assert last["verb"] == "patch" and last["code"] == 201 and last["field_manager"] == "stacksync" and last["name"] == "x"
    assert "configmaps" in sim.dump() and any(o["metadata"]["name"] == "x" for o in sim.dump()["configmaps"])
    sim.reset_counters()
    assert sim.count() == 0 and not sim.requests


def test_scripted_faults(kubesim):
    sim, api = kubesim.sim, kubesim.http
    sim.fail_next(1, code=429, retry_after=3)
    status, body, headers = api.get("/api/v1/namespaces")
    assert status == 429 and body["reason"] == "TooManyRequests" and headers["Retry-After"] == "3"
    sim.fail_next(1, code=500, verb="create")
    assert api.get("/api/v1/namespaces")[0] == 200
    status, body, _ = api.request("POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": "f1"}})
    assert status == 500 and body["reason"] == "InternalError"
    sim.fail_next(1, drop=True)
    with pytest.raises(urllib3.exceptions.ProtocolError):
        api.get("/api/v1/namespaces")
    assert api.get("/version")[0] == 200


def test_seeded_fault_rates_are_reproducible(kubesim):
    def run():
        kubesim.sim.configure_faults(error_rate={"get": 0.3}, throttle_rate=0.1, throttle_burst=2, seed=42)
        return [kubesim.http.get("/api/v1/namespaces/default")[0] for _ in range(40)]
    first, second = run(), run()
    kubesim.sim.configure_faults()
    assert first == second and {200, 500, 429} <= set(first)


def test_latency_spikes(kubesim):
    kubesim.sim.configure_faults(latency_ms=20)
    started = time.monotonic()
    kubesim.http.get("/api/v1/namespaces/default")
    kubesim.sim.configure_faults()
    assert time.monotonic() - started >= 0.02


def test_restricted_user_deny_rules(kubesim):
    restricted = KubeHTTP.from_kubeconfig(kubesim.sim.restricted_kubeconfig_path)
    status, body, _ = restricted.get("/api/v1/secrets")
    assert status == 403 and body["message"].startswith('secrets is forbidden: User "restricted" cannot list resource "secrets"')
    assert restricted.get("/api/v1/namespaces/default/secrets")[0] == 200
    status, _, _ = restricted.request("DELETE", "/apis/rbac.authorization.k8s.io/v1/clusterroles/view")
    assert status == 403
    token = kubesim.sim.add_user("ops", admin=True, deny=[{"verbs": ["create"], "resources": ["configmaps"], "namespaces": ["default"]}])
    status, body, _ = kubesim.http.request("POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": "d"}}, token=token)
    assert (status == 403 and body["details"] == {"kind": "configmaps", "name": None}) or status == 403
    assert kubesim.http.request("POST", "/api/v1/namespaces/kube-public/configmaps", {"metadata": {"name": "d"}}, token=token)[0] == 201


def test_crd_establish_delay_and_unserved_group(kubesim_factory):
    sim = kubesim_factory(crd_establish_delay=0.5)
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "things.d.example.com"},
           "spec": {"group": "d.example.com", "scope": "Cluster", "names": {"kind": "Thing", "plural": "things"},
                    "versions": [{"name": "v1", "served": True, "storage": True}]}}
    sim.http.apply("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/things.d.example.com", crd)
    status, body, headers = sim.http.get("/apis/d.example.com/v1/things")
    assert status == 404 and body == "404 page not found\n" and headers["Content-Type"].startswith("text/plain")
    sim.sim.settle()
    assert sim.http.get("/apis/d.example.com/v1/things")[0] == 200


def test_immortal_namespaces_and_pods_not_ready(kubesim_factory):
    sim = kubesim_factory(pods_ready=False)
    status, body, _ = sim.http.request("DELETE", "/api/v1/namespaces/default")
    assert status == 403 and body["reason"] == "Forbidden"
    dep = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "w", "namespace": "default"},
           "spec": {"replicas": 2, "selector": {"matchLabels": {"a": "w"}},
                    "template": {"metadata": {"labels": {"a": "w"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}
    _, body, _ = sim.http.apply("/apis/apps/v1/namespaces/default/deployments/w", dep)
    got = sim.http.get("/apis/apps/v1/namespaces/default/deployments/w")[1]
    assert got["status"]["replicas"] == 2 and "availableReplicas" not in got["status"]
    pods = sim.http.get("/api/v1/namespaces/default/pods", labelSelector="a=w")[1]["items"]
    assert len(pods) == 2 and {p["status"]["phase"] for p in pods} == {"Pending"}


def test_get_throughput(kubesim):
    http = urllib3.PoolManager(maxsize=1, ca_certs=kubesim.ca_cert, cert_reqs="CERT_REQUIRED" if kubesim.ca_cert else "CERT_NONE")
    url = f"{kubesim.server}/api/v1/namespaces/default"
    headers = {"Authorization": f"Bearer {kubesim.token}"}
    http.request("GET", url, headers=headers)
    n = 1000
    started = time.monotonic()
    for _ in range(n):
        assert http.request("GET", url, headers=headers).status == 200
    rate = n / (time.monotonic() - started)
    print(f"kubesim: {rate:.0f} GET/s over one keep-alive TLS connection")
    floor = float(os.environ.get("KUBESIM_MIN_RATE", "300"))
    assert rate >= floor, rate


def test_json_answers_are_compact(kubesim):
    _, body, headers = kubesim.http.get("/api/v1/namespaces/default")
    assert headers["Content-Type"] == "application/json" and json.loads(json.dumps(body)) == body


def test_in_process_api_context_manager():
    with Simulator() as sim:
        client = KubeHTTP(sim.url, sim.token)
        assert client.get("/api/v1/namespaces/default")[0] == 200
    assert sim.httpd is None


def test_concurrent_writers(kubesim):
    import threading

    errors = []

    def worker(n):
        client = KubeHTTP(kubesim.server, kubesim.token, kubesim.ca_cert)
        for i in range(40):
            status, _, _ = client.apply(f"/api/v1/namespaces/default/configmaps/w{n}-{i % 5}",
                                        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"w{n}-{i % 5}"}, "data": {"i": str(i)}})
            if status not in (200, 201):
                errors.append(status)
    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    _, body, _ = kubesim.http.get("/api/v1/namespaces/default/configmaps")
    names = {i["metadata"]["name"] for i in body["items"] if i["metadata"]["name"].startswith("w")}
    assert len(names) == 20 and len({i["metadata"]["resourceVersion"] for i in body["items"]}) == len(body["items"])
