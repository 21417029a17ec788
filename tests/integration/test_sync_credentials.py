"""Per-source credentials of role ``stacksync.k8s.sync`` (issue 20): a source that syncs with its own
kubeconfig, or impersonates its own account (Flux's ``serviceAccountName``), writes only what that
account's RBAC allows, while the host's (admin) credentials still serve the other sources.

Runs against the simulator (``make test``) and a real kube-apiserver (``make test-real``); both
implement impersonation (the simulator as kube-apiserver's filter: the ``impersonate`` verb is
checked, then the request is authorized as the impersonated account). The impersonation test probes
for it and skips on a server that ignores ``Impersonate-User`` (it would pass for the wrong reason).
"""

import time
import uuid

import pytest

try:
    from .test_sync_helpers import GitRepo, configmap, run_playbook, write_inventory
except ImportError:  # rootdir-relative import (tests/integration is not a package)
    from test_sync_helpers import GitRepo, configmap, run_playbook, write_inventory

RBAC = "/apis/rbac.authorization.k8s.io/v1"
STACK_LABEL = "stacksync.io/stack"


def uid():
    return uuid.uuid4().hex[:8]


def cm_path(ns, name):
    return f"/api/v1/namespaces/{ns}/configmaps/{name}"


def live(http, path):
    """The object at ``path`` (None when absent)."""
    status, body, _ = http.get(path)
    assert status in (200, 404), (status, body)
    return body if status == 200 else None


def create(http, path, obj):
    status, body, _ = http.request("POST", path, obj)
    assert status == 201, (status, body)


def tenant_rbac(http, ns, subject):
    """A Role in ``ns`` for the tenant: its stack's objects (ConfigMaps) and its record (ConfigMap,
    Secret, Lease), bound to ``subject``. Nothing anywhere else."""
    rules = [
        {"apiGroups": [""], "resources": ["configmaps", "secrets"], "verbs": ["*"]},
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["*"]},
    ]
    create(http, f"{RBAC}/namespaces/{ns}/roles",
           {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "tenant"}, "rules": rules})
    create(http, f"{RBAC}/namespaces/{ns}/rolebindings",
           {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "tenant"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "tenant"},
            "subjects": [subject]})


def wait_allowed(probe, timeout=15.0):
    """Wait until ``probe()`` (an HTTP status) is 200: RBAC caches of a real server catch up."""
    deadline = time.monotonic() + timeout
    while True:
        status = probe()
        if status == 200:
            return
        assert time.monotonic() < deadline, f"RBAC grant not effective after {timeout}s (HTTP {status})"
        time.sleep(0.3)


class Tenancy:
    """Namespaces ``tenant-*`` (the tenant may write there) and ``other-*`` (it may not), two git
    sources (the tenant's and the platform's) and an inventory with the admin kubeconfig."""

    def __init__(self, kube, tmp_path):
        self.kube = kube
        self.http = kube.http
        self.tenant_ns = "tenant-" + uid()
        self.other_ns = "other-" + uid()
        for ns in (self.tenant_ns, self.other_ns):
            create(self.http, "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        self.tenant_stack = "tenant-" + uid()
        self.platform_stack = "platform-" + uid()
        self.tenant_repo = GitRepo(tmp_path / "tenant")
        self.tenant_repo.write("deploy/t1.yml", configmap("t1", self.tenant_ns, {"owner": "tenant"}))
        self.tenant_repo.commit("tenant: t1")
        self.platform_repo = GitRepo(tmp_path / "platform")
        self.platform_repo.write("deploy/p1.yml", configmap("p1", self.other_ns, {"owner": "platform"}))
        self.platform_repo.commit("platform: p1")
        self.inventory = write_inventory(tmp_path / "clusters.yml", {"cluster": {"stacksync_kubeconfig": kube.kubeconfig}})
        self.cache = str(tmp_path / "cache")

    def sources(self, tenant_auth):
        return [
            dict({"repo": self.tenant_repo.url, "path": "deploy", "stack": self.tenant_stack,
                  "record_namespace": self.tenant_ns}, **tenant_auth),
            {"repo": self.platform_repo.url, "path": "deploy", "stack": self.platform_stack,
             "record_namespace": self.other_ns},
        ]

    def sync(self, tenant_auth):
        return run_playbook(self.inventory, {"stacksync_cache_dir": self.cache, "stacksync_sources": self.sources(tenant_auth)})

    def cleanup(self):
        for ns in (self.tenant_ns, self.other_ns):
            self.http.request("DELETE", "/api/v1/namespaces/" + ns)

    def check(self, tenant_auth):
        """The tenant's source writes in its namespace, cannot write in the other, and the failed
        apply prunes nothing; the platform source (host credentials) is applied either way."""
        run = self.sync(tenant_auth)
        assert run.rc == 0, run.tail()
        t1 = live(self.http, cm_path(self.tenant_ns, "t1"))
        assert t1 and t1["metadata"]["labels"][STACK_LABEL] == self.tenant_stack
        assert live(self.http, cm_path(self.tenant_ns, "stacksync-" + self.tenant_stack)) is not None, "record in the tenant's namespace"
        assert live(self.http, cm_path(self.other_ns, "p1")) is not None

        # The tenant's repo now declares an object in a namespace its account may not write to.
        self.tenant_repo.write("deploy/escape.yml", configmap("escape", self.other_ns, {"owner": "tenant"}))
        self.tenant_repo.remove("deploy/t1.yml")
        self.tenant_repo.commit("tenant: escape into another namespace, drop t1")
        self.platform_repo.write("deploy/p2.yml", configmap("p2", self.other_ns, {"owner": "platform"}))
        self.platform_repo.commit("platform: p2")
        run = self.sync(tenant_auth)
        assert run.rc != 0, run.tail()
        assert run.recap["cluster"]["failed"] == 1, run.tail()
        assert "forbidden" in run.output.lower(), run.tail()
        assert live(self.http, cm_path(self.other_ns, "escape")) is None, "the tenant wrote outside its RBAC"
        assert live(self.http, cm_path(self.tenant_ns, "t1")) is not None, "pruned although an apply failed"
        assert live(self.http, cm_path(self.other_ns, "p2")) is not None, "the platform source was not applied"
        return run


@pytest.fixture
def tenancy(kube, tmp_path):
    env = Tenancy(kube, tmp_path)
    try:
        yield env
    finally:
        env.cleanup()


def test_source_with_its_own_kubeconfig_writes_only_what_its_account_may(kube, tenancy):
    if not kube.limited_kubeconfig:
        pytest.skip("no limited kubeconfig for this cluster (STACKSYNC_TEST_LIMITED_KUBECONFIG)")
    tenant_rbac(tenancy.http, tenancy.tenant_ns, {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "limited"})
    limited = kube.limited_http()
    wait_allowed(lambda: limited.get(f"/api/v1/namespaces/{tenancy.tenant_ns}/configmaps")[0])
    tenancy.check({"kubeconfig": kube.limited_kubeconfig})


def test_source_impersonating_its_service_account_writes_only_what_it_may(kube, tenancy):
    account = f"system:serviceaccount:{tenancy.tenant_ns}:deployer"
    http = tenancy.http
    # A server that ignores Impersonate-User would serve this as the admin: 200 instead of 403.
    status = http.request("GET", f"/api/v1/namespaces/{tenancy.other_ns}/configmaps", headers={"Impersonate-User": account})[0]
    if status == 200:
        pytest.skip("this API server does not implement user impersonation (it ignores Impersonate-User)")
    assert status == 403, status
    tenant_rbac(http, tenancy.tenant_ns, {"kind": "ServiceAccount", "name": "deployer", "namespace": tenancy.tenant_ns})
    wait_allowed(lambda: http.request("GET", f"/api/v1/namespaces/{tenancy.tenant_ns}/configmaps",
                                      headers={"Impersonate-User": account})[0])
    run = tenancy.check({"impersonate_user": account})
    assert account in run.output, "the refusal names the impersonated account"
