"""Module ``stacksync.k8s.sources`` through role ``stacksync.k8s.sync``: stacks that depend on stacks, what a
failed or invalid dependency does, what a run prints, and its ``set_stats`` data. Simulator and real server."""

import contextlib
import uuid

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.auth import build_client

try:
    from .test_sync_helpers import GitRepo, clean_env, configmap, namespace, run_playbook, sim_of, write_inventory
except ImportError:  # rootdir-relative import (tests/integration is not a package)
    from test_sync_helpers import GitRepo, clean_env, configmap, namespace, run_playbook, sim_of, write_inventory

WRITES = ("POST", "PUT", "PATCH", "DELETE")


def crd(group, kind, plural):
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {"group": group, "scope": "Namespaced",
                 "names": {"kind": kind, "plural": plural, "singular": kind.lower(), "listKind": kind + "List"},
                 "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                     "type": "object", "properties": {"spec": {"type": "object", "properties": {
                         "size": {"type": "integer", "default": 1}}}}}}}]},
    }


@pytest.fixture
def env(tmp_path, kube):
    suffix = uuid.uuid4().hex[:6]
    client = build_client({"kubeconfig": kube.kubeconfig})[0]
    inventory = write_inventory(tmp_path / "hosts.yml", {"the-cluster": {"stacksync_kubeconfig": kube.kubeconfig}})
    cleanup = []
    yield tmp_path, suffix, client, inventory, cleanup
    for path in reversed(cleanup):
        with contextlib.suppress(Exception):
            client.delete(path)


def sync(tmp_path, inventory, sources, *args, env=None):
    return run_playbook(inventory, {"stacksync_sources": sources, "stacksync_cache_dir": str(tmp_path / "cache"),
                                    "stacksync_discovery_cache_dir": ""}, *args, env=env)


def said(run, stack):
    """The lines the run printed about ``stack`` as it went (start and end of each of its runs)."""
    prefix = f"stacksync [the-cluster] stack {stack}: "
    return [line[len(prefix):] for line in run.stdout.splitlines() if line.startswith(prefix)]


def fatal_lines(run):
    """The ``fatal:`` lines of the run (a failed task's result, its message the error)."""
    return [line for line in run.stdout.splitlines() if line.startswith("fatal: [the-cluster]")]


SYNC_TASK = "TASK [stacksync.k8s.sync : Fetch, render, apply and prune every source]"


def failed_in_the_sync_task(run):
    """The run failed in the role's sync task (its ``fatal:`` line is in that task's output), with no
    collection code excerpt of a later task."""
    block = run.stdout.split(SYNC_TASK, 1)[1].split("\nTASK [", 1)[0]
    return bool(fatal_lines(run)) and fatal_lines(run)[0] in block and "failed_when" not in run.output


def writes(kube, since, path=""):
    """Write requests the simulator served after index ``since`` of its log (dry runs excluded) whose path
    contains ``path``."""
    return [r for r in list(sim_of(kube).requests)[since:] if r["method"] in WRITES
            and "dryRun" not in (r.get("query") or {}) and path in r["path"]]


def test_a_stack_is_applied_after_the_stacks_it_depends_on_are_healthy(env, kube):
    tmp_path, suffix, client, inventory, cleanup = env
    group, ns = f"s{suffix}.example.com", f"deps-{suffix}"
    repo = GitRepo(tmp_path / "repo")
    repo.write("infra/crd.yaml", crd(group, "Gadget", "gadgets"))
    repo.write("apps/ns.yaml", namespace(ns))
    repo.write("apps/gadget.yaml", {"apiVersion": f"{group}/v1", "kind": "Gadget",
                                    "metadata": {"name": "g1", "namespace": ns}, "spec": {"size": 3}})
    repo.commit("infra and apps")
    cleanup += [f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.{group}", f"/api/v1/namespaces/{ns}"]
    infra, apps = f"infra-{suffix}", f"apps-{suffix}"
    # apps comes first in the list: without depends_on its Gadget would be applied before the CRD exists
    sources = [{"repo": repo.url, "path": "apps", "stack": apps, "depends_on": [infra]},
               {"repo": repo.url, "path": "infra", "stack": infra}]
    mark = len(sim_of(kube).requests) if kube.is_sim else 0
    run = sync(tmp_path, inventory, sources)
    assert run.rc == 0, run.tail()
    gadget = client.get(f"/apis/{group}/v1/namespaces/{ns}/gadgets/g1")
    assert gadget["metadata"]["labels"]["stacksync.io/stack"] == apps and gadget["spec"]["size"] == 3
    assert said(run, infra)[0].startswith("applying 1 object from ") and said(run, infra)[0].endswith(
        ", then waiting until the stack is healthy")
    lines = run.stdout.splitlines()
    assert lines.index(f"stacksync [the-cluster] stack {infra}: " + said(run, infra)[1]) < lines.index(
        f"stacksync [the-cluster] stack {apps}: " + said(run, apps)[0]), run.tail()
    rows = run.summary_rows()["the-cluster"]
    assert list(rows) == [infra, apps] and rows[apps]["created"] == "2" and rows[infra]["result"] == "ok", rows
    if kube.is_sim:  # the request log: every write of infra came before the first write of apps
        crd_writes = writes(kube, mark, f"/customresourcedefinitions/gadgets.{group}")
        app_writes = writes(kube, mark, f"/namespaces/{ns}")
        assert crd_writes and app_writes
        assert max(r["time"] for r in crd_writes) < min(r["time"] for r in app_writes)

    # the control: the same sources without depends_on, on new names, fail in apps (the kind is unknown then)
    group2, ns2 = f"t{suffix}.example.com", f"nodeps-{suffix}"
    repo.write("infra2/crd.yaml", crd(group2, "Gadget", "gadgets"))
    repo.write("apps2/ns.yaml", namespace(ns2))
    repo.write("apps2/gadget.yaml", {"apiVersion": f"{group2}/v1", "kind": "Gadget",
                                     "metadata": {"name": "g1", "namespace": ns2}})
    repo.commit("control")
    cleanup += [f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.{group2}", f"/api/v1/namespaces/{ns2}"]
    run = sync(tmp_path, inventory, [{"repo": repo.url, "path": "apps2", "stack": apps + "-c"},
                                     {"repo": repo.url, "path": "infra2", "stack": infra + "-c"}])
    assert run.rc != 0 and run.summary_rows()["the-cluster"][apps + "-c"]["result"].startswith("FAILED"), run.tail()


def unavailable_deployment(name, ns):
    """A Deployment that never becomes Available: its pods select a node label no node has (the real control plane
    of the tests has no scheduler anyway)."""
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": ns},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"nodeSelector": {"stacksync.io/test-no-such-node": "true"},
                                           "containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10"}]}}}}


def test_a_retry_fails_as_the_first_run_while_a_dependency_is_still_unhealthy(env, kube):
    # run 1 times out waiting for the dependency and does not apply its dependent; run 2, with nothing changed, must
    # do the same: the dependency's unchanged objects are waited for too (as Flux's dependsOn, kubernetes.core's wait)
    tmp_path, suffix, client, inventory, cleanup = env
    ns = f"retry-{suffix}"
    repo = GitRepo(tmp_path / "repo")
    repo.write("infra/ns.yaml", namespace(ns))
    repo.write("infra/db.yaml", unavailable_deployment("db", ns))
    repo.write("apps/cm.yaml", configmap("app", ns, {"k": "v"}))
    repo.commit("first")
    cleanup.append(f"/api/v1/namespaces/{ns}")
    infra, apps = f"infra-{suffix}", f"apps-{suffix}"
    sources = [{"repo": repo.url, "path": "infra", "stack": infra},
               {"repo": repo.url, "path": "apps", "stack": apps, "depends_on": [infra]}]
    timeout = ["-e", "stacksync_wait_timeout=3"]
    timed_out = f"timed out after 3s waiting for: Deployment.apps {ns}/db: Progressing (LessAvailable): Available: 0/1"
    for attempt in ("first", "retry"):
        run = sync(tmp_path, inventory, sources, *timeout)
        assert run.rc != 0 and run.recap["the-cluster"]["failed"] == 1, (attempt, run.tail())
        assert client.get_or_none(f"/api/v1/namespaces/{ns}/configmaps/app") is None, attempt  # apps not applied
        end = said(run, infra)[-1]
        assert end.startswith("FAILED after ") and end.endswith(timed_out), (attempt, end)
        assert said(run, apps) == [f"not applied: it depends on {infra}, which failed"], attempt
        rows = run.summary_rows()["the-cluster"]
        assert rows[infra]["result"] == "FAILED (pruning not run)" and rows[infra]["health"] == "1 unhealthy", rows
        assert rows[apps]["result"] == "not applied", rows
        assert f"  unhealthy Deployment {ns}/db: Progressing (LessAvailable: Available: 0/1)" in run.summaries()[
            "the-cluster"], (attempt, run.tail())
    assert rows[infra]["created"] == "0" and rows[infra]["unchanged"] == "2", rows  # the retry wrote nothing
    # check mode does not wait: it says what a run would apply, and that health was not checked
    check = sync(tmp_path, inventory, sources, *timeout, "--check")
    rows = check.summary_rows()["the-cluster"]
    assert check.rc == 0 and rows[infra]["health"] == "not checked" and rows[apps]["created"] == "1", check.tail()
    # healthy (the Deployment scaled to 0 is Available): the no-op dependency is checked, and its dependent applied
    repo.write("infra/db.yaml", dict(unavailable_deployment("db", ns), spec=dict(
        unavailable_deployment("db", ns)["spec"], replicas=0)))
    repo.commit("scaled to zero")
    assert sync(tmp_path, inventory, sources, *timeout).rc == 0
    run = sync(tmp_path, inventory, sources, *timeout)
    rows = run.summary_rows()["the-cluster"]
    assert run.rc == 0 and rows[infra]["unchanged"] == "2" and rows[infra]["health"] == "healthy", run.tail()
    assert rows[apps]["health"] == "not checked" and rows[apps]["unchanged"] == "1", rows


def test_a_failed_dependency_blocks_its_dependents_and_nothing_is_pruned(env, kube):
    tmp_path, suffix, client, inventory, cleanup = env
    ns = f"blocked-{suffix}"
    repo = GitRepo(tmp_path / "repo")
    repo.write("infra/ns.yaml", namespace(ns))
    repo.write("infra/old.yaml", configmap("old", ns, {"k": "v"}))
    repo.write("apps/cm.yaml", configmap("app", ns, {"k": "v"}))
    repo.commit("first")
    cleanup.append(f"/api/v1/namespaces/{ns}")
    infra, apps = f"infra-{suffix}", f"apps-{suffix}"
    sources = [{"repo": repo.url, "path": "infra", "stack": infra}, {"repo": repo.url, "path": "apps", "stack": apps}]
    assert sync(tmp_path, inventory, sources).rc == 0
    # infra now holds an object of a kind the API server does not serve, and no longer holds `old`; apps changed
    repo.remove("infra/old.yaml")
    repo.write("infra/bad.yaml", {"apiVersion": "nowhere.example.com/v1", "kind": "Nothing",
                                  "metadata": {"name": "bad", "namespace": ns}})
    repo.write("apps/cm.yaml", configmap("app", ns, {"k": "changed"}))
    repo.commit("bad infra")
    sources[1]["depends_on"] = [infra]
    run = sync(tmp_path, inventory, sources)
    assert run.rc != 0 and run.recap["the-cluster"]["failed"] == 1, run.tail()
    assert client.get(f"/api/v1/namespaces/{ns}/configmaps/app")["data"] == {"k": "v"}  # apps not applied
    assert client.get_or_none(f"/api/v1/namespaces/{ns}/configmaps/old") is not None  # nothing pruned
    assert said(run, apps) == [f"not applied: it depends on {infra}, which failed"]
    rows = run.summary_rows()["the-cluster"]
    assert rows[infra]["result"] == "FAILED (pruning not run)", rows
    assert rows[apps]["result"] == "not applied", rows
    # the error is the sync task's message; the line of the stack and the summary say it in one line
    fatal = fatal_lines(run)
    assert len(fatal) == 1 and f"stack {infra}: " in fatal[0] and "nowhere.example.com" in fatal[0], run.tail()
    assert failed_in_the_sync_task(run), run.tail()
    (end,) = said(run, infra)
    assert end.startswith("FAILED after ") and "nowhere.example.com" in end, end
    details = run.summaries()["the-cluster"]
    assert [d for d in details if d.startswith("  error: ") and "nowhere.example.com" in d], details
    assert f"  not applied: it depends on {infra}, which failed" in details, details


def test_a_source_that_does_not_render_fails_alone_and_nothing_is_pruned_until_it_renders(env, kube):
    # it prunes nothing, nor does the stack that depends on it, nor the other stacks: what the broken source declares
    # now is unknown (an object moving to it must not be deleted). Once it renders again, the prunes happen.
    tmp_path, suffix, client, inventory, cleanup = env
    ns = f"broken-{suffix}"
    repo = GitRepo(tmp_path / "repo")
    repo.write("base/ns.yaml", namespace(ns))
    repo.write("base/old.yaml", configmap("old", ns, {"k": "v"}))
    repo.write("base/shared.yaml", configmap("shared", ns, {"k": "v"}))
    repo.write("broken/cm.yaml", configmap("broken", ns, {"k": "v"}))
    repo.write("broken/shared.yaml", configmap("shared", ns, {"k": "v"}))
    repo.write("apps/cm.yaml", configmap("app", ns, {"k": "v"}))
    repo.commit("first")
    cleanup.append(f"/api/v1/namespaces/{ns}")
    base, broken, apps = f"base-{suffix}", f"broken-{suffix}", f"apps-{suffix}"
    sources = [{"repo": repo.url, "path": "base", "stack": base},
               {"repo": repo.url, "path": "broken", "stack": broken},
               {"repo": repo.url, "path": "apps", "stack": apps, "depends_on": [broken]}]
    assert sync(tmp_path, inventory, sources).rc == 0
    shared = client.get(f"/api/v1/namespaces/{ns}/configmaps/shared")["metadata"]
    assert shared["labels"]["stacksync.io/stack"] == base  # declared by both: the first source's
    # base drops `old` and `shared` and changes; broken gets a file that is not YAML; apps (depends on broken) changes
    repo.remove("base/old.yaml")
    repo.remove("base/shared.yaml")
    repo.write("base/ns.yaml", dict(namespace(ns), metadata={"name": ns, "labels": {"team": "a"}}))
    (repo.path / "broken" / "cm.yaml").write_text("data: {a: [unclosed\n")
    repo.write("apps/cm.yaml", configmap("app", ns, {"k": "changed"}))
    repo.commit("broken")
    run = sync(tmp_path, inventory, sources)
    assert run.rc != 0 and run.recap["the-cluster"]["failed"] == 1, run.tail()
    # the independent stack is applied but prunes nothing; the broken one and its dependent are not applied
    assert client.get(f"/api/v1/namespaces/{ns}")["metadata"]["labels"]["team"] == "a"
    assert client.get(f"/api/v1/namespaces/{ns}/configmaps/app")["data"] == {"k": "v"}
    assert client.get_or_none(f"/api/v1/namespaces/{ns}/configmaps/old") is not None
    now = client.get(f"/api/v1/namespaces/{ns}/configmaps/shared")["metadata"]
    assert (now["uid"], now["labels"]["stacksync.io/stack"]) == (shared["uid"], base), run.tail()
    rows = run.summary_rows()["the-cluster"]
    assert rows[base]["configured"] == "1" and rows[base]["pruned"] == "0", rows
    assert rows[base]["result"].startswith("ok") and "pruning" in rows[base]["result"], rows
    assert rows[broken]["result"] == "FAILED (pruning not run)", rows
    assert rows[broken]["commit"] == rows[base]["commit"] != "-", rows  # checked out, then not rendered
    assert rows[apps]["result"] == "not applied", rows
    (line,) = said(run, broken)
    assert line.startswith("FAILED: ") and "broken/cm.yaml" in line, line
    # the error as the sync task's message, naming the file relative to the repository
    fatal = fatal_lines(run)
    assert len(fatal) == 1 and f"stack {broken}: " in fatal[0] and "broken/cm.yaml" in fatal[0], run.tail()
    assert failed_in_the_sync_task(run), run.tail()
    assert str(tmp_path / "cache") not in run.stdout
    # fixed: every stack prunes again; what broken declares (shared) is released to it, never deleted
    repo.write("broken/cm.yaml", configmap("broken", ns, {"k": "v"}))
    repo.commit("fixed")
    run = sync(tmp_path, inventory, sources)
    assert run.rc == 0, run.tail()
    assert client.get_or_none(f"/api/v1/namespaces/{ns}/configmaps/old") is None
    now = client.get(f"/api/v1/namespaces/{ns}/configmaps/shared")["metadata"]
    assert (now["uid"], now["labels"]["stacksync.io/stack"]) == (shared["uid"], broken), run.tail()


@pytest.mark.parametrize("deps, message", [
    ({"a": ["b"], "b": ["a"]}, "dependency cycle between stacks {a}, {b}, {a}"),
    ({"a": ["nope"]}, "stack {a} depends on 'nope', which is not a stack of this sync"),
])
def test_a_dependency_cycle_or_a_missing_name_fails_before_any_write(env, kube, deps, message):
    tmp_path, suffix, client, inventory, cleanup = env
    ns = f"cycle-{suffix}"
    repo = GitRepo(tmp_path / "repo")
    repo.write("a/ns.yaml", namespace(ns))
    repo.write("b/cm.yaml", configmap("b", ns, {"k": "v"}))
    repo.commit("first")
    cleanup.append(f"/api/v1/namespaces/{ns}")
    names = {"a": f"a-{suffix}", "b": f"b-{suffix}"}
    sources = [{"repo": repo.url, "path": k, "stack": names[k], "depends_on": [names.get(d, d) for d in v]}
               for k, v in deps.items()]
    mark = len(sim_of(kube).requests) if kube.is_sim else 0
    run = sync(tmp_path, inventory, sources)
    assert run.rc != 0 and message.format(**names) in run.output, run.tail()
    assert client.get_or_none(f"/api/v1/namespaces/{ns}") is None
    assert not (tmp_path / "cache").exists()  # not even fetched
    if kube.is_sim:
        assert writes(kube, mark) == []


def test_a_run_prints_little_and_hands_its_counts_to_set_stats(env, kube):
    tmp_path, suffix, _client, inventory, cleanup = env
    ns = f"quiet-{suffix}"
    repo = GitRepo(tmp_path / "repo")
    repo.write("one/ns.yaml", namespace(ns))
    repo.write("two/a.yaml", configmap("a", ns, {"k": "v"}))
    repo.write("two/b.yaml", configmap("b", ns, {"k": "v"}))
    repo.commit("first")
    cleanup.append(f"/api/v1/namespaces/{ns}")
    one, two = f"one-{suffix}", f"two-{suffix}"
    sources = [{"repo": repo.url, "path": "one", "stack": one}, {"repo": repo.url, "path": "two", "stack": two}]
    run = sync(tmp_path, inventory, sources, env=clean_env(ANSIBLE_SHOW_CUSTOM_STATS="true"))
    assert run.rc == 0, run.tail()
    tasks = [line for line in run.stdout.splitlines() if line.startswith("TASK [")]
    assert len(tasks) <= 6, tasks  # include, argument spec, check, the sync, the results kept, the summary of every cluster
    assert run.recap["the-cluster"]["skipped"] == 0, run.tail()  # no task that only runs on failure
    # what each stack writes, then what it wrote; a prune run that deletes nothing says nothing
    assert said(run, one)[0].startswith("applying 1 object from ") and said(run, one)[1].startswith("created 1 in ")
    assert said(run, two)[0].startswith("applying 2 objects from ") and said(run, two)[1].startswith("created 2 in ")
    assert len(said(run, one)) == len(said(run, two)) == 2, run.stdout
    stats = run.stdout.split("CUSTOM STATS:", 1)[1]
    assert f'"{one}"' in stats and f'"{two}"' in stats and '"the-cluster"' in stats, stats
    # a no-op says so in one line per stack, and announces nothing
    run = sync(tmp_path, inventory, sources)
    assert run.rc == 0 and run.recap["the-cluster"]["changed"] == 0, run.tail()
    assert said(run, two) == [said(run, two)[0]] and said(run, two)[0].startswith("unchanged 2 in "), run.stdout
    # pruned in the reverse order of the applies
    repo.write("one/gone.yaml", configmap("gone-one", ns, {"k": "v"}))
    repo.write("two/gone.yaml", configmap("gone-two", ns, {"k": "v"}))
    repo.commit("more")
    assert sync(tmp_path, inventory, sources).rc == 0
    repo.remove("one/gone.yaml")
    repo.remove("two/gone.yaml")
    repo.commit("less")
    run = sync(tmp_path, inventory, sources)
    assert run.rc == 0, run.tail()
    assert said(run, one) == [said(run, one)[0], "pruning 1 object", said(run, one)[2]], run.stdout
    assert said(run, one)[0].startswith("unchanged 1 in ") and said(run, one)[2].startswith("pruned 1 object in ")
    lines = run.stdout.splitlines()
    assert lines.index(f"stacksync [the-cluster] stack {two}: " + said(run, two)[2]) < lines.index(
        f"stacksync [the-cluster] stack {one}: " + said(run, one)[2])


def test_every_host_of_a_run_syncs_the_commit_fetched_once(env, kube):
    tmp_path, suffix, client, _inventory, cleanup = env
    hosts = [f"h{i}" for i in range(3)]
    for host in hosts:
        client.create("/api/v1/namespaces", namespace(f"{host}-{suffix}"))
        cleanup.append(f"/api/v1/namespaces/{host}-{suffix}")
    inventory = write_inventory(tmp_path / "hosts.yml", {h: {"stacksync_kubeconfig": kube.kubeconfig} for h in hosts})
    repo = GitRepo(tmp_path / "repo")
    repo.write("m/cm.yaml", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"v": "0"}})
    repo.commit("first")
    # one source for every host, templated per host: its own stack and namespace on the one cluster
    sources = [{"repo": repo.url, "path": "m", "stack": "fetch-{{ inventory_hostname }}-" + suffix,
                "namespace": "{{ inventory_hostname }}-" + suffix}]
    for version in ("1", "2"):
        repo.write("m/cm.yaml", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
                                 "data": {"v": version}})
        repo.commit("v" + version)
        run = sync(tmp_path, inventory, sources, "-vv", "--forks", "3")
        assert run.rc == 0, run.tail()
        fetched = [line for line in run.stdout.splitlines() if ": fetched commit " in line]
        reused = [line for line in run.stdout.splitlines() if ": reused commit " in line]
        assert (len(fetched), len(reused)) == (1, 2), fetched + reused
        commits = {run.summary_rows()[h][f"fetch-{h}-{suffix}"]["commit"] for h in hosts}
        assert commits == {repo.git("rev-parse", "HEAD")[:12]}
        for h in hosts:
            assert client.get(f"/api/v1/namespaces/{h}-{suffix}/configmaps/c")["data"] == {"v": version}


def test_a_single_source_shows_each_change_once_with_diff(env, kube):
    # one source applies and prunes in one run of the stack module: its diff is that run's, listed once
    tmp_path, suffix, _client, inventory, cleanup = env
    ns = f"once-{suffix}"
    repo = GitRepo(tmp_path / "repo")
    repo.write("ns.yaml", namespace(ns))
    repo.write("cm.yaml", configmap("a", ns, {"colour": "blue"}))
    repo.commit("first")
    cleanup.append(f"/api/v1/namespaces/{ns}")
    sources = [{"repo": repo.url, "stack": f"once-{suffix}"}]
    assert sync(tmp_path, inventory, sources).rc == 0
    repo.write("cm.yaml", configmap("a", ns, {"colour": "green"}))
    repo.commit("green")
    run = sync(tmp_path, inventory, sources, "--check", "--diff")
    assert run.rc == 0 and run.recap["the-cluster"]["changed"] == 1, run.tail()
    changed = [line for line in run.stdout.splitlines() if "green" in line]
    assert len(changed) == 1 and changed[0].startswith("+"), run.stdout
    assert run.stdout.count(f"--- before: ConfigMap {ns}/a") == 1, run.stdout


def test_a_renamed_stack_takes_its_objects_over_and_the_old_name_absent_deletes_nothing(env, kube):
    # docs/adoption.md: rename the stack, give the old name state absent in the same run; later removals prune
    tmp_path, suffix, client, inventory, cleanup = env
    ns = f"rename-{suffix}"
    repo = GitRepo(tmp_path / "repo")
    repo.write("ns.yaml", namespace(ns))
    repo.write("a.yaml", configmap("a", ns, {"k": "a"}))
    repo.write("b.yaml", configmap("b", ns, {"k": "b"}))
    repo.commit("first")
    cleanup.append(f"/api/v1/namespaces/{ns}")
    old, new = f"old-{suffix}", f"new-{suffix}"

    def live():
        items = client.get(f"/api/v1/namespaces/{ns}/configmaps")["items"]
        return {i["metadata"]["name"]: (i["metadata"]["uid"], (i["metadata"].get("labels") or {}).get("stacksync.io/stack"))
                for i in items if i["metadata"]["name"] in ("a", "b")}

    assert sync(tmp_path, inventory, [{"repo": repo.url, "stack": old}]).rc == 0
    before = live()
    renamed = [{"repo": repo.url, "stack": new}, {"repo": repo.url, "stack": old, "state": "absent"}]
    check = sync(tmp_path, inventory, renamed, "--check")  # a move in check mode too: released, not deleted
    assert check.rc == 0 and "pruned ConfigMap" not in check.stdout, check.stdout
    assert check.summary_rows()["the-cluster"][old]["pruned"] == "0", check.stdout
    run = sync(tmp_path, inventory, renamed)
    assert run.rc == 0, run.tail()
    assert live() == {name: (uid, new) for name, (uid, _stack) in before.items()}  # the same objects, now the new stack's
    repo.remove("b.yaml")
    repo.commit("drop b")
    run = sync(tmp_path, inventory, [{"repo": repo.url, "stack": new}])
    assert run.rc == 0, run.tail()
    assert set(live()) == {"a"}, run.stdout  # pruned, not released to the old name


def test_check_mode_of_an_object_moving_between_sources_shows_no_prune(env, kube):
    tmp_path, suffix, client, inventory, cleanup = env
    ns = f"move-{suffix}"
    a, b = GitRepo(tmp_path / "a"), GitRepo(tmp_path / "b")
    a.write("ns.yaml", namespace(ns))
    a.write("moving.yaml", configmap("moving", ns, {"k": "1"}))
    a.commit("a")
    b.write("other.yaml", configmap("other", ns, {"k": "1"}))
    b.commit("b")
    cleanup.append(f"/api/v1/namespaces/{ns}")
    sources = [{"repo": a.url, "stack": f"a-{suffix}"}, {"repo": b.url, "stack": f"b-{suffix}", "depends_on": [f"a-{suffix}"]}]
    assert sync(tmp_path, inventory, sources).rc == 0
    a.remove("moving.yaml")
    a.commit("move")
    b.write("moving.yaml", configmap("moving", ns, {"k": "1"}))
    b.commit("move")
    uid = client.get(f"/api/v1/namespaces/{ns}/configmaps/moving")["metadata"]["uid"]
    check = sync(tmp_path, inventory, sources, "--check", "--diff")
    assert check.rc == 0, check.tail()
    assert "pruned ConfigMap" not in check.stdout and "(deleted," not in check.stdout, check.stdout
    run = sync(tmp_path, inventory, sources)  # the real run moves it: nothing pruned
    assert run.rc == 0 and "pruned ConfigMap" not in run.stdout, run.tail()
    assert client.get(f"/api/v1/namespaces/{ns}/configmaps/moving")["metadata"]["uid"] == uid


def test_check_mode_fails_as_the_run_does_for_a_namespace_no_earlier_source_creates(env, kube):
    tmp_path, suffix, _client, inventory, cleanup = env
    ns, typo = f"made-{suffix}", f"mdae-{suffix}"
    base, apps = GitRepo(tmp_path / "base"), GitRepo(tmp_path / "apps")
    base.write("ns.yaml", namespace(ns))
    base.commit("base")
    apps.write("app.yaml", configmap("app", ns, {"k": "1"}))
    apps.write("typo.yaml", configmap("typo", typo, {"k": "1"}))
    apps.commit("apps")
    cleanup.append(f"/api/v1/namespaces/{ns}")
    sources = [{"repo": base.url, "stack": f"base-{suffix}"},
               {"repo": apps.url, "stack": f"apps-{suffix}", "depends_on": [f"base-{suffix}"]}]
    check = sync(tmp_path, inventory, sources, "--check")
    run = sync(tmp_path, inventory, sources)
    assert check.rc != 0 and run.rc != 0, (check.tail(), run.tail())
    # the same error, naming the object and its file; the namespace the earlier source creates is no error
    error = f'ConfigMap {typo}/typo (from typo.yaml#0): apply failed: 404 NotFound: namespaces "{typo}" not found'
    for r in (check, run):
        lines = said(r, f"apps-{suffix}")
        assert any(error in line for line in lines) and not any(f"ConfigMap {ns}/app (" in line for line in lines), lines
    apps.remove("typo.yaml")
    apps.commit("fixed")
    check = sync(tmp_path, inventory, sources, "--check")
    assert check.rc == 0, check.tail()
    assert sync(tmp_path, inventory, sources).rc == 0


def test_the_wait_timeout_may_be_a_duration_as_flux_writes_it(env, kube):
    """``stacksync_wait_timeout: 5m`` as ``stacksync_prune_grace: 2d``; a value that is neither a number of seconds nor
    a duration fails the sync naming the role's variable, before anything is written."""
    tmp_path, suffix, client, inventory, cleanup = env
    ns = f"dur-{suffix}"
    repo = GitRepo(tmp_path / "repo")
    repo.write("app/ns.yaml", namespace(ns))
    repo.write("app/cm.yaml", configmap("app", ns, {"k": "v"}))
    repo.commit("first")
    cleanup.append(f"/api/v1/namespaces/{ns}")
    sources = [{"repo": repo.url, "path": "app", "stack": f"dur-{suffix}"}]
    run = sync(tmp_path, inventory, sources, "-e", "stacksync_wait=true", "-e", "stacksync_wait_timeout=soon")
    assert run.rc != 0 and run.recap["the-cluster"]["failed"] == 1, run.tail()
    assert "stacksync_wait_timeout must be a duration such as 90s, 15m, 1h or 2d" in run.output, run.tail()
    assert client.get_or_none(f"/api/v1/namespaces/{ns}") is None
    run = sync(tmp_path, inventory, sources, "-e", "stacksync_wait=true", "-e", "stacksync_wait_timeout=5m")
    assert run.rc == 0, run.tail()
    assert client.get(f"/api/v1/namespaces/{ns}/configmaps/app")["data"] == {"k": "v"}


def test_verbose_shows_the_progress_lines_named_by_host_not_the_tasks_whole_result(env, kube):
    """``-v`` (for the progress lines) does not print the sources task's result of every object under them (one line
    of ~60 KB at 600 objects); ``-vv`` does; the progress lines start as the other lines of a host do."""
    tmp_path, suffix, _client, inventory, cleanup = env
    ns = f"verb-{suffix}"
    repo = GitRepo(tmp_path / "repo")
    repo.write("app/ns.yaml", namespace(ns))
    for i in range(5):
        repo.write(f"app/cm{i}.yaml", configmap(f"cm{i}", ns, {"k": "v"}))
    repo.commit("first")
    cleanup.append(f"/api/v1/namespaces/{ns}")
    stack = f"verb-{suffix}"
    sources = [{"repo": repo.url, "path": "app", "stack": stack}]
    run = sync(tmp_path, inventory, sources, "-v", env=clean_env(STACKSYNC_PROGRESS_INTERVAL="0"))
    assert run.rc == 0, run.tail()
    lines = run.stdout.splitlines()
    assert f"stacksync [the-cluster] stack {stack}: applied 6/6 objects (0 s)" in lines, run.tail()
    assert "changed: [the-cluster]" in lines, run.tail()  # the sources task, without its result
    assert not [line for line in lines if line.startswith("changed: [the-cluster] => ")], run.tail()
    run = sync(tmp_path, inventory, sources, "-vv", env=clean_env(STACKSYNC_PROGRESS_INTERVAL="0"))
    assert [line for line in run.stdout.splitlines() if line.startswith("ok: [the-cluster] => {") and "ansible_stats" in line], run.tail()
