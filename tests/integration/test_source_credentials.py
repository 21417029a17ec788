"""A source's own kubeconfig means what it means to kubectl, through role ``stacksync.k8s.sync`` (issue 28,
items 4-6): the job's ``K8S_AUTH_*`` credentials (what AWX's Kubernetes credential injects) never apply to
it nor reach its server, the user entry's impersonation is honoured, and a failing credential plugin fails
the source before any request.

Server A is the cluster under test (``kube``: the simulator, or a real server with
``STACKSYNC_TEST_KUBECONFIG``), whose admin credentials are the job's; server B, the tenant's, is always a
simulator, so that its request log shows every ``Authorization`` header it received.
"""

import sys
import textwrap
import uuid
from pathlib import Path

import pytest
import yaml

try:
    from .test_sync_credentials import create, live, tenant_rbac, wait_allowed
    from .test_sync_helpers import GitRepo, clean_env, configmap, run_playbook, write_inventory
except ImportError:  # rootdir-relative import (tests/integration is not a package)
    from test_sync_credentials import create, live, tenant_rbac, wait_allowed
    from test_sync_helpers import GitRepo, clean_env, configmap, run_playbook, write_inventory

STACK_LABEL = "stacksync.io/stack"
LIMITED = {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "limited"}


def uid():
    return uuid.uuid4().hex[:8]


def cm(ns, name):
    return f"/api/v1/namespaces/{ns}/configmaps/{name}"


def job_env(kube, host=True):
    """What AWX's Kubernetes (bearer token) credential injects for the job: server A's admin."""
    env = {"K8S_AUTH_API_KEY": kube.token, "K8S_AUTH_VERIFY_SSL": "True"}
    if host:
        env["K8S_AUTH_HOST"] = kube.server
    if kube.ca_cert:
        env["K8S_AUTH_SSL_CA_CERT"] = kube.ca_cert
    return clean_env(**env)


class TwoClusters:
    """Namespace ``tenant-*`` on B (the limited user may write there), ``platform-*`` on A; a tenant repo and
    a platform repo; an inventory with no ``stacksync_*`` connection variable (the job's connection is the
    ``K8S_AUTH_*`` environment)."""

    def __init__(self, kube, b, tmp_path):
        self.kube, self.b = kube, b
        self.tenant_ns, self.platform_ns = "tenant-" + uid(), "platform-" + uid()
        create(b.http, "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.tenant_ns}})
        create(kube.http, "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.platform_ns}})
        tenant_rbac(b.http, self.tenant_ns, LIMITED)
        self.tenant_stack, self.platform_stack = "tenant-" + uid(), "platform-" + uid()
        self.tenant_repo = GitRepo(tmp_path / "tenant")
        self.tenant_repo.write("deploy/t1.yml", configmap("t1", self.tenant_ns, {"owner": "tenant"}))
        self.tenant_repo.commit("tenant: t1")
        self.platform_repo = GitRepo(tmp_path / "platform")
        self.platform_repo.write("deploy/p1.yml", configmap("p1", self.platform_ns, {"owner": "platform"}))
        self.platform_repo.commit("platform: p1")
        self.inventory = write_inventory(tmp_path / "clusters.yml", {"cluster": {}})
        self.cache = str(tmp_path / "cache")

    def sync(self, tenant_kubeconfig, env, host_vars=None):
        sources = [{"repo": self.tenant_repo.url, "path": "deploy", "stack": self.tenant_stack, "kubeconfig": tenant_kubeconfig,
                    "record_namespace": self.tenant_ns},
                   {"repo": self.platform_repo.url, "path": "deploy", "stack": self.platform_stack,
                    "record_namespace": self.platform_ns}]
        inventory = write_inventory(self.inventory, {"cluster": host_vars or {}})
        return run_playbook(inventory, {"stacksync_cache_dir": self.cache, "stacksync_sources": sources}, env=env)

    def cleanup(self):
        self.kube.http.request("DELETE", "/api/v1/namespaces/" + self.platform_ns)


@pytest.fixture
def clusters(kube, kubesim_factory, tmp_path):
    env = TwoClusters(kube, kubesim_factory(tls=True), tmp_path)
    try:
        yield env
    finally:
        env.cleanup()


@pytest.mark.parametrize("host", [True, False], ids=["K8S_AUTH_HOST and token", "token alone"])
def test_the_jobs_k8s_auth_credentials_never_apply_to_a_source_with_its_own_kubeconfig(kube, clusters, host):
    b = clusters.b
    wait_allowed(lambda: b.limited_http().get(f"/api/v1/namespaces/{clusters.tenant_ns}/configmaps")[0])
    b.sim.reset_counters()
    # without K8S_AUTH_HOST the job's server is the host's kubeconfig's, its token K8S_AUTH_API_KEY
    run = clusters.sync(b.limited_kubeconfig, job_env(kube, host), None if host else {"stacksync_kubeconfig": kube.kubeconfig})
    received = list(b.sim.requests)
    assert run.rc == 0, run.tail()
    t1 = live(b.http, cm(clusters.tenant_ns, "t1"))
    assert t1 and t1["metadata"]["labels"][STACK_LABEL] == clusters.tenant_stack, "the tenant's source did not write on B"
    assert live(kube.http, cm(clusters.tenant_ns, "t1")) is None if kube.is_sim else True
    assert live(kube.http, cm(clusters.platform_ns, "p1")) is not None, "the platform source (the job's credentials) failed"
    seen = [r for r in received if r["authorization"]]
    assert seen, "B got no request"
    assert all(r["authorization"] == "Bearer " + b.limited_token for r in seen), \
        sorted(set(r["authorization"][:12] for r in seen))
    assert not any(kube.token in (r["authorization"] or "") for r in received), "A's admin token reached B"
    assert {r["user"] for r in seen} == {"limited"}


def test_the_source_acts_as_its_limited_user_not_as_the_jobs_admin(kube, clusters):
    b = clusters.b
    wait_allowed(lambda: b.limited_http().get(f"/api/v1/namespaces/{clusters.tenant_ns}/configmaps")[0])
    other = "other-" + uid()
    create(b.http, "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": other}})
    clusters.tenant_repo.write("deploy/escape.yml", configmap("escape", other, {"owner": "tenant"}))
    clusters.tenant_repo.commit("tenant: an object where the tenant may not write")
    run = clusters.sync(b.limited_kubeconfig, job_env(kube))
    assert run.rc != 0, run.tail()
    assert 'User "limited" cannot' in run.output, run.tail()
    assert live(b.http, cm(other, "escape")) is None


def _kubeconfig(path, doc):
    Path(path).write_text(yaml.safe_dump(doc))
    Path(path).chmod(0o600)
    return str(path)


def test_impersonation_in_a_sources_kubeconfig_confines_it(kube, tmp_path):
    """An admin kubeconfig whose user entry impersonates the tenant's account: the source writes only what the
    tenant may (kubectl would act as that account too), not what the admin may."""
    tenant_ns, other_ns, account = "tenant-" + uid(), "other-" + uid(), "tenant-" + uid()
    for ns in (tenant_ns, other_ns):
        create(kube.http, "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    try:
        tenant_rbac(kube.http, tenant_ns, {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": account})
        wait_allowed(lambda: kube.http.request("GET", f"/api/v1/namespaces/{tenant_ns}/configmaps",
                                               headers={"Impersonate-User": account})[0])
        doc = yaml.safe_load(Path(kube.kubeconfig).read_text())
        for entry in doc["users"]:
            entry["user"]["as"] = account
        kubeconfig = _kubeconfig(tmp_path / "tenant.kubeconfig", doc)
        repo = GitRepo(tmp_path / "tenant")
        repo.write("deploy/t1.yml", configmap("t1", tenant_ns, {"owner": "tenant"}))
        repo.write("deploy/escape.yml", configmap("escape", other_ns, {"owner": "tenant"}))
        repo.commit("tenant: one object inside, one outside")
        inventory = write_inventory(tmp_path / "clusters.yml", {"cluster": {"stacksync_kubeconfig": kube.kubeconfig}})
        sources = [{"repo": repo.url, "path": "deploy", "stack": "t-" + uid(), "kubeconfig": kubeconfig,
                    "record_namespace": tenant_ns}]
        run = run_playbook(inventory, {"stacksync_cache_dir": str(tmp_path / "cache"), "stacksync_sources": sources})
        assert run.rc != 0, run.tail()
        assert f'User "{account}" cannot' in run.output, run.tail()
        assert live(kube.http, cm(other_ns, "escape")) is None, "the source wrote as the kubeconfig's admin"
    finally:
        for ns in (tenant_ns, other_ns):
            kube.http.request("DELETE", "/api/v1/namespaces/" + ns)


def test_a_failing_exec_plugin_fails_the_source_before_any_request(kubesim_factory, tmp_path):
    b = kubesim_factory(tls=True)
    plugin = tmp_path / "login.py"
    plugin.write_text(f"#!{sys.executable}\n" + textwrap.dedent("""\
        import sys
        sys.stderr.write("error: you must log in first\\n")
        sys.exit(1)
        """))
    plugin.chmod(0o755)
    doc = yaml.safe_load(Path(b.kubeconfig).read_text())
    doc["users"][0]["user"] = {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": str(plugin),
                                        "interactiveMode": "Never", "installHint": "run the login tool"}}
    kubeconfig = _kubeconfig(tmp_path / "tenant.kubeconfig", doc)
    repo = GitRepo(tmp_path / "tenant")
    repo.write("deploy/t1.yml", configmap("t1", "default", {"owner": "tenant"}))
    repo.commit("tenant")
    inventory = write_inventory(tmp_path / "clusters.yml", {"cluster": {}})
    b.sim.reset_counters()
    sources = [{"repo": repo.url, "path": "deploy", "stack": "t-" + uid(), "kubeconfig": kubeconfig, "record_namespace": "default"}]
    run = run_playbook(inventory, {"stacksync_cache_dir": str(tmp_path / "cache"), "stacksync_sources": sources},
                       env=clean_env(K8S_AUTH_API_KEY=b.token))
    assert run.rc != 0, run.tail()
    assert f"getting credentials: exec: executable {plugin} failed with exit code 1" in run.output, run.tail()
    assert "you must log in first" in run.output
    assert list(b.sim.requests) == [], "requests were sent without credentials"
