"""A plan you can approve, through role ``stacksync.k8s.sync`` (issue 29): the check's plan pins each source's
commit, each stack is held to its own part of the plan (a stale one fails alone, before any write of it), and plans
are per host. Simulator and real server."""

import contextlib
import json
import uuid

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.auth import build_client

try:
    from .test_sync_helpers import GitRepo, configmap, namespace, run_playbook, write_inventory
except ImportError:  # rootdir-relative import (tests/integration is not a package)
    from test_sync_helpers import GitRepo, configmap, namespace, run_playbook, write_inventory


@pytest.fixture
def env(tmp_path, kube):
    suffix = uuid.uuid4().hex[:6]
    client = build_client({"kubeconfig": kube.kubeconfig})[0]
    ns = f"plan-{suffix}"
    client.create("/api/v1/namespaces", namespace(ns))
    yield tmp_path, suffix, client, ns
    with contextlib.suppress(Exception):
        client.delete(f"/api/v1/namespaces/{ns}")


def sync(tmp_path, inventory, sources, *args, **variables):
    return run_playbook(inventory, dict({"stacksync_sources": sources, "stacksync_cache_dir": str(tmp_path / "cache"),
                                         "stacksync_discovery_cache_dir": ""}, **variables), *args)


def live(client, ns, name):
    obj = client.get_or_none(f"/api/v1/namespaces/{ns}/configmaps/{name}")
    return obj and (obj["metadata"]["uid"], obj.get("data"))


def test_each_stack_is_held_to_its_part_of_the_plan_and_a_stale_one_fails_alone(env, kube):
    tmp_path, suffix, client, ns = env
    inventory = write_inventory(tmp_path / "hosts.yml", {"c1": {"stacksync_kubeconfig": kube.kubeconfig}})
    a, b = GitRepo(tmp_path / "a"), GitRepo(tmp_path / "b")
    for name in ("a-keep", "a-old", "a-other"):
        a.write(f"{name}.yaml", configmap(name, ns, {"k": "1"}))
    for name in ("b-keep", "b-old"):
        b.write(f"{name}.yaml", configmap(name, ns, {"k": "1"}))
    a.commit("1"), b.commit("1")
    sources = [{"repo": a.url, "stack": f"a-{suffix}"}, {"repo": b.url, "stack": f"b-{suffix}"}]
    assert sync(tmp_path, inventory, sources).rc == 0
    a.write("a-keep.yaml", configmap("a-keep", ns, {"k": "2"}))
    a.remove("a-old.yaml")
    b.remove("b-old.yaml")
    a.commit("2"), b.commit("2")
    plan_file = tmp_path / "plan.json"
    r = sync(tmp_path, inventory, sources, "--check", stacksync_emit_plan=True, stacksync_plan_file=str(plan_file))
    assert r.rc == 0, r.tail()
    plan = json.loads(plan_file.read_text())
    assert sorted(plan["stacks"]) == sorted(s["stack"] for s in sources) and plan["host"] == "c1"
    assert live(client, ns, "a-old") and live(client, ns, "b-old")  # a check writes nothing
    # a-old is deleted and created again (another object) before the approved run
    before = live(client, ns, "a-keep")
    old = client.get(f"/api/v1/namespaces/{ns}/configmaps/a-old")["metadata"]
    client.delete(f"/api/v1/namespaces/{ns}/configmaps/a-old")
    client.create(f"/api/v1/namespaces/{ns}/configmaps", dict(configmap("a-old", ns, {"k": "1"}), metadata=dict(
        (k, old[k]) for k in ("name", "namespace", "labels", "annotations"))))
    r = sync(tmp_path, inventory, sources, stacksync_approved_plan=str(plan_file))
    assert r.rc != 0
    rows = r.summary_rows()["c1"]
    assert rows[f"a-{suffix}"]["result"].startswith("FAILED") and rows[f"b-{suffix}"]["result"] == "ok", r.tail()
    assert "the approved plan does not match what this run would do, so nothing was written" in r.output
    # nothing of a was written (its change not applied, nothing deleted); b pruned what the plan approved
    assert live(client, ns, "a-keep") == before and live(client, ns, "a-old") and live(client, ns, "b-old") is None
    assert rows[f"b-{suffix}"]["pruned"] == "1" and live(client, ns, "b-keep")


def test_the_plans_commit_is_synced_when_git_moved(env, kube):
    tmp_path, suffix, client, ns = env
    inventory = write_inventory(tmp_path / "hosts.yml", {"c1": {"stacksync_kubeconfig": kube.kubeconfig}})
    repo = GitRepo(tmp_path / "repo")
    for name in ("one", "two", "three"):
        repo.write(f"{name}.yaml", configmap(name, ns, {"k": "1"}))
    repo.commit("1")
    sources = [{"repo": repo.url, "version": "main", "stack": f"moving-{suffix}"}]
    assert sync(tmp_path, inventory, sources).rc == 0
    repo.remove("one.yaml")
    planned = repo.commit("2")
    plan_file = tmp_path / "plan.json"
    assert sync(tmp_path, inventory, sources, "--check", stacksync_plan_file=str(plan_file)).rc == 0
    assert json.loads(plan_file.read_text())["stacks"][f"moving-{suffix}"]["commit"] == planned
    # git moves on after the check: two leaves too, three changes
    repo.remove("two.yaml")
    repo.write("three.yaml", configmap("three", ns, {"k": "2"}))
    moved = repo.commit("3")
    r = sync(tmp_path, inventory, sources, stacksync_approved_plan=str(plan_file))
    assert r.rc == 0, r.tail()
    assert f"version main now resolves to {moved[:12]}; the approved plan's commit {planned[:12]} is synced" in r.output
    assert r.summary_rows()["c1"][f"moving-{suffix}"]["commit"] == planned[:12]
    assert live(client, ns, "one") is None and live(client, ns, "two") and live(client, ns, "three")[1] == {"k": "1"}


def test_plans_are_per_host_and_a_host_without_one_is_refused(env, kube):
    tmp_path, suffix, client, ns = env
    hosts = dict((h, {"stacksync_kubeconfig": kube.kubeconfig, "stacksync_sources": [
        {"repo": str(tmp_path / h), "stack": f"{h}-{suffix}"}]}) for h in ("c1", "c2"))
    inventory = write_inventory(tmp_path / "hosts.yml", hosts)
    for h in hosts:
        repo = GitRepo(tmp_path / h)
        repo.write("x.yaml", configmap(f"{h}-x", ns, {"k": "1"}))
        repo.write("y.yaml", configmap(f"{h}-y", ns, {"k": "1"}))
        repo.commit("1")
    base = {"stacksync_cache_dir": str(tmp_path / "cache"), "stacksync_discovery_cache_dir": ""}
    assert run_playbook(inventory, base).rc == 0
    for h in hosts:
        GitRepo(tmp_path / h).remove("y.yaml")
        GitRepo(tmp_path / h).commit("2")
    plan_file = tmp_path / "c1.json"
    r = run_playbook(inventory, dict(base, stacksync_plan_file=str(plan_file)), "--check", "--limit", "c1")
    assert r.rc == 0, r.tail()
    # what AWX passes from a check's artifacts: the plans of the hosts it ran for
    r = run_playbook(inventory, dict(base, stacksync_approved_plan={"c1": json.loads(plan_file.read_text())}))
    assert r.rc != 0 and r.recap["c1"]["failed"] == 0 and r.recap["c2"]["failed"] == 1, r.tail()
    assert "the approved plan has no plan for host c2 (it has plans for c1): nothing was done on it" in r.output
    assert live(client, ns, "c1-y") is None and live(client, ns, "c2-y")
