"""Acceptance of playbook ``stacksync.k8s.sync`` (issue 8): two simulator clusters x two git sources.

The tests of this module run in order against the same two clusters and repositories, each step
building on the previous one: first sync, no-op, change, removal -> prune, an object moving between
sources, check mode (no writes), one cluster unreachable.
"""

import re

import pytest
import yaml
from ansible_collections.stacksync.k8s.plugins.module_utils.base.naming import stack_name
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.auth import build_client

from tests.kubesim.pytest_plugin import sim_target
from tests.kubesim.simulator import Simulator

try:
    from .test_sync_helpers import GitRepo, configmap, kubeconfig_of, namespace, request_log, run_playbook, write_inventory
except ImportError:  # rootdir-relative import (tests/integration is not a package)
    from test_sync_helpers import GitRepo, configmap, kubeconfig_of, namespace, request_log, run_playbook, write_inventory

CLUSTERS = ("cluster-a", "cluster-b")
WRITE_METHODS = {"POST", "PUT", "PATCH", "DELETE"}

B1_TEMPLATE = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: b1
  namespace: beta
data:
  greeting: "{{ greeting }}"
  cluster: "{{ inventory_hostname }}"
"""


def deployment(name, ns, replicas):
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": ns},
        "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels},
                              "spec": {"containers": [{"name": name, "image": "registry.k8s.io/pause:3.9"}]}}},
    }


def requests_of(handle):
    """Requests the simulator served so far: (method, path, query dict), from its request log."""
    return [(r["method"], r["path"], r.get("query") or {}) for r in request_log(handle)]


def writes_since(handle, mark):
    """Mutating requests after ``mark`` (an index into the request log), dry runs excluded."""
    return [r for r in requests_of(handle)[mark:] if r[0] in WRITE_METHODS and "dryRun" not in r[2]]


class Env:
    """Two clusters, two sources, an inventory; shared by the ordered tests below."""

    def __init__(self, tmp, factory):
        self.tmp = tmp
        self.clusters = {name: factory() for name in CLUSTERS}
        self.clients = {name: build_client({"kubeconfig": kubeconfig_of(h)})[0] for name, h in self.clusters.items()}
        self.platform = GitRepo(tmp / "platform")
        self.apps = GitRepo(tmp / "apps")
        self.platform_stack = "platform"
        self.apps_stack = stack_name(self.apps.url, "deploy")  # default name: derived from the URL
        self.inventory = write_inventory(
            tmp / "clusters.yml", {name: {"stacksync_kubeconfig": kubeconfig_of(h)} for name, h in self.clusters.items()})
        self.extra_vars = {
            "stacksync_cache_dir": str(tmp / "cache"),
            "stacksync_sources": [
                {"repo": self.platform.url, "version": "main", "path": "manifests", "stack": self.platform_stack},
                {"repo": self.apps.url, "version": "main", "path": "deploy", "vars": {"greeting": "hello"}},
            ],
        }
        self.steps = []

    def sync(self, *args, inventory=None):
        return run_playbook(inventory or self.inventory, self.extra_vars, *args)

    def get(self, cluster, path):
        return self.clients[cluster].get_or_none(path)

    def configmap(self, cluster, ns, name):
        return self.get(cluster, f"/api/v1/namespaces/{ns}/configmaps/{name}")


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    # Like the kubesim_factory fixture, but module-scoped: the ordered steps share the two clusters.
    sims = []

    def factory():
        sims.append(Simulator().start())
        return sim_target(sims[-1])

    tmp = tmp_path_factory.mktemp("sync-multi")
    try:
        e = Env(tmp, factory)
        yield e
    finally:
        for sim in sims:
            sim.stop()


@pytest.fixture(scope="module")
def env_repos(env):
    e = env
    e.platform.write("manifests/namespace.yaml", namespace("alpha"))
    e.platform.write("manifests/a1.yaml", configmap("a1", "alpha", {"v": "1"}))
    e.platform.write("manifests/a2.yaml", configmap("a2", "alpha", {"v": "1"}))
    e.platform.write("manifests/mover.yaml", configmap("mover", "alpha", {"moving": "yes"}))
    e.platform.write("manifests/clusterrole.yaml", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "alpha-reader"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]})
    e.platform.write("README.md", "not a manifest: outside manifests/\n")
    e.platform.commit("platform: initial")
    e.apps.write("deploy/namespace.yaml", namespace("beta"))
    e.apps.write("deploy/b1.yaml.j2", B1_TEMPLATE)
    e.apps.write("deploy/web.yaml", deployment("web", "beta", 1))
    e.apps.commit("apps: initial")
    return e


def step(env, name, *needs):
    """Skip a step when a step it builds on failed (the module's tests share state)."""
    missing = [n for n in needs if n not in env.steps]
    if missing:
        pytest.skip("needs the earlier step(s) " + ", ".join(missing))
    return name


def assert_ok(run, *hosts):
    assert run.rc == 0, run.tail()
    for host in hosts or CLUSTERS:
        assert run.recap[host]["failed"] == 0 and run.recap[host]["unreachable"] == 0, run.tail()


def counts(row):
    """A summary row's commit, created, configured, unchanged, pruned and skipped counts, and result."""
    return (row["commit"], *(int(row[k]) for k in ("created", "configured", "unchanged", "pruned", "skipped")),
            row["result"])


def test_first_sync_creates_everything_on_both_clusters(env_repos):
    env = env_repos
    run = env.sync()
    assert_ok(run)
    platform_sha = env.platform.git("rev-parse", "HEAD")
    summaries = run.summaries()
    for cluster in CLUSTERS:
        assert run.recap[cluster]["changed"] > 0
        for ns, name in (("alpha", "a1"), ("alpha", "a2"), ("alpha", "mover")):
            cm = env.configmap(cluster, ns, name)
            assert cm is not None, (cluster, ns, name)
            assert cm["metadata"]["labels"]["stacksync.io/stack"] == env.platform_stack
            assert "stacksync.io/source" not in cm["metadata"].get("annotations", {})
        role = env.get(cluster, "/apis/rbac.authorization.k8s.io/v1/clusterroles/alpha-reader")
        assert role["metadata"]["labels"]["stacksync.io/stack"] == env.platform_stack
        b1 = env.configmap(cluster, "beta", "b1")
        # rendered per cluster: the source's vars and the host's own variables reach templates
        assert b1["data"] == {"greeting": "hello", "cluster": cluster}
        assert b1["metadata"]["labels"]["stacksync.io/stack"] == env.apps_stack
        web = env.get(cluster, "/apis/apps/v1/namespaces/beta/deployments/web")
        assert web["spec"]["replicas"] == 1
        rows = run.summary_rows()[cluster]
        assert counts(rows[env.platform_stack]) == (platform_sha[:12], 5, 0, 0, 0, 0, "ok"), summaries[cluster]
        assert rows[env.apps_stack]["created"] == "3", summaries[cluster]
    env.steps.append("first")


def test_second_sync_is_a_no_op_on_every_host(env):
    step(env, "noop", "first")
    marks = {c: len(requests_of(h)) for c, h in env.clusters.items()}
    run = env.sync()
    assert_ok(run)
    for cluster, handle in env.clusters.items():
        assert run.recap[cluster]["changed"] == 0, run.tail()
        assert writes_since(handle, marks[cluster]) == []
        row = run.summary_rows()[cluster][env.platform_stack]
        assert counts(row)[1:] == (0, 0, 5, 0, 0, "ok"), run.summaries()[cluster]
    env.steps.append("noop")


def test_a_source_without_templates_is_rendered_once_for_every_host_and_run(env):
    """Issue 32: the platform source (plain YAML) is rendered by one host and read by the other, and read again by
    both in the next run of the same files; the apps source (a template using inventory_hostname) is rendered by each
    host in every run, as the first sync's b1 values show."""
    step(env, "render-once", "noop")
    env.platform.write("NOTES.md", "new files: the render kept for the old ones is not read\n")
    env.platform.commit("platform: notes")
    kept = "read from the render kept for its files"

    def outcomes(run, stack):
        lines = [line for line in run.output.splitlines() if line.startswith("stacksync [")
                 and (" objects rendered in " in line or f" objects {kept} " in line)]
        return sorted(kept in line for line in lines if f" stack {stack}: " in line)

    for expected in ([False, True], [True, True]):  # new files, then the same files in the next run
        run = env.sync("-vv")
        assert_ok(run)
        assert outcomes(run, env.platform_stack) == expected, run.output[-3000:]
        assert outcomes(run, env.apps_stack) == [False, False], run.output[-3000:]
        for cluster in CLUSTERS:
            assert run.recap[cluster]["changed"] == 0, run.tail()
            assert env.configmap(cluster, "beta", "b1")["data"] == {"greeting": "hello", "cluster": cluster}


def test_new_commit_outside_the_synced_paths_changes_nothing(env):
    step(env, "outside", "noop")
    env.platform.write("README.md", "docs only, outside manifests/\n")
    env.platform.commit("platform: docs")
    run = env.sync()
    assert_ok(run)
    for cluster in CLUSTERS:
        assert run.recap[cluster]["changed"] == 0, run.tail()


def test_change_in_git_is_applied_to_both_clusters(env):
    step(env, "change", "noop")
    env.platform.write("manifests/a1.yaml", configmap("a1", "alpha", {"v": "2"}))
    env.apps.write("deploy/web.yaml", deployment("web", "beta", 3))
    env.platform.commit("platform: a1 v2")
    env.apps.commit("apps: scale web")
    run = env.sync()
    assert_ok(run)
    for cluster in CLUSTERS:
        assert run.recap[cluster]["changed"] > 0
        assert env.configmap(cluster, "alpha", "a1")["data"] == {"v": "2"}
        assert env.get(cluster, "/apis/apps/v1/namespaces/beta/deployments/web")["spec"]["replicas"] == 3
        lines = run.summaries()[cluster]
        assert counts(run.summary_rows()[cluster][env.platform_stack])[2:4] == (1, 4), lines
        assert "  configured ConfigMap alpha/a1" in lines
    env.steps.append("change")


def test_removal_from_git_prunes_exactly_that_object(env):
    step(env, "removal", "change")
    env.platform.remove("manifests/a2.yaml")
    env.platform.commit("platform: drop a2")
    run = env.sync()
    assert_ok(run)
    for cluster in CLUSTERS:
        assert env.configmap(cluster, "alpha", "a2") is None
        assert env.configmap(cluster, "alpha", "a1") is not None
        lines = run.summaries()[cluster]
        assert counts(run.summary_rows()[cluster][env.platform_stack])[4] == 1, lines
        assert [line for line in lines if line.startswith("  pruned ")] == ["  pruned ConfigMap alpha/a2"]
    env.steps.append("removal")


def test_object_moving_between_sources_is_never_deleted(env):
    step(env, "move", "removal")
    before = {c: env.configmap(c, "alpha", "mover")["metadata"]["uid"] for c in CLUSTERS}
    marks = {c: len(requests_of(h)) for c, h in env.clusters.items()}
    # The platform source is applied (and would be pruned) first: moving from it to the apps source is
    # the order in which pruning per source, instead of after all applies, would delete the object.
    env.platform.remove("manifests/mover.yaml")
    env.apps.write("deploy/mover.yaml", configmap("mover", "alpha", {"moving": "yes"}))
    env.platform.commit("platform: hand mover over")
    env.apps.commit("apps: take mover")
    run = env.sync()
    assert_ok(run)
    for cluster, handle in env.clusters.items():
        cm = env.configmap(cluster, "alpha", "mover")
        assert cm is not None
        assert cm["metadata"]["uid"] == before[cluster], "the object was deleted and recreated"
        assert cm["metadata"]["labels"]["stacksync.io/stack"] == env.apps_stack
        deletes = [r for r in requests_of(handle)[marks[cluster]:] if r[0] == "DELETE" and r[1].endswith("/mover")]
        assert deletes == []
        lines = run.summaries()[cluster]
        assert not [line for line in lines if line.startswith("  pruned ")], lines
    env.steps.append("move")


def test_check_mode_writes_nothing_and_reports_the_change(env):
    step(env, "check", "move")
    env.platform.write("manifests/a1.yaml", configmap("a1", "alpha", {"v": "3"}))
    env.platform.write("manifests/a3.yaml", configmap("a3", "alpha", {"v": "1"}))
    env.apps.remove("deploy/mover.yaml")
    env.platform.commit("platform: a1 v3, a3")
    env.apps.commit("apps: drop mover")
    marks = {c: len(requests_of(h)) for c, h in env.clusters.items()}
    run = env.sync("--check", "--diff")
    assert_ok(run)
    for cluster, handle in env.clusters.items():
        assert writes_since(handle, marks[cluster]) == []
        assert env.configmap(cluster, "alpha", "a1")["data"] == {"v": "2"}
        assert env.configmap(cluster, "alpha", "a3") is None
        assert env.configmap(cluster, "alpha", "mover") is not None
        lines = run.summaries()[cluster]
        assert lines[0].startswith("check mode"), lines
        assert counts(run.summary_rows()[cluster][env.platform_stack])[1:3] == (1, 1), lines
        assert "  pruned ConfigMap alpha/mover" in lines
        assert run.recap[cluster]["changed"] > 0  # what a real run would change
    assert re.search(r'"v": "3"|v: .?3', run.stdout), "no diff shown"
    env.steps.append("check")


def test_unreachable_cluster_fails_alone(env, tmp_path):
    step(env, "unreachable", "check")
    # cluster-b's kubeconfig now points at a port nobody listens on
    with open(kubeconfig_of(env.clusters["cluster-b"])) as f:
        kubeconfig = yaml.safe_load(f)
    for c in kubeconfig["clusters"]:
        c["cluster"]["server"] = re.sub(r":\d+$", ":1", c["cluster"]["server"].rstrip("/"))
    dead = tmp_path / "dead.kubeconfig"
    dead.write_text(yaml.safe_dump(kubeconfig))
    inventory = write_inventory(tmp_path / "clusters.yml", {
        "cluster-a": {"stacksync_kubeconfig": kubeconfig_of(env.clusters["cluster-a"])},
        "cluster-b": {"stacksync_kubeconfig": str(dead)},
    })
    run = env.sync(inventory=inventory)
    assert run.rc != 0, run.tail()
    assert run.recap["cluster-a"]["failed"] == 0, run.tail()
    assert run.recap["cluster-b"]["failed"] == 1, run.tail()
    # the healthy cluster finished the whole sync (apply and prune) of the pending change
    assert env.configmap("cluster-a", "alpha", "a1")["data"] == {"v": "3"}
    assert env.configmap("cluster-a", "alpha", "a3") is not None
    assert env.configmap("cluster-a", "alpha", "mover") is None
    # the failed one still reports, and nothing was pruned there
    row = run.summary_rows()["cluster-b"][env.platform_stack]
    assert row["result"] == "FAILED (pruning not run)", run.summaries()["cluster-b"]
    assert env.configmap("cluster-b", "alpha", "mover") is not None
    env.steps.append("unreachable")


def test_a_cluster_that_fails_before_its_sync_is_never_called_synced(env, tmp_path):
    """Every cluster failed, this one at the role's argument check: the last lines say so, not "1 cluster synced"."""
    inventory = write_inventory(tmp_path / "clusters.yml", {
        "cluster-a": {"stacksync_kubeconfig": kubeconfig_of(env.clusters["cluster-a"]), "stacksync_concurrency": "many"},
    })
    run = env.sync(inventory=inventory)
    assert run.rc != 0 and run.recap["cluster-a"]["failed"] == 1, run.tail()
    assert "stacksync: 1 of 1 cluster failed (cluster-a), 0 synced" in run.stdout, run.tail()
    assert "cluster synced" not in run.stdout, run.tail()


def test_state_absent_deletes_a_whole_stack_without_its_repo(env):
    step(env, "absent", "check")
    def absent(repo, path):
        return dict(env.extra_vars, stacksync_sources=[env.extra_vars["stacksync_sources"][0],
                                                       {"repo": repo, "path": path, "stack": env.apps_stack,
                                                        "state": "absent"}])
    # another source may not delete it: the stack's record names the source it belongs to
    run = run_playbook(env.inventory, absent("file:///nonexistent/other.git", "."))
    assert run.rc != 0 and "belongs to source" in run.stdout, run.tail()
    for cluster in CLUSTERS:
        assert env.configmap(cluster, "beta", "b1") is not None
    # its own source may, although the repo is gone (a stack being deleted is not fetched)
    gone = env.apps.path.with_name("apps-gone")
    env.apps.path.rename(gone)
    try:
        run = run_playbook(env.inventory, absent(env.apps.url, "deploy"))
    finally:
        gone.rename(env.apps.path)
    assert_ok(run)
    for cluster in CLUSTERS:
        assert env.configmap(cluster, "beta", "b1") is None
        assert env.get(cluster, "/apis/apps/v1/namespaces/beta/deployments/web") is None
        assert env.configmap(cluster, "alpha", "a1") is not None  # the other stack is untouched
        row = run.summary_rows()[cluster][env.apps_stack]
        assert (row["commit"], row["result"]) == ("-", "deleted") and int(row["pruned"]) > 0, run.summaries()[cluster]
    env.steps.append("absent")
