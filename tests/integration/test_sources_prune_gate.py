"""The prune gate in a sources run (role ``stacksync.k8s.sync``): each stack prunes on its own, nothing another source
of the run declares is deleted, two sources declaring one object do not flip it, and a stack belongs to its source.
Simulator and real server (issues 28, 29 and 31)."""

import contextlib
import uuid

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.base.naming import source_id
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.auth import build_client
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.client import MERGE_PATCH

try:
    from .test_sync_helpers import GitRepo, configmap, namespace, run_playbook, sim_of, write_inventory
except ImportError:  # rootdir-relative import (tests/integration is not a package)
    from test_sync_helpers import GitRepo, configmap, namespace, run_playbook, sim_of, write_inventory

WRITES = ("POST", "PUT", "PATCH", "DELETE")
STACK_LABEL = "stacksync.io/stack"


@pytest.fixture
def env(tmp_path, kube):
    suffix = uuid.uuid4().hex[:6]
    client = build_client({"kubeconfig": kube.kubeconfig})[0]
    inventory = write_inventory(tmp_path / "hosts.yml", {"the-cluster": {"stacksync_kubeconfig": kube.kubeconfig}})
    ns = f"gate-{suffix}"
    client.create("/api/v1/namespaces", namespace(ns))
    yield tmp_path, suffix, client, inventory, ns
    with contextlib.suppress(Exception):
        client.delete(f"/api/v1/namespaces/{ns}")


def sync(tmp_path, inventory, sources, *args):
    return run_playbook(inventory, {"stacksync_sources": sources, "stacksync_cache_dir": str(tmp_path / "cache"),
                                    "stacksync_discovery_cache_dir": ""}, *args)


def live(client, ns, name):
    """``(uid, stack label, data)`` of ConfigMap ``ns/name``, or None."""
    obj = client.get_or_none(f"/api/v1/namespaces/{ns}/configmaps/{name}")
    if obj is None:
        return None
    return obj["metadata"]["uid"], (obj["metadata"].get("labels") or {}).get(STACK_LABEL), obj.get("data")


def unserved(ns):
    """A manifest of a kind the API server does not serve: the stack's run fails before it writes anything."""
    return {"apiVersion": "nowhere.example.com/v1", "kind": "Nothing", "metadata": {"name": "bad", "namespace": ns}}


def writes(kube, since):
    return [r for r in list(sim_of(kube).requests)[since:] if r["method"] in WRITES
            and "dryRun" not in (r.get("query") or {})]


@pytest.mark.parametrize("how", ["its apply fails", "a stack it depends on fails"])
def test_an_object_moving_to_a_source_that_fails_is_not_deleted_and_the_others_still_prune(env, kube, how):
    tmp_path, suffix, client, inventory, ns = env
    a, b, c, dep = (GitRepo(tmp_path / n) for n in ("a", "b", "c", "dep"))
    a.write("moving.yaml", configmap("moving", ns, {"k": "1"}))
    a.write("a-old.yaml", configmap("a-old", ns, {"k": "1"}))
    a.write("a.yaml", configmap("a", ns, {"k": "1"}))
    b.write("b-old.yaml", configmap("b-old", ns, {"k": "1"}))
    c.write("c-old.yaml", configmap("c-old", ns, {"k": "1"}))
    c.write("c.yaml", configmap("c", ns, {"k": "1"}))
    dep.write("dep.yaml", configmap("dep", ns, {"k": "1"}))
    for repo in (a, b, c, dep):
        repo.commit("first")
    names = {n: f"{n}-{suffix}" for n in ("a", "b", "c", "dep")}
    sources = [{"repo": dep.url, "stack": names["dep"]}, {"repo": a.url, "stack": names["a"]},
               {"repo": b.url, "stack": names["b"], "depends_on": [names["dep"]]}, {"repo": c.url, "stack": names["c"]}]
    assert sync(tmp_path, inventory, sources).rc == 0
    moving = live(client, ns, "moving")
    # one commit each: `moving` leaves a for b, every stack drops its `old`, and b (or what it depends on) breaks
    a.remove("moving.yaml")
    a.remove("a-old.yaml")
    b.write("moving.yaml", configmap("moving", ns, {"k": "1"}))
    b.remove("b-old.yaml")
    c.remove("c-old.yaml")
    broken = b if how == "its apply fails" else dep
    broken.write("bad.yaml", unserved(ns))
    for repo in {a, b, c, broken}:
        repo.commit("move")
    for args in (("--check", "--diff"), ()):
        run = sync(tmp_path, inventory, sources, *args)
        assert run.rc != 0, run.tail()
        # nothing another source of the run declares is deleted: released to it, the same object
        assert live(client, ns, "moving")[:2] == (moving[0], names["a"] if args else names["b"]), run.tail()
        assert f"pruned ConfigMap {ns}/moving" not in run.stdout, run.stdout
        rows = run.summary_rows()["the-cluster"]
        assert rows[names["b"]]["result"].startswith(("FAILED", "not applied")), rows
        assert live(client, ns, "b-old") is not None  # b's own apply did not succeed: b prunes nothing
    # and the stacks that did not fail pruned (before: one failure held back every stack's prune)
    assert live(client, ns, "a-old") is None and live(client, ns, "c-old") is None, run.tail()
    assert rows[names["a"]]["pruned"] == "1" and rows[names["c"]]["pruned"] == "1", rows
    assert live(client, ns, "c") is not None and live(client, ns, "dep") is not None
    # fixed: b applies what it was handed and prunes what it dropped
    broken.remove("bad.yaml")
    broken.commit("fixed")
    run = sync(tmp_path, inventory, sources)
    assert run.rc == 0, run.tail()
    assert live(client, ns, "moving") == (moving[0], names["b"], {"k": "1"})
    assert live(client, ns, "b-old") is None


def test_two_sources_declaring_one_object_do_not_flip_it(env, kube):
    tmp_path, suffix, client, inventory, ns = env
    a, b = GitRepo(tmp_path / "a"), GitRepo(tmp_path / "b")
    a.write("both.yaml", configmap("both", ns, {"from": "a"}))
    b.write("both.yaml", configmap("both", ns, {"from": "b"}))
    b.write("own.yaml", configmap("own", ns, {"k": "1"}))
    a.commit("a")
    b.commit("b")
    sa, sb = f"a-{suffix}", f"b-{suffix}"
    sources = [{"repo": a.url, "stack": sa}, {"repo": b.url, "stack": sb}]
    src_a, src_b = source_id(a.url, "."), source_id(b.url, ".")
    first = None
    for i in range(3):  # before: a applied it, then b, every run (configured twice, each run changed)
        run = sync(tmp_path, inventory, sources)
        assert run.rc == 0, run.tail()
        state = live(client, ns, "both")
        first = first or state
        assert state == (first[0], sa, {"from": "a"}), run.tail()  # the first source's, and it stays
        # the run says so, naming both sources
        assert f"declared by two sources of this run, {src_a} (stack '{sa}') and {src_b} (stack '{sb}')" in \
            run.output, run.tail()
        if i:
            assert run.recap["the-cluster"]["changed"] == 0, run.tail()
            rows = run.summary_rows()["the-cluster"]
            assert rows[sa]["configured"] == rows[sb]["configured"] == "0", rows
    # b comes first in the list now: the object stays with a, which owns it
    run = sync(tmp_path, inventory, list(reversed(sources)))
    assert run.rc == 0 and live(client, ns, "both") == first and run.recap["the-cluster"]["changed"] == 0, run.tail()
    # a cannot be rendered: whether it still declares the object is unknown, so b does not take it over
    (a.path / "broken.yaml").write_text("data: {a: [unclosed\n")
    a.commit("broken")
    run = sync(tmp_path, inventory, sources)
    assert run.rc != 0 and live(client, ns, "both") == first, run.tail()
    assert "whose source could not be rendered in this run" in run.output, run.tail()
    a.remove("broken.yaml")
    a.commit("fixed")
    # the move between repos, in the order that never deletes: a stops declaring it, then b has it
    a.remove("both.yaml")
    a.write("other.yaml", configmap("other", ns, {"k": "1"}))
    a.commit("drop both")
    check = sync(tmp_path, inventory, sources, "--check")
    assert check.rc == 0 and f"pruned ConfigMap {ns}/both" not in check.stdout, check.stdout
    run = sync(tmp_path, inventory, sources)
    assert run.rc == 0, run.tail()
    assert live(client, ns, "both") == (first[0], sb, {"from": "b"}), run.tail()
    assert "declared by two sources" not in run.output


def record_of(client, stack):
    return client.get(f"/api/v1/namespaces/kube-system/configmaps/stacksync-{stack}")["data"]


def test_a_stack_belongs_to_its_source(env, kube):
    tmp_path, suffix, client, inventory, ns = env
    a, b = GitRepo(tmp_path / "a"), GitRepo(tmp_path / "b")
    a.write("x.yaml", configmap("cm-a", ns, {"from": "a"}))
    a.commit("a")
    b.write("y.yaml", configmap("cm-b", ns, {"from": "b"}))
    b.commit("b")
    stack = f"apps-{suffix}"
    assert sync(tmp_path, inventory, [{"repo": a.url, "stack": stack}]).rc == 0
    assert record_of(client, stack)["source"] == source_id(a.url, ".")
    x = live(client, ns, "cm-a")
    mark = len(sim_of(kube).requests) if kube.is_sim else 0
    # another source with the same stack name: refused, nothing written (b's object would be applied, a's pruned)
    for args in (("--check",), ()):
        run = sync(tmp_path, inventory, [{"repo": b.url, "stack": stack}], *args)
        assert run.rc != 0, run.tail()
        assert f"stack {stack}: FAILED after" in run.stdout and f"the stack belongs to source '{source_id(a.url, '.')}'" in run.stdout, run.tail()
        assert f"this run is from source '{source_id(b.url, '.')}'" in run.stdout
        assert f"kubectl -n kube-system patch configmap stacksync-{stack}" in run.stdout
    assert live(client, ns, "cm-a") == x and live(client, ns, "cm-b") is None
    if kube.is_sim:
        assert [r for r in writes(kube, mark) if "/leases/" not in r["path"]] == []
    # the same repository spelled otherwise is the same source
    run = sync(tmp_path, inventory, [{"repo": a.url + "/", "stack": stack}])
    assert run.rc == 0, run.tail()
    # moved on purpose: the record's source removed, as the message says; the next run adopts the stack
    client.request("PATCH", f"/api/v1/namespaces/kube-system/configmaps/stacksync-{stack}",
                   body={"data": {"source": None}}, content_type=MERGE_PATCH)
    run = sync(tmp_path, inventory, [{"repo": b.url, "stack": stack}])
    assert run.rc == 0, run.tail()
    assert live(client, ns, "cm-a") is None and live(client, ns, "cm-b")[1] == stack
    assert record_of(client, stack)["source"] == source_id(b.url, ".")


def test_a_record_without_a_source_is_adopted_and_the_stack_module_alone_is_not_checked(env, kube):
    tmp_path, suffix, client, inventory, ns = env
    repo = GitRepo(tmp_path / "a")
    repo.write("x.yaml", configmap("cm-a", ns, {"k": "1"}))
    repo.commit("a")
    stack = f"old-{suffix}"
    # an older record (or the stack module without `source`): no source recorded
    play = tmp_path / "direct.yml"
    play.write_text(f"""
- hosts: the-cluster
  connection: local
  gather_facts: false
  tasks:
    - stacksync.k8s.stack:
        name: {stack}
        kubeconfig: "{{{{ stacksync_kubeconfig }}}}"
        resources: [{{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {{"name": "cm-a", "namespace": "{ns}"}},
                      "data": {{"k": "1"}}}}]
""")
    assert run_playbook(inventory, {}, playbook=play).rc == 0
    assert "source" not in record_of(client, stack)
    # a no-op run from a source adopts it
    run = sync(tmp_path, inventory, [{"repo": repo.url, "stack": stack}])
    assert run.rc == 0, run.tail()
    assert record_of(client, stack)["source"] == source_id(repo.url, ".")
    # the stack module without `source` is not checked, and leaves the recorded source as it is
    assert run_playbook(inventory, {}, playbook=play).rc == 0
    assert record_of(client, stack)["source"] == source_id(repo.url, ".")
