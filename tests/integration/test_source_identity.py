"""Sources a job's author does not control (issue 28): git values that are not options, credentials in URLs
never printed, default stack names that never collide (and the upgrade to them that deletes nothing), and
per-source confinement. Real git repositories, role ``stacksync.k8s.sync``; simulator and real server."""

import contextlib
import json
import uuid

import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.base.naming import legacy_stack_name, stack_name
from ansible_collections.stacksync.k8s.plugins.module_utils.engine.record import object_name
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.auth import build_client
from ansible_collections.stacksync.k8s.plugins.module_utils.k8s.client import ApiError

try:
    from .test_sync_helpers import (
        GitRepo,
        configmap,
        localhost_play,
        module_task,
        namespace,
        run_play,
        run_playbook,
        sim_of,
        write_inventory,
    )
except ImportError:  # rootdir-relative import (tests/integration is not a package)
    from test_sync_helpers import (
        GitRepo,
        configmap,
        localhost_play,
        module_task,
        namespace,
        run_play,
        run_playbook,
        sim_of,
        write_inventory,
    )

RECORDS = "kube-system"
WRITES = ("POST", "PUT", "PATCH", "DELETE")


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


def sync(tmp_path, inventory, sources, *args, **variables):
    return run_playbook(inventory, dict({"stacksync_sources": sources, "stacksync_cache_dir": str(tmp_path / "cache"),
                                         "stacksync_discovery_cache_dir": ""}, **variables), *args)


def said(run, stack):
    prefix = f"stacksync [the-cluster] stack {stack}: "
    return [line[len(prefix):] for line in run.stdout.splitlines() if line.startswith(prefix)]


def forget_stack(cleanup, stack):
    """Remove the stack's record, key and Lease after the test (a real server keeps them in kube-system)."""
    for kind in ("configmaps", "secrets"):
        cleanup.append(f"/api/v1/namespaces/{RECORDS}/{kind}/{object_name(stack, '-key' if kind == 'secrets' else '')}")
    cleanup.append(f"/apis/coordination.k8s.io/v1/namespaces/{RECORDS}/leases/{object_name(stack)}")


def record(client, stack):
    try:
        return client.get(f"/api/v1/namespaces/{RECORDS}/configmaps/{object_name(stack)}")
    except ApiError as e:
        if e.is_not_found:
            return None
        raise


def live(client, ns, kind="configmaps"):
    """``{name: (uid, stack)}`` of the objects of a stack in ``ns`` (the cluster's own CA bundles left out)."""
    items = client.get(f"/api/v1/namespaces/{ns}/{kind}")["items"]
    labels = [(i, (i["metadata"].get("labels") or {}).get("stacksync.io/stack")) for i in items]
    return {i["metadata"]["name"]: (i["metadata"]["uid"], stack) for i, stack in labels if stack}


def writes_since(kube, since, path=""):
    if not kube.is_sim:
        return []
    return [(r["method"], r["path"]) for r in list(sim_of(kube).requests)[since:] if r["method"] in WRITES
            and "dryRun" not in (r.get("query") or {}) and path in r["path"]]


def mark(kube):
    return len(list(sim_of(kube).requests)) if kube.is_sim else 0


# -- stack identity --------------------------------------------------------------------------------------
def test_upgrading_to_the_new_default_names_deletes_nothing(env, kube):
    """A stack synced under its pre-0.2.0 default name is taken over by its new name: the same objects (uids),
    none deleted, the old record gone, said once; the next syncs are plain no-ops and prunes."""
    tmp_path, suffix, client, inventory, cleanup = env
    ns = f"upgrade-{suffix}"
    repo = GitRepo(tmp_path / "repo")
    repo.write("ns.yaml", namespace(ns))
    repo.write("a.yaml", configmap("a", ns, {"k": "a"}))
    repo.write("b.yaml", configmap("b", ns, {"k": "b"}))
    repo.write("s.yaml", {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": ns},
                          "stringData": {"password": "hunter2"}})
    repo.commit("first")
    cleanup.append(f"/api/v1/namespaces/{ns}")
    old, new = legacy_stack_name(repo.url, "."), stack_name(repo.url, ".")
    assert old != new
    forget_stack(cleanup, old)
    forget_stack(cleanup, new)

    # the old release named the stack `old`: the same as giving that name explicitly
    assert sync(tmp_path, inventory, [{"repo": repo.url, "stack": old}]).rc == 0
    before = dict(live(client, ns), **live(client, ns, "secrets"))
    assert {label for _uid, label in before.values()} == {old} and set(before) == {"a", "b", "s"}
    since = mark(kube)

    check = sync(tmp_path, inventory, [{"repo": repo.url}], "--check")
    assert check.rc == 0, check.tail()
    assert [line for line in said(check, new) if "take over" in line] == [
        f"would take over stack {old}, its name before 0.2.0 (the default stack names changed): its objects become "
        "this stack's, none is deleted"], check.stdout
    assert record(client, old) is not None and dict(live(client, ns), **live(client, ns, "secrets")) == before

    run = sync(tmp_path, inventory, [{"repo": repo.url}])
    assert run.rc == 0, run.tail()
    after = dict(live(client, ns), **live(client, ns, "secrets"))
    assert after == {name: (uid, new) for name, (uid, _label) in before.items()}  # same objects, the new stack's
    assert [m for m, p in writes_since(kube, since) if m == "DELETE" and f"/namespaces/{ns}/" in p] == []
    assert record(client, old) is None and record(client, new) is not None
    lines = [line for line in said(run, new) if "took over" in line]
    assert lines == [f"took over stack {old}, its name before 0.2.0 (the default stack names changed): its objects "
                     "are this stack's now and its record is removed, nothing was deleted"], run.stdout
    assert run.stdout.count(old) <= 4, run.stdout  # the line, and the takeover warning of the apply

    again = sync(tmp_path, inventory, [{"repo": repo.url}])
    assert again.rc == 0 and again.recap["the-cluster"]["changed"] == 0, again.tail()
    assert not [line for line in said(again, new) if "took over" in line]
    repo.remove("b.yaml")
    repo.commit("drop b")
    assert sync(tmp_path, inventory, [{"repo": repo.url}]).rc == 0
    assert set(live(client, ns)) == {"a"}  # the new stack prunes as any stack does


def test_a_legacy_stack_is_left_alone_when_the_new_one_already_synced(env, kube):
    """Only the first sync under the new name takes over; a legacy stack (re)created later is not deleted."""
    tmp_path, suffix, client, inventory, cleanup = env
    ns = f"later-{suffix}"
    repo = GitRepo(tmp_path / "repo")
    repo.write("ns.yaml", namespace(ns))
    repo.write("a.yaml", configmap("a", ns, {"k": "a"}))
    repo.commit("first")
    other = GitRepo(tmp_path / "other")
    other.write("c.yaml", configmap("c", ns, {"k": "c"}))
    other.commit("other")
    cleanup.append(f"/api/v1/namespaces/{ns}")
    old, new = legacy_stack_name(repo.url, "."), stack_name(repo.url, ".")
    forget_stack(cleanup, old)
    forget_stack(cleanup, new)
    assert sync(tmp_path, inventory, [{"repo": repo.url}]).rc == 0
    # someone syncs another repo under the legacy name (an old job template, by hand)
    assert sync(tmp_path, inventory, [{"repo": other.url, "stack": old}]).rc == 0
    run = sync(tmp_path, inventory, [{"repo": repo.url}])
    assert run.rc == 0, run.tail()
    assert set(live(client, ns)) == {"a", "c"} and record(client, old) is not None
    assert not [line for line in said(run, new) if "took over" in line]


def test_two_sources_whose_old_names_collided_keep_their_own_objects(env, kube):
    """Repo apps with path prod and repo apps-prod had one default name: syncing one pruned the other."""
    tmp_path, suffix, client, inventory, cleanup = env
    ns = f"collide-{suffix}"
    base = GitRepo(tmp_path / "ns")
    base.write("ns.yaml", namespace(ns))
    base.commit("ns")
    apps = GitRepo(tmp_path / "apps")
    apps.write("prod/p.yaml", configmap("from-apps-prod-dir", ns, {"k": "1"}))
    apps.commit("apps")
    apps_prod = GitRepo(tmp_path / "apps-prod")
    apps_prod.write("q.yaml", configmap("from-apps-prod-repo", ns, {"k": "1"}))
    apps_prod.commit("apps-prod")
    cleanup.append(f"/api/v1/namespaces/{ns}")
    one, two = {"repo": apps.url, "path": "prod"}, {"repo": apps_prod.url}
    assert legacy_stack_name(apps.url, "prod") == legacy_stack_name(apps_prod.url)
    for s in (one, two):
        forget_stack(cleanup, stack_name(s["repo"], s.get("path", ".")))
    assert sync(tmp_path, inventory, [{"repo": base.url, "stack": f"ns-{suffix}"}]).rc == 0
    forget_stack(cleanup, f"ns-{suffix}")
    # two job templates, one source each
    assert sync(tmp_path, inventory, [one]).rc == 0
    run = sync(tmp_path, inventory, [two])
    assert run.rc == 0, run.tail()
    assert set(live(client, ns)) == {"from-apps-prod-dir", "from-apps-prod-repo"}
    # and one sync of both (refused before as "two sources resolve to the same stack name")
    run = sync(tmp_path, inventory, [one, two])
    assert run.rc == 0 and run.recap["the-cluster"]["changed"] == 0, run.tail()
    assert set(live(client, ns)) == {"from-apps-prod-dir", "from-apps-prod-repo"}


# -- git: no user value becomes an option, only https / ssh / file ------------------------------------------
@pytest.mark.parametrize("field, value, refused", [
    ("version", "--upload-pack=touch {marker}", "version '--upload-pack=touch {marker}' refused: it begins with '-'"),
    ("repo", "--upload-pack=touch {marker}", "refused: it begins with '-', which git would read as an option"),
    ("repo", "ext::sh -c touch% {marker}", "refused: transport 'ext'"),
    ("version", "main..{marker}", "refused: it holds '..'"),
])
def test_a_survey_value_never_runs_a_command_on_the_controller(env, kube, field, value, refused):
    """docs/awx.md makes `version` a survey field: whoever launches the job types it."""
    tmp_path, suffix, client, inventory, _cleanup = env
    marker = tmp_path / "pwned"
    ns = f"survey-{suffix}"
    repo = GitRepo(tmp_path / "repo")
    repo.write("a.yaml", configmap("a", ns, {"k": "a"}))
    repo.commit("first")
    source = {"repo": repo.url, "stack": f"survey-{suffix}", field: value.format(marker=marker)}
    since = mark(kube)
    run = sync(tmp_path, inventory, [source])
    assert run.rc != 0 and not marker.exists(), run.tail()
    assert refused.format(marker=marker) in run.stdout, run.tail()
    assert writes_since(kube, since) == [] and record(client, f"survey-{suffix}") is None


def test_the_source_role_refuses_them_too(tmp_path):
    marker = tmp_path / "pwned"
    repo = GitRepo(tmp_path / "repo")
    repo.write("a.yaml", configmap("a", "default", {"k": "a"}))
    repo.commit("first")
    tasks = ("    - ansible.builtin.include_role:\n        name: stacksync.k8s.source\n        apply:\n"
             "          ignore_errors: true\n      vars:\n        stacksync_repo: \"{{ repo }}\"\n"
             "        stacksync_version: \"{{ version }}\"\n        stacksync_cache_dir: \"{{ cache }}\"\n")
    played = run_play(tmp_path, localhost_play(tasks, saved="'done'"), {
        "repo": repo.url, "version": f"--upload-pack=touch {marker}", "cache": str(tmp_path / "cache")})
    assert not marker.exists() and not (tmp_path / "cache").exists()
    assert f"stacksync.k8s.source: version '--upload-pack=touch {marker}' refused: it begins with '-'" in played.stdout


# -- credentials in a URL: userinfo and query string, nowhere printed or returned -------------------------------
def test_query_string_tokens_are_printed_nowhere(env, kube):
    """`?access_token=` / `?private_token=` carry credentials as much as `user:token@` does."""
    tmp_path, suffix, _client, inventory, cleanup = env
    ns = f"token-{suffix}"
    token = "glpatQ7S3cretTok"
    repo = GitRepo(tmp_path / f"repo?private_token={token}")  # git takes a file:// path literally
    repo.write("ns.yaml", namespace(ns))
    repo.write("a.yaml", configmap("a", ns, {"k": "a"}))
    repo.commit("first")
    cleanup.append(f"/api/v1/namespaces/{ns}")
    stack = stack_name(repo.url, ".")
    forget_stack(cleanup, stack)
    run = sync(tmp_path, inventory, [{"repo": repo.url}], "-vvv")
    assert run.rc == 0, run.tail()
    assert token not in run.output and stack in run.stdout
    summary = "\n".join(run.summaries()["the-cluster"])
    assert stack in summary
    failed = sync(tmp_path, inventory, [{"repo": repo.url, "version": "no-such-branch"}], "-vvv")
    assert failed.rc != 0 and "has no branch or tag no-such-branch" in failed.stdout, failed.tail()
    assert token not in failed.output
    missing = sync(tmp_path, inventory, [{"repo": repo.url + "-missing", "stack": f"m-{suffix}"}], "-vvv")
    assert missing.rc != 0 and "no such repository (or no access to it)" in missing.stdout, missing.tail()
    assert token not in missing.output and "does not appear to be a git repository" not in missing.output
    # the source role's facts and its failure
    tasks = ("    - ansible.builtin.include_role:\n        name: stacksync.k8s.source\n"
             "      vars:\n        stacksync_repo: \"{{ repo }}\"\n        stacksync_cache_dir: \"{{ cache }}\"\n"
             "    - ansible.builtin.debug:\n        var: stacksync_source\n"
             "    - ansible.builtin.set_fact:\n        r: \"{{ stacksync_source }}\"\n")
    played = run_play(tmp_path, localhost_play(tasks), {"repo": repo.url, "cache": str(tmp_path / "cache")}, "-vvv")
    facts = played.result
    assert facts["stack"] == stack and facts["repo"].startswith("file://") and "?" not in facts["repo"]
    assert token not in played.stdout + played.stderr


# -- per-source confinement ------------------------------------------------------------------------------------
def cluster_role(name):
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name},
            "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]}


def tenants(tmp_path, suffix):
    """A platform repo (the tenants' namespaces) and two tenants' repos."""
    ns_a, ns_b = f"team-a-{suffix}", f"team-b-{suffix}"
    platform = GitRepo(tmp_path / "platform")
    platform.write("ns.yaml", [namespace(ns_a), namespace(ns_b)])
    platform.commit("namespaces")
    a, b = GitRepo(tmp_path / "tenant-a"), GitRepo(tmp_path / "tenant-b")
    a.write("app.yaml", configmap("app", ns_a, {"k": "a"}))
    a.commit("a")
    b.write("app.yaml", configmap("app", ns_b, {"k": "b"}))
    b.commit("b")
    return ns_a, ns_b, platform, a, b


@pytest.mark.parametrize("hostile, rule", [
    ("cluster-role", "ClusterRole.rbac.authorization.k8s.io is cluster-scoped, and cluster-scoped kinds are not allowed "
                     "(allow_cluster_scoped: false)"),
    ("neighbour", "namespace team-b-{suffix} is not allowed (allowed_namespaces: team-a-{suffix})"),
    ("denied", "kind Secret is denied (denied_kinds: Secret)"),
])
def test_a_confined_tenant_cannot_write_outside(env, kube, hostile, rule):
    """Two tenants in one sync: tenant a, confined to its namespace, declares a ClusterRole / an object in
    tenant b's namespace / a denied kind: its stack fails before any write, naming the stack, object, rule."""
    tmp_path, suffix, client, inventory, cleanup = env
    ns_a, ns_b, platform, a, b = tenants(tmp_path, suffix)
    evil = {"cluster-role": cluster_role(f"tenant-a-admin-{suffix}"),
            "neighbour": configmap("app", ns_b, {"k": "overwritten by a"}),
            "denied": {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": ns_a},
                       "stringData": {"k": "v"}}}[hostile]
    a.write("evil.yaml", evil)
    a.commit("evil")
    cleanup.extend([f"/api/v1/namespaces/{ns_a}", f"/api/v1/namespaces/{ns_b}",
                    f"/apis/rbac.authorization.k8s.io/v1/clusterroles/tenant-a-admin-{suffix}"])
    stacks = {"platform": f"platform-{suffix}", "a": f"tenant-a-{suffix}", "b": f"tenant-b-{suffix}"}
    for s in stacks.values():
        forget_stack(cleanup, s)
    assert sync(tmp_path, inventory, [{"repo": platform.url, "stack": stacks["platform"]}]).rc == 0
    since = mark(kube)
    run = sync(tmp_path, inventory, [
        {"repo": a.url, "stack": stacks["a"], "namespace": ns_a, "allowed_namespaces": [ns_a], "denied_kinds": ["Secret"]},
        {"repo": b.url, "stack": stacks["b"], "namespace": ns_b, "allowed_namespaces": [ns_b]},
    ])
    assert run.rc != 0, run.tail()
    assert f"stack {stacks['a']}: FAILED after" in run.stdout, run.tail()
    assert "outside the stack's confinement: " + rule.format(suffix=suffix) in run.stdout, run.tail()
    # nothing of tenant a was written: not its app, not the hostile object, not its record
    assert "app" not in live(client, ns_a) and record(client, stacks["a"]) is None
    assert live(client, ns_b)["app"][1] == stacks["b"]
    assert client.get(f"/api/v1/namespaces/{ns_b}/configmaps/app")["data"] == {"k": "b"}
    with pytest.raises(ApiError):
        client.get(f"/apis/rbac.authorization.k8s.io/v1/clusterroles/tenant-a-admin-{suffix}")
    assert [w for w in writes_since(kube, since) if f"/namespaces/{ns_a}/" in w[1] or "clusterroles" in w[1]] == []


def test_a_confined_stack_never_prunes_outside_its_confinement(env, kube):
    """An object a stack holds outside its (new) confinement is kept and said so, never deleted."""
    tmp_path, suffix, client, inventory, cleanup = env
    ns_a, ns_b, platform, a, _b = tenants(tmp_path, suffix)
    a.write("stray.yaml", configmap("stray", ns_b, {"k": "a put it there"}))
    a.commit("stray")
    cleanup.extend([f"/api/v1/namespaces/{ns_a}", f"/api/v1/namespaces/{ns_b}"])
    stack = f"tenant-a-{suffix}"
    forget_stack(cleanup, stack)
    forget_stack(cleanup, f"platform-{suffix}")
    assert sync(tmp_path, inventory, [{"repo": platform.url, "stack": f"platform-{suffix}"}]).rc == 0
    assert sync(tmp_path, inventory, [{"repo": a.url, "stack": stack}]).rc == 0  # before it was confined
    assert live(client, ns_b)["stray"][1] == stack
    a.remove("stray.yaml")
    a.commit("no more stray")
    run = sync(tmp_path, inventory, [{"repo": a.url, "stack": stack, "allowed_namespaces": [ns_a]}])
    assert run.rc == 0, run.tail()
    assert "stray" in live(client, ns_b)
    assert f"ConfigMap {ns_b}/stray: not pruned: outside the stack's confinement: namespace {ns_b} is not allowed" \
        in run.stdout, run.stdout


def test_a_confined_tenant_cannot_take_over_an_object_of_another_stack_in_its_namespace(env, kube):
    """The platform's stack holds a ConfigMap in tenant a's namespace, synced by another job; tenant a, confined to
    that namespace, declares the same object: its stack fails before any write, the object stays the platform's.
    With fail_on_shared: false the tenant takes it over (with the warning an unconfined stack gets)."""
    tmp_path, suffix, client, inventory, cleanup = env
    ns_a, ns_b, platform, a, _b = tenants(tmp_path, suffix)
    platform.write("policy.yaml", configmap("default-deny", ns_a, {"k": "platform"}))
    platform.commit("the platform's object in a tenant namespace")
    a.write("evil.yaml", configmap("default-deny", ns_a, {"k": "opened by a"}))
    a.commit("evil")
    cleanup.extend([f"/api/v1/namespaces/{ns_a}", f"/api/v1/namespaces/{ns_b}"])
    stacks = {"platform": f"platform-{suffix}", "a": f"tenant-a-{suffix}"}
    for s in stacks.values():
        forget_stack(cleanup, s)
    assert sync(tmp_path, inventory, [{"repo": platform.url, "stack": stacks["platform"]}]).rc == 0
    tenant = {"repo": a.url, "stack": stacks["a"], "namespace": ns_a, "allowed_namespaces": [ns_a]}
    since = mark(kube)
    run = sync(tmp_path, inventory, [tenant])
    assert run.rc != 0, run.tail()
    assert (f"objects belong to other stacks (the stack is confined; stacksync_fail_on_shared: false lets it take them "
            f"over): "
            f"ConfigMap {ns_a}/default-deny (from evil.yaml#0) (stack '{stacks['platform']}')") in run.stdout, run.tail()
    assert live(client, ns_a)["default-deny"][1] == stacks["platform"]
    assert client.get(f"/api/v1/namespaces/{ns_a}/configmaps/default-deny")["data"] == {"k": "platform"}
    assert [w for w in writes_since(kube, since) if f"/namespaces/{ns_a}/" in w[1]] == []
    run = sync(tmp_path, inventory, [dict(tenant, fail_on_shared=False)])
    assert run.rc == 0, run.tail()
    assert f"belonged to stack '{stacks['platform']}'; the stack takes it over" in run.stderr, run.tail()
    assert live(client, ns_a)["default-deny"][1] == stacks["a"]


def test_the_stack_module_takes_the_same_confinement(tmp_path, kube):
    ns = f"module-{uuid.uuid4().hex[:6]}"
    tasks = module_task("stack", {"allowed_namespaces": ["{{ ns }}"], "resources": [
        configmap("c", ns, {"k": "v"}), cluster_role(f"{ns}-admin")]}, ignore_errors=True)
    since = mark(kube)
    run_play(tmp_path, localhost_play(tasks), {"stack": ns, "kc": kube.kubeconfig, "ns": ns})
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["failed"] and (f"ClusterRole.rbac.authorization.k8s.io {ns}-admin: outside the stack's confinement: "
                                 "ClusterRole.rbac.authorization.k8s.io is cluster-scoped") in result["msg"], result
    assert writes_since(kube, since) == []
