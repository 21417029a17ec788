"""The kubernetes Python client's DynamicClient against the cluster under test."""

import secrets

import pytest

kubernetes = pytest.importorskip("kubernetes")
from kubernetes.dynamic import DynamicClient  # noqa: E402
from kubernetes.dynamic.exceptions import ConflictError, NotFoundError  # noqa: E402


@pytest.fixture(scope="module")
def dyn(kube):
    """A DynamicClient built from the cluster's kubeconfig."""
    api = kubernetes.config.new_client_from_config(config_file=kube.kubeconfig)
    client = DynamicClient(api)
    yield client
    api.close()


@pytest.fixture
def namespace(dyn):
    """A fresh namespace, deleted afterwards."""
    name = f"dyn-{secrets.token_hex(3)}"
    dyn.resources.get(api_version="v1", kind="Namespace").create(body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    yield name
    dyn.resources.get(api_version="v1", kind="Namespace").delete(name=name)


def test_discovery(dyn):
    cms = dyn.resources.get(api_version="v1", kind="ConfigMap")
    assert cms.namespaced and cms.name == "configmaps" and "cm" in cms.short_names
    crb = dyn.resources.get(api_version="rbac.authorization.k8s.io/v1", kind="ClusterRoleBinding")
    assert not crb.namespaced
    deploy = dyn.resources.get(api_version="apps/v1", kind="Deployment")
    assert deploy.subresources["status"] is not None


def test_crud_selectors_and_apply(dyn, namespace):
    cms = dyn.resources.get(api_version="v1", kind="ConfigMap")
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "labels": {"stack": "s"}}, "data": {"k": "v"}}
    created = cms.create(body=body, namespace=namespace)
    assert created.metadata.name == "a" and created.metadata.resourceVersion
    cms.create(body={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b", "labels": {"stack": "other"}}}, namespace=namespace)
    got = cms.get(name="a", namespace=namespace)
    assert got.data.k == "v"
    listed = cms.get(namespace=namespace, label_selector="stack=s")
    assert [i.metadata.name for i in listed.items] == ["a"]
    everywhere = cms.get(label_selector="stack in (s,other)", field_selector=f"metadata.namespace={namespace}")
    assert sorted(i.metadata.name for i in everywhere.items) == ["a", "b"]
    with pytest.raises(ConflictError):
        cms.create(body=body, namespace=namespace)

    applied = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": namespace}, "data": {"x": "1"}}
    result = cms.server_side_apply(body=applied, name="c", namespace=namespace, field_manager="stacksync")
    assert result.data.x == "1" and result.metadata.managedFields[0].manager == "stacksync"
    patched = cms.patch(body={"data": {"x": "2"}}, name="c", namespace=namespace, content_type="application/merge-patch+json")
    assert patched.data.x == "2"
    with pytest.raises(ConflictError):
        cms.server_side_apply(body=applied, name="c", namespace=namespace, field_manager="stacksync")
    forced = cms.server_side_apply(body=applied, name="c", namespace=namespace, field_manager="stacksync", force_conflicts=True)
    assert forced.data.x == "1"

    cms.delete(name="a", namespace=namespace)
    with pytest.raises(NotFoundError):
        cms.get(name="a", namespace=namespace)


def test_deployment_apply_and_children(dyn, namespace):
    deploys = dyn.resources.get(api_version="apps/v1", kind="Deployment")
    manifest = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": namespace, "labels": {"stack": "s"}},
                "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                         "template": {"metadata": {"labels": {"app": "web", "stack": "s"}}, "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}}
    dep = deploys.server_side_apply(body=manifest, name="web", namespace=namespace, field_manager="stacksync")
    assert dep.metadata.generation == 1
    rs = dyn.resources.get(api_version="apps/v1", kind="ReplicaSet")
    import time
    deadline = time.monotonic() + 30
    while not rs.get(namespace=namespace, label_selector="stack=s").items and time.monotonic() < deadline:
        time.sleep(0.1)
    child = rs.get(namespace=namespace, label_selector="stack=s").items[0]
    assert child.metadata.ownerReferences[0].uid == dep.metadata.uid
    deploys.delete(name="web", namespace=namespace, body={"propagationPolicy": "Background"})
