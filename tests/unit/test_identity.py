import pytest
from ansible_collections.stacksync.k8s.plugins.module_utils.discovery import ResourceInfo
from ansible_collections.stacksync.k8s.plugins.module_utils.identity import (
    ObjectId,
    group_kind_str,
    group_of,
    parse_group_kind,
    split_api_version,
)
from ansible_collections.stacksync.k8s.plugins.module_utils.objects import resolve_identity


@pytest.mark.parametrize(
    ("api_version", "expected"),
    [("v1", ("", "v1")), ("apps/v1", ("apps", "v1")), ("apps/v1beta1", ("apps", "v1beta1")), ("example.com/v1alpha1", ("example.com", "v1alpha1"))],
)
def test_split_api_version(api_version, expected):
    assert split_api_version(api_version) == expected


@pytest.mark.parametrize("bad", [None, "", 3, ["v1"]])
def test_split_api_version_rejects_non_strings(bad):
    with pytest.raises(ValueError, match="apiVersion"):
        split_api_version(bad)


def test_identity_uses_group_not_version():
    v1 = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "prod"}}
    beta = {"apiVersion": "apps/v1beta1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "prod"}}
    info_v1 = ResourceInfo("apps", "v1", "Deployment", "deployments", True, ())
    info_beta = ResourceInfo("apps", "v1beta1", "Deployment", "deployments", True, ())
    assert resolve_identity(v1, info_v1, "default")[0] == resolve_identity(beta, info_beta, "default")[0] == ObjectId(
        "apps", "Deployment", "prod", "web")
    assert group_of("v1") == ""


def test_scope_comes_from_discovery_not_the_manifest():
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "prod", "namespace": "stray"}}
    oid, warning = resolve_identity(ns, ResourceInfo("", "v1", "Namespace", "namespaces", False, ()), "default")
    assert oid == ObjectId("", "Namespace", "", "prod") and "cluster-scoped" in warning
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    assert resolve_identity(cm, ResourceInfo("", "v1", "ConfigMap", "configmaps", True, ()), "y")[0].namespace == "y"


def test_str_and_group_kind_round_trip():
    oid = ObjectId("apps", "Deployment", "prod", "web")
    assert str(oid) == "Deployment.apps prod/web"
    assert str(ObjectId("", "Namespace", "", "prod")) == "Namespace prod"
    assert group_kind_str("apps", "Deployment") == "Deployment.apps"
    assert group_kind_str("", "ConfigMap") == "ConfigMap"
    assert parse_group_kind("Deployment.apps") == ("apps", "Deployment")
    assert parse_group_kind("Widget.example.com") == ("example.com", "Widget")
    assert parse_group_kind("ConfigMap") == ("", "ConfigMap")
