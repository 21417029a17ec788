"""The real `stacksync.k8s.stack` module through ansible-playbook (localhost, -c local)."""

import base64
import contextlib
import json
import os
import subprocess
import sys
import uuid

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.auth import build_client
from ansible_collections.stacksync.k8s.plugins.module_utils.client import ApiError

PLAYBOOK = """
- hosts: localhost
  gather_facts: false
  tasks:
    - name: sync
      stacksync.k8s.stack:
        name: "{{ stack }}"
        kubeconfig: "{{ kc }}"
        record_namespace: "{{ record_ns }}"
        namespace: "{{ ns }}"
        commit: "{{ commit | default(omit) }}"
        resources: "{{ resources }}"
      register: r
    - name: save result
      check_mode: false
      diff: false
      ansible.builtin.copy:
        content: "{{ r | to_json }}"
        dest: "{{ out }}"
"""


@pytest.fixture(scope="module")
def client(kube):
    return build_client({"kubeconfig": kube.kubeconfig})[0]


@pytest.fixture
def ns(client):
    name = "ss-mod-" + uuid.uuid4().hex[:6]
    client.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    yield name
    with contextlib.suppress(ApiError):
        client.delete("/api/v1/namespaces/" + name)


INFO_PLAYBOOK = """
- hosts: localhost
  gather_facts: false
  tasks:
    - name: info
      stacksync.k8s.stack_info:
        name: "{{ stack }}"
        kubeconfig: "{{ kc }}"
        record_namespace: "{{ record_ns }}"
        namespace: "{{ ns }}"
        resources: "{{ resources }}"
      register: r
    - name: save result
      ansible.builtin.copy:
        content: "{{ r | to_json }}"
        dest: "{{ out }}"
"""


def run(tmp_path, kube, args, variables, verbose=False, playbook=PLAYBOOK):
    play = tmp_path / "play.yml"
    play.write_text(playbook)
    out = tmp_path / "result.json"
    extra = tmp_path / "vars.json"
    extra.write_text(json.dumps(dict(variables, kc=kube.kubeconfig, out=str(out))))
    cmd = [
        os.path.join(os.path.dirname(sys.executable), "ansible-playbook"),
        "-i",
        "localhost,",
        "-c",
        "local",
        "-e",
        "ansible_python_interpreter=" + sys.executable,
        "-e",
        "@" + str(extra),
        str(play),
        *args,
    ]
    if verbose:
        cmd.append("-vvv")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads(out.read_text()), proc.stdout + proc.stderr


def test_module_sync_noop_check_and_no_secret_in_output(tmp_path, kube, client, ns):
    stack = "mod-" + uuid.uuid4().hex[:6]
    value = "pa55-" + uuid.uuid4().hex
    resources = [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}},
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "stringData": {"pw": value}},
    ]
    variables = dict(stack=stack, ns=ns, record_ns=ns, resources=resources, commit="c0ffee")
    r, log = run(tmp_path, kube, ["--diff"], variables, verbose=True)
    assert r["changed"] and r["counts"]["created"] == 2
    for needle in (value, base64.b64encode(value.encode()).decode()):
        assert needle not in log and needle not in json.dumps(r)

    r, log = run(tmp_path, kube, [], variables)
    assert not r["changed"] and r["counts"]["unchanged"] == 2
    assert set(r["api_requests"]) == {"GET"}, r["api_requests"]

    variables["resources"] = [dict(resources[0], data={"a": "2"})]
    r, log = run(tmp_path, kube, ["--check", "--diff"], variables, verbose=True)
    assert r["changed"] and r["counts"]["configured"] == 1 and r["counts"]["pruned"] == 1
    assert value not in log
    assert client.get(f"/api/v1/namespaces/{ns}/configmaps/c")["data"]["a"] == "1"
    assert client.get_or_none(f"/api/v1/namespaces/{ns}/secrets/s") is not None

    r, log = run(tmp_path, kube, [], variables)
    assert r["changed"] and [p["name"] for p in r["pruned"]] == ["s"]
    assert client.get_or_none(f"/api/v1/namespaces/{ns}/secrets/s") is None


def test_stack_info_module(tmp_path, kube, ns):
    stack = "inf-" + uuid.uuid4().hex[:6]
    resources = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}}]
    variables = dict(stack=stack, ns=ns, record_ns=ns, resources=resources, commit="beef")
    run(tmp_path, kube, [], variables)
    variables["resources"] = [dict(resources[0], data={"a": "2"})]
    r, _ = run(tmp_path, kube, [], variables, playbook=INFO_PLAYBOOK)
    assert not r["changed"] and r["commit"] == "beef"
    assert [(o["name"], o["status"]) for o in r["objects"]] == [("c", "out_of_date")]


CACHE_PLAYBOOK = """
- hosts: localhost
  gather_facts: false
  tasks:
    - name: sync
      stacksync.k8s.stack:
        name: "{{ stack }}"
        kubeconfig: "{{ kc }}"
        record_namespace: "{{ record_ns }}"
        namespace: "{{ ns }}"
        discovery_cache_dir: "{{ cache }}"
        resources: "{{ resources }}"
      register: r
      ignore_errors: true
    - name: save result
      ansible.builtin.copy:
        content: "{{ r | to_json }}"
        dest: "{{ out }}"
"""


def _cached_configmaps(cache):
    (path,) = list(cache.glob("stacksync-discovery-*.json"))
    doc = json.loads(path.read_text())
    return path, doc, [r for r in doc["resources"] if r[0] == "" and r[2] == "ConfigMap"]


def test_discovery_cache_is_shared_between_runs_refreshed_on_a_miss_and_dropped_after_a_failure(tmp_path, kube, ns):
    cache = tmp_path / "cache"
    variables = dict(stack="cache-" + uuid.uuid4().hex[:6], ns=ns, record_ns=ns, cache=str(cache), resources=[
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}}])
    r, _log = run(tmp_path, kube, [], variables, playbook=CACHE_PLAYBOOK)
    assert r["changed"] and not r.get("failed"), r
    path, doc, configmaps = _cached_configmaps(cache)
    assert len(configmaps) == 1 and configmaps[0][3] == "configmaps" and configmaps[0][4] is True

    # a miss (the kind is not in the cache) reads discovery again and rewrites the cache
    doc["resources"] = [r for r in doc["resources"] if r[2] != "ConfigMap"]
    path.write_text(json.dumps(doc))
    variables["resources"][0]["data"] = {"a": "2"}
    r, _log = run(tmp_path, kube, [], variables, playbook=CACHE_PLAYBOOK)
    assert r["changed"] and r["counts"]["configured"] == 1 and not r.get("failed"), r
    assert len(_cached_configmaps(cache)[2]) == 1

    # a stale entry is used as it is (no discovery request); the failure it causes drops the cache
    path, doc, configmaps = _cached_configmaps(cache)
    configmaps[0][3] = "configmapz"
    path.write_text(json.dumps(doc))
    variables["resources"][0]["data"] = {"a": "3"}
    r, _log = run(tmp_path, kube, [], variables, playbook=CACHE_PLAYBOOK)
    assert r["failed"] and "could not find the requested resource" in r["msg"], r
    assert not list(cache.glob("stacksync-discovery-*.json"))
    r, _log = run(tmp_path, kube, [], variables, playbook=CACHE_PLAYBOOK)
    assert r["changed"] and not r.get("failed"), r
    assert _cached_configmaps(cache)[2][0][3] == "configmaps"
